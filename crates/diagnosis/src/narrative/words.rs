//! The words every finding shares, a leaf of `narrative` that imports nothing of the rules:
//! the number formats of a sentence (`count`, `num`, `fmt_duration`, the confidence level and
//! an interval), the constructors of a [`Finding`] (`finding`, `with_levers`, `failure`), and
//! the words of typed facts that several rules' findings and `narrative` name alike (a
//! bottleneck's label, a stack frame, an exception, a startup step, how full the pools are).
//!
//! The rule files word their own findings with these, and the rest of `narrative` with them
//! too: a rule names its facts and its sentence, this file only formats and assembles. Being a
//! leaf, it can be shared by both sides without a module circle.

use crate::evidence::pools::{PoolKind, PoolRoom};
use crate::report::{
    Bottleneck, Confidence, Figure, Finding, FindingKind, Lever, Rate, SourceRange, StartupStep,
    Unit,
};
use crate::thresholds as th;
use sglang_log::Frame;

/// The confidence level as people read it: `95%`.
pub fn confidence_pct() -> String {
    format!("{:.0}%", th::CONFIDENCE * 100.0)
}

/// `7087 s` → `1.97 h`; short spans stay in seconds.
pub fn fmt_duration(s: f64) -> String {
    if !s.is_finite() {
        "?".into()
    } else if s >= 3600.0 {
        format!("{:.2} h", s / 3600.0)
    } else if s >= 120.0 {
        format!("{:.1} min", s / 60.0)
    } else {
        format!("{s:.0} s")
    }
}

/// `1,648` style thousands separators for counts in sentences.
pub fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A share (fraction 0-1) as a whole percentage, but one just under 100% keeps a decimal
/// rounded down (99.6% is not 100%).
pub fn share_pct(fraction: f64) -> String {
    let p = fraction * 100.0;
    if p > 99.0 && p < 100.0 {
        // a share just under all is not all: 99.6% is not rounded up to 100%
        format!("{:.1}%", (p * 10.0).floor() / 10.0)
    } else {
        format!("{p:.0}%")
    }
}

/// A number with `digits` decimals, or `?` when unknown or not finite (never `NaN`).
pub fn num(v: Option<f64>, digits: usize) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{x:.digits$}"),
        _ => "?".into(),
    }
}

/// `(95% interval 0.132-0.150)`-style interval words, empty without an interval.
pub fn interval(r: &Rate, digits: usize) -> String {
    match (r.low, r.high) {
        (Some(l), Some(h)) => format!("{} interval {l:.digits$}-{h:.digits$}", confidence_pct()),
        (Some(l), None) => format!("{} interval from {l:.digits$}", confidence_pct()),
        _ => String::new(),
    }
}

/// `f` with the settings it says to change.
pub(crate) fn with_levers(mut f: Finding, levers: &[Lever]) -> Finding {
    f.levers = levers.to_vec();
    f
}

/// A finding without levers (add them with [`with_levers`]).
pub(crate) fn finding(
    kind: FindingKind,
    title: impl Into<String>,
    detail: impl Into<String>,
    figures: Vec<Figure>,
    evidence: Vec<SourceRange>,
    confidence: Confidence,
) -> Finding {
    Finding {
        kind,
        title: title.into(),
        detail: detail.into(),
        figures,
        evidence,
        confidence,
        levers: Vec::new(),
    }
}

/// The finding of counted failure lines (the facts of `rules::watchdog` and the rules that
/// share them): `detail` then the first line's text, the line count as its one figure, the
/// first line as its evidence, high confidence.
pub(crate) fn failure(
    lines: u64,
    first_text: &str,
    first: Option<&SourceRange>,
    kind: FindingKind,
    title: &str,
    detail: &str,
) -> Finding {
    finding(
        kind,
        title,
        format!("{detail} First: {first_text}"),
        vec![Figure::new(
            "failure lines (all ranks)",
            lines as f64,
            Unit::Lines,
        )],
        first.cloned().into_iter().collect(),
        Confidence::High,
    )
}

/// `function (file:line)`.
pub fn frame_words(f: &Frame) -> String {
    match f.line {
        Some(l) => format!("{} ({}:{l})", f.function, short_path(&f.file)),
        None => format!("{} ({})", f.function, short_path(&f.file)),
    }
}

/// ` in function (file:line)` for a frame, empty without one: where a failure happened, as
/// the findings of an exception or an out-of-memory error say it.
pub fn in_frame(f: Option<&Frame>) -> String {
    f.map(|fr| format!(" in {}", frame_words(fr)))
        .unwrap_or_default()
}

/// A file path from its `sglang/` directory on (the rest is the machine's).
fn short_path(p: &str) -> &str {
    p.rfind("sglang/").map_or(p, |i| &p[i..])
}

/// A startup step in words.
pub fn step_words(s: StartupStep) -> &'static str {
    match s {
        StartupStep::Launched => "the server arguments were printed",
        StartupStep::WeightsLoaded => "the weights loaded",
        StartupStep::KvPoolAllocated => "the KV pool was allocated",
        StartupStep::CapturingGraphs => "CUDA graph capture began",
        StartupStep::CudaGraphsCaptured => "the CUDA graphs were captured",
        StartupStep::Serving => "the server was ready",
    }
}

/// An exception in words: `Type: message`, its type alone, or a traceback cut before it.
pub(crate) fn exception_words(ty: Option<&str>, msg: Option<&str>) -> String {
    match (ty, msg) {
        (Some(t), Some(m)) => format!("{t}: {m}"),
        (Some(t), None) => t.to_string(),
        _ => "a traceback cut before its exception line".to_string(),
    }
}

/// How full the pools are, as a clause after a main one: " and every pool the log reports has
/// room (…)" only when [`PoolRoom::Room`]; otherwise the fullest pool and its usage, or that
/// the log prints no usage.
pub(crate) fn pool_room_clause(room: &PoolRoom) -> String {
    match room {
        PoolRoom::Room {
            fullest,
            pool: PoolKind::Kv,
        } => {
            format!(" and the KV cache has room (fullest pool at {fullest:.2}, 90th percentile)")
        }
        PoolRoom::Room { fullest, pool } => format!(
            " and every pool has room (the fullest, the {}, at {fullest:.2}, 90th percentile)",
            pool_name(*pool)
        ),
        PoolRoom::Tight(p) => format!(
            ", with the {} at {:.2} (90th percentile; median {:.2})",
            pool_name(p.pool),
            p.p90,
            p.median
        ),
        PoolRoom::Unknown => {
            ", and the log prints no pool usage (whether the KV cache has room is unknown)"
                .to_string()
        }
    }
}

/// The name of a pool in prose.
fn pool_name(p: PoolKind) -> &'static str {
    match p {
        PoolKind::Kv => "KV pool (token usage)",
        PoolKind::Swa => "sliding-window (SWA) pool",
        PoolKind::Mamba => "mamba state slots",
    }
}

/// A short name for a bottleneck.
pub fn bottleneck_label(b: Bottleneck) -> &'static str {
    match b {
        Bottleneck::KvCacheBound => "KV-cache bound",
        Bottleneck::RunningCapBound => "running-request cap bound",
        Bottleneck::PrefillBound => "prefill bound",
        Bottleneck::SchedulerConservative => "scheduler too conservative",
        Bottleneck::AdmissionHeld => "admission held between prefill passes",
        Bottleneck::PdTransferBound => "PD transfer / pre-allocation bound",
        Bottleneck::ClientBound => "client too slow / not enough load",
        Bottleneck::Stall => "stall",
        Bottleneck::DecodeComputeBound => "decode compute bound",
        Bottleneck::PrefillComputeBound => "prefill compute bound",
        Bottleneck::Inconclusive => "inconclusive",
        Bottleneck::NoSchedulerLines => "no SGLang scheduler lines",
        Bottleneck::OutOfMemory => "out of memory",
        Bottleneck::SchedulerCrashed => "scheduler crashed",
        Bottleneck::StartupIncomplete => "startup never finished",
        Bottleneck::StartupOnly => "startup lines only",
        Bottleneck::RequestsRejected => "requests rejected",
        Bottleneck::KvTransferFailed => "KV transfers failed",
        Bottleneck::Drain => "only the drain of a run",
    }
}
