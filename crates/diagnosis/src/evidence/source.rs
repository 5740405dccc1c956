//! Where evidence comes from: the input sources, a place in one (a [`Loc`]), what each
//! source's parse produced, and the part its server plays in PD disaggregation ([`PdRole`]).

use serde::Serialize;
use sglang_log::ParseStats;

#[cfg(doc)]
use super::{Evidence, EvidenceBuilder, runs};
use crate::report::InputKind;

/// Index of an input source (a log file) in [`Evidence::sources`].
pub type SourceId = usize;

/// Where a fact came from: a source and a 1-based line number in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Loc {
    /// Index into [`Evidence::sources`].
    pub source: SourceId,
    /// 1-based line number.
    pub line: u64,
}

/// One input log and what its parse produced.
#[derive(Clone, Debug, Serialize)]
pub struct SourceInfo {
    /// The name given by the caller (a path, or `-` for stdin).
    pub name: String,
    /// What it is (a log, or a live server's `/metrics` polls).
    pub kind: InputKind,
    /// Parse counts; `None` until [`EvidenceBuilder::finish_source`] is called.
    pub stats: Option<SourceStats>,
    /// The part its server plays in PD disaggregation: what the last of its own startup lines
    /// that names `disaggregation_mode` says (`server_args=ServerArgs(...)` or a launch
    /// command; the run diagnosed is the last one), or, when none names it, what its batch
    /// lines in every run show once the evidence is built (one role's PD fields only: see
    /// [`EvidenceBuilder::build`]); `None` for a server that is not disaggregated (`null`), or
    /// a log that shows neither role or both.
    pub pd_role: Option<PdRole>,
    /// Its lines open a server run: a startup line (`server_args`, `Load weight end`, ...:
    /// [`runs`]) comes before its first batch line. A rotated later part of a log does not;
    /// every node's or rank's log of one run does, and they overlap in time.
    pub opens_with_startup: bool,
}

/// The part a server plays in prefill/decode (PD) disaggregation: SGLang's
/// `--disaggregation-mode` (`server_args.py`; `null` when not disaggregated). A prefill
/// instance and a decode instance are two servers, each with its own KV pool, limits and
/// schedulers (SGLang `disaggregation/prefill.py`, `disaggregation/decode.py`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PdRole {
    /// `--disaggregation-mode prefill`: runs prefill and hands the KV cache over.
    Prefill,
    /// `--disaggregation-mode decode`: receives the KV cache and decodes.
    Decode,
}

impl PdRole {
    /// The role of a `disaggregation_mode` value as SGLang prints it (`'prefill'`, `decode`,
    /// quoted or not); `None` for `null` and anything else.
    pub fn from_arg(value: &str) -> Option<PdRole> {
        match value.trim().trim_matches(|c| c == '\'' || c == '"') {
            "prefill" => Some(PdRole::Prefill),
            "decode" => Some(PdRole::Decode),
            _ => None,
        }
    }
}

/// The counts of one parse, owned (see [`sglang_log::ParseStats`]).
#[derive(Clone, Debug, Default, Serialize)]
pub struct SourceStats {
    /// Lines read.
    pub lines: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Lines recognised as SGLang events (batch, retraction, startup, ...).
    pub events: u64,
    /// Prefill batch lines.
    pub prefill_lines: u64,
    /// Decode batch lines.
    pub decode_lines: u64,
    /// Lines that are not SGLang scheduler output (access logs, tracebacks, other programs).
    pub other_lines: u64,
    /// Lines that looked like SGLang output but could not be parsed.
    pub malformed_lines: u64,
    /// The first malformed lines: (line number, reason, excerpt).
    pub malformed: Vec<(u64, String, String)>,
    /// Lines cut at the line-length cap (also counted as malformed).
    pub long_lines: u64,
    /// Damaged batch lines: fragments that are not `key: value` (a paste that ate names or
    /// numbers, merged columns); their readable fields were used.
    pub damaged_lines: u64,
    /// The first damaged lines: (line number, reason, excerpt).
    pub damaged: Vec<(u64, String, String)>,
    /// Batch lines with a field set aside as impossible (NaN, infinite, negative, out of range).
    pub rejected_lines: u64,
    /// Fields set aside.
    pub rejected_fields: u64,
    /// The first fields set aside: (line number, key, value, why).
    pub rejected: Vec<(u64, String, String, String)>,
}

impl From<&ParseStats> for SourceStats {
    fn from(s: &ParseStats) -> Self {
        Self {
            lines: s.lines,
            bytes: s.bytes,
            events: s.events,
            prefill_lines: s.prefill_lines,
            decode_lines: s.decode_lines,
            other_lines: s.other_lines,
            malformed_lines: s.malformed_lines,
            malformed: s
                .malformed
                .iter()
                .map(|m| (m.line_no, m.reason.to_string(), m.excerpt.clone()))
                .collect(),
            long_lines: s.long_lines,
            damaged_lines: s.partial_batch_lines,
            damaged: s
                .partial
                .iter()
                .map(|m| (m.line_no, m.reason.to_string(), m.excerpt.clone()))
                .collect(),
            rejected_lines: s.rejected_lines,
            rejected_fields: s.rejected_fields,
            rejected: s
                .rejected
                .iter()
                .map(|r| {
                    (
                        r.line_no,
                        r.key.clone(),
                        r.value.clone(),
                        r.reason.to_string(),
                    )
                })
                .collect(),
        }
    }
}
