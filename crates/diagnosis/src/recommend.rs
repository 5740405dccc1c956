//! What to change, as typed plans: changes that keep outputs as they are (not fp8 KV, not a
//! `max_tokens` cap) before those that alter them, each group with a gain first, by expected
//! gain; advice not to change something last. Plans match on
//! `kv_capacity::Change` and the bottleneck, never on labels; `narrative` words them.

use kv_capacity::{Change, Feasibility};

use crate::client_view::lifetime_misleads;
use crate::report::{
    Bottleneck, CapacityModel, ClientSummary, FindingKind, Lever, Projection, ProjectionRow,
    RecommendationKind, RetractionSummary,
};
use crate::thresholds as th;

/// How loaded the primary scheduler is over its steady span.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Load {
    /// Median running requests.
    pub running_median: f64,
    /// Median token usage (fraction of the KV pool).
    pub usage_median: f64,
    /// 90th percentile token usage (fraction).
    pub usage_p90: Option<f64>,
    /// Median token usage per running request over the lines that print both (fraction per
    /// request): the pool each request holds, read on one line, not from two medians of
    /// different lines.
    pub usage_per_request: Option<f64>,
    /// `max_running_requests` per DP rank, when known.
    pub max_running_requests: Option<u64>,
    /// The pool share the longer running requests hold (fraction of the KV pool per request;
    /// `SchedulerView::pool_per_long_request`): what the headroom is counted in.
    pub pool_per_long_request: Option<f64>,
    /// The mamba state slots one request holds (fraction of the slots per request), for a
    /// hybrid SSM model.
    pub mamba_per_request: Option<f64>,
    /// No cap is stated, and decode lines print `accept len`: with speculative decoding SGLang
    /// sets `max_running_requests` to [`th::SPEC_DEFAULT_MAX_RUNNING`] unless it is given
    /// (`server_args.py`), which the headroom then assumes and says.
    pub speculative_default_cap: bool,
    /// The span judged is a ramp, or too short ([`th::HEADROOM_MIN_SPAN_S`]) to say how many
    /// more requests would fit: no headroom figure.
    pub too_short: bool,
}

/// Which limit stops more requests from running at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// The running-request cap.
    RunningCap,
    /// SGLang's default cap with speculative decoding, assumed (no cap is stated).
    SpeculativeDefaultCap,
    /// The KV cache at [`th::HEADROOM_USAGE`].
    KvCache,
    /// The mamba state slots at [`th::HEADROOM_USAGE`].
    MambaSlots,
}

impl Load {
    /// Extra requests that could run at once before the first limit stops them, and which
    /// limit that is: the running cap (or SGLang's speculative default, assumed), the KV pool
    /// at [`th::HEADROOM_USAGE`] counted at the longer requests' share
    /// ([`Load::pool_per_long_request`], else today's median usage), the mamba state slots at
    /// the same mark. `None` when the span is too short or a ramp, or when the KV pool's
    /// share per request is unknown (the cap alone may be far above what the pool holds).
    pub fn headroom(&self) -> Option<(f64, Limit)> {
        if self.too_short {
            return None;
        }
        let kv = match self.pool_per_long_request.or(self.usage_per_request) {
            Some(per) if per > 0.0 => Some(th::HEADROOM_USAGE / per - self.running_median),
            _ => (self.usage_median > 0.0)
                .then(|| self.running_median * (th::HEADROOM_USAGE / self.usage_median - 1.0)),
        };
        let mamba = self
            .mamba_per_request
            .map(|per| th::HEADROOM_USAGE / per - self.running_median);
        let cap = match (self.max_running_requests, self.speculative_default_cap) {
            (Some(c), _) => Some((c as f64 - self.running_median, Limit::RunningCap)),
            (None, true) => Some((
                th::SPEC_DEFAULT_MAX_RUNNING as f64 - self.running_median,
                Limit::SpeculativeDefaultCap,
            )),
            (None, false) => None,
        };
        let kv = kv?;
        [
            Some((kv, Limit::KvCache)),
            mamba.map(|m| (m, Limit::MambaSlots)),
            cap,
        ]
        .into_iter()
        .flatten()
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(n, l)| (n.max(0.0), l))
    }

    /// The most extra requests the running cap allows (stated, or SGLang's speculative
    /// default, assumed), when the span is too short or a ramp for the requests' KV
    /// ([`Load::headroom`] is `None`): the pools can only stop them sooner. Not the mamba
    /// slots: their usage per request read on a ramp is no share each request holds (the
    /// prefix cache's locked mamba states count as used: real-3/009 holds mamba usage 0.80 at
    /// 10, 26 and 40 running).
    pub fn cap_headroom(&self) -> Option<(f64, Limit)> {
        let cap = match (self.max_running_requests, self.speculative_default_cap) {
            (Some(c), _) => Some((c as f64 - self.running_median, Limit::RunningCap)),
            (None, true) => Some((
                th::SPEC_DEFAULT_MAX_RUNNING as f64 - self.running_median,
                Limit::SpeculativeDefaultCap,
            )),
            (None, false) => None,
        };
        cap.map(|(n, l)| (n.max(0.0), l))
    }
}

/// A what-if row worth applying, with its projection relative to today's row.
#[derive(Clone, Debug, PartialEq)]
pub struct Apply {
    /// The projected row (gain relative to today's row, per GPU for a larger TP).
    pub row: ProjectionRow,
    /// Its pool (tokens) and change (percent).
    pub pool: Option<(u64, f64)>,
    /// Free GPU memory per GPU after the change (GiB).
    pub free_after_gib: Option<f64>,
    /// Today's row: projected tok/s and concurrency.
    pub base: (f64, f64),
    /// R² of the step-time fit the gain comes from: below
    /// [`th::MIN_CEILING_FIT_R2`] the gain is a rough figure, and said so.
    pub fit_r2: f64,
    /// The measured steady rate (tok/s), against which the gain is read.
    pub measured: Option<f64>,
    /// The client's completion rate now (req/s: its steady-window rate, else the rate the
    /// server's tokens imply) and the requests left, for the gain in req/s and the ETA.
    pub user: Option<(f64, Option<u64>)>,
}

/// A fraction that would not fit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DoNotRaise {
    /// The first fraction above today's that would not fit.
    pub to: f64,
    /// The memory check of that fraction (GiB per GPU).
    pub check: Option<kv_capacity::FeasibilityCheck>,
    /// Extra GiB per GPU of the pool.
    pub extra_gib_per_gpu: f64,
    /// The largest fraction above today's that likely fits, when one does.
    pub edge: Option<f64>,
    /// The fractions between `edge` and `to` whose outcome the evidence cannot tell (the
    /// lowest and the highest), when there are any: never forbidden.
    pub uncertain: Option<(f64, f64)>,
}

/// What filling today's pool would give (below the pool).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fill {
    /// Requests the pool could hold decoding at once.
    pub concurrency: f64,
    /// Projected tok/s.
    pub tok_per_s: f64,
    /// Gain over the fit's throughput now (percent).
    pub gain_pct: f64,
    /// Beyond the observed batch sizes.
    pub extrapolated: bool,
    /// Observed mean running requests, and the fit's tok/s now.
    pub now: (f64, f64),
}

/// What else the running-cap advice knows: the benchmark client's own limit and the CUDA
/// graphs' largest batch.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CapAdvice {
    /// The benchmark client's `--max-concurrency` and the server's cap over every DP rank
    /// (requests), when the log holds a benchmark summary and the cap is known.
    pub client: Option<ClientLimit>,
    /// The largest decode batch run as a CUDA graph (`cuda_graph_max_bs`, requests per rank),
    /// when it is not above today's per-rank cap: a higher cap runs eagerly beyond it.
    pub graph_max_bs: Option<u64>,
    /// The graph sizes were listed explicitly (`--cuda-graph-bs`): a larger batch needs a
    /// larger size in the list, not `--cuda-graph-max-bs`.
    pub graph_sizes_listed: bool,
    /// Nothing waits at the cap (the steady queue's peak is 0): whether more demand exists is
    /// not in the log, so the advice is conditional on a client that sends more.
    pub nothing_waits: bool,
    /// The most requests waiting on a steady decode line with the batch at the cap, over every
    /// scheduler (requests per rank): what a higher cap admits at once from today's load, if
    /// the pool holds them.
    pub queued_peak: Option<u64>,
    /// The log has several schedulers (DP ranks): the queue peak is per rank.
    pub per_rank: bool,
}

/// The benchmark client's limit against the server's cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientLimit {
    /// The client's `--max-concurrency` (requests).
    pub limit: u64,
    /// The server's cap over every DP rank (requests).
    pub server_total: u64,
    /// `max_running_requests` per DP rank (requests).
    pub per_rank: u64,
    /// DP ranks.
    pub dp_ranks: u32,
}

/// Whether an fp8 KV cache is a lever for more KV slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fp8Kv {
    /// It is: a 16-bit cache on hardware with an fp8 KV cache (about twice the tokens).
    Lever,
    /// The KV cache is already 8-bit (`kv_cache_dtype` fp8 in the server's arguments, or the
    /// model runner's `Using KV cache dtype: torch.float8_…`): nothing to gain there.
    AlreadySet,
    /// An Ascend NPU build: SGLang's NPU KV cache has no fp8.
    NotOnNpu,
}

/// One recommendation, as data.
#[derive(Clone, Debug, PartialEq)]
pub enum Plan {
    /// Apply a what-if change.
    Apply(Apply),
    /// Do not raise the fraction this far.
    DoNotRaise(DoNotRaise),
    /// HiCache will not raise decode concurrency.
    HiCacheNoGain,
    /// More KV slots, without a what-if table to size them (no model config or memory figures).
    MoreKvSlots {
        /// The running cap holds the batch too: more slots only make room for a higher cap
        /// (they run no more requests by themselves).
        for_cap: bool,
        /// What the what-if table lacked, when that is one input the user can give.
        missing: Option<WhatIfMissing>,
        /// Whether an fp8 KV cache is a lever here.
        fp8_kv: Fp8Kv,
    },
    /// Raise conservativeness: the run retracted this many times.
    RaiseConservativeness(u64),
    /// Lower conservativeness, with what filling the pool would give.
    LowerConservativeness(Option<Fill>),
    /// Raise `--max-running-requests`, with what else binds at the cap.
    RaiseMaxRunning(CapAdvice),
    /// Raise the client's concurrency.
    RaiseClientConcurrency(Option<Load>),
    /// A PD decode node fed by the prefill side: look there.
    CheckPrefillSide(Option<Load>),
    /// Judge progress by the windowed rate.
    UseWindowedRate,
    /// Try DP attention: an MLA model's KV is held whole by each of this many TP ranks; with
    /// the DP size that holds the most requests when the model config sizes it.
    DpAttention(u32, Option<crate::report::DpAttentionSizing>),
    /// DP attention does not fit: at every DP size the attention weights would take the whole
    /// KV pool (the sizing says by how much).
    DpAttentionNoRoom(crate::report::DpAttentionSizing),
    /// Change a setting a finding names that no plan above covers.
    Change {
        /// The setting.
        lever: Lever,
        /// The finding that names it.
        finding: FindingKind,
    },
}

/// The one input a what-if table lacked (`crate::error::WhatIfUnavailable`), named so that a
/// recommendation asks for that input and not for others.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WhatIfMissing {
    /// The model's `config.json` (`--model-config`).
    ModelConfig,
    /// `mem_fraction_static` (no `server_args` line; `--server-info` states it).
    MemFraction,
    /// The pool size (no start-up lines; `--server-info` states it).
    PoolSize,
    /// The GPU's memory (`--gpu-snapshot`, or the log's `Load weight end` line).
    GpuMemory,
}

impl WhatIfMissing {
    /// The input missing, from why the table was not made; `None` when it was something else
    /// (a refused input).
    pub fn of(why: &crate::error::WhatIfUnavailable) -> Option<Self> {
        use crate::error::WhatIfUnavailable as W;
        match why {
            W::NoModelConfig => Some(Self::ModelConfig),
            W::NoMemFraction => Some(Self::MemFraction),
            W::NoPoolSize => Some(Self::PoolSize),
            W::NoGpuMemory => Some(Self::GpuMemory),
            W::Capacity(_) => None,
        }
    }
}

impl Plan {
    /// Its kind in the report.
    pub fn kind(&self) -> RecommendationKind {
        match self {
            Plan::Apply(a) => RecommendationKind::Apply {
                change: a.row.change,
            },
            Plan::DoNotRaise(d) => RecommendationKind::DoNotRaiseFraction { to: d.to },
            Plan::HiCacheNoGain => RecommendationKind::HiCacheNoGain,
            Plan::MoreKvSlots { .. } => RecommendationKind::MoreKvSlots,
            Plan::RaiseConservativeness(_) => RecommendationKind::RaiseConservativeness,
            Plan::LowerConservativeness(_) => RecommendationKind::LowerConservativeness,
            Plan::RaiseMaxRunning(_) => RecommendationKind::RaiseMaxRunningRequests,
            Plan::RaiseClientConcurrency(_) => RecommendationKind::RaiseClientConcurrency,
            Plan::CheckPrefillSide(_) => RecommendationKind::CheckPrefillSide,
            Plan::UseWindowedRate => RecommendationKind::UseWindowedRate,
            Plan::DpAttention(..) | Plan::DpAttentionNoRoom(_) => RecommendationKind::DpAttention,
            Plan::Change { lever, finding } => RecommendationKind::Change {
                lever: *lever,
                finding: *finding,
            },
        }
    }

    /// Expected gain in percent of throughput (for ordering).
    pub fn gain_pct(&self) -> Option<f64> {
        match self {
            Plan::Apply(a) => Some(a.row.gain_pct),
            Plan::LowerConservativeness(f) => f.map(|f| f.gain_pct),
            _ => None,
        }
    }
}

/// Whether a change costs output quality (fp8 KV changes numerics: for distillation data that is
/// output fidelity): such changes come after those that do not, whatever their gain.
pub fn costs_output_quality(c: Change) -> bool {
    matches!(c, Change::KvDtype { .. })
}

/// Which family of change a row makes (one recommendation per family).
fn family(c: Change) -> u8 {
    match c {
        Change::Current => 0,
        Change::Fraction { .. } => 1,
        Change::KvDtype { .. } => 2,
        Change::TpSize { .. } => 3,
    }
}

/// What the recommendations read.
#[derive(Clone, Copy)]
pub struct Input<'a> {
    /// The verdict.
    pub bottleneck: Bottleneck,
    /// The capacity model.
    pub capacity: Option<&'a CapacityModel>,
    /// What the capacity model's what-if table lacked, when it was not made.
    pub what_if_missing: Option<WhatIfMissing>,
    /// Whether an fp8 KV cache is a lever here (not on Ascend NPU builds, not when the cache
    /// is already 8-bit).
    pub fp8_kv: Fp8Kv,
    /// The step-time projection.
    pub projection: Option<&'a Projection>,
    /// The client's view.
    pub client: Option<&'a ClientSummary>,
    /// Retractions.
    pub retractions: &'a RetractionSummary,
    /// Re-prefilling the retracted requests took a material share of the time
    /// (`rules::retraction::Facts::material`): only then is admitting fewer requests advised.
    pub retraction_material: bool,
    /// The load of the primary scheduler.
    pub load: Option<Load>,
    /// Today's `mem_fraction_static`.
    pub mem_fraction_static: Option<f64>,
    /// The measured steady rate (tok/s).
    pub measured_tok_per_s: Option<f64>,
    /// The settings the findings name, with the finding that names each, in report order.
    pub levers: &'a [(Lever, FindingKind)],
    /// What else binds at the running cap.
    pub cap_advice: CapAdvice,
    /// A few long requests hold the full pool while nothing waits (`kv_cache_bound`): more KV
    /// slots or admission settings add no throughput; the finding names `max_tokens`.
    pub long_requests: bool,
    /// The scheduler behind the verdict is a PD decode node (its load comes from the prefill
    /// side).
    pub pd_decode: bool,
    /// An MLA model under TP of this many ranks without DP attention: every rank holds the
    /// latent KV of every running request.
    pub kv_replicated_by_tp: Option<u32>,
    /// DP attention sized for that layout, when the model config gives the weights.
    pub dp_attention: Option<&'a crate::report::DpAttentionSizing>,
}

fn kv_plans(
    cm: &CapacityModel,
    p: &Projection,
    fraction: Option<f64>,
    measured: Option<f64>,
    client: Option<&ClientSummary>,
    out: &mut Vec<Plan>,
) {
    let user = client.and_then(|c| {
        let now = crate::client_view::now_rate(c)?.value;
        (now > 0.0).then(|| (now, c.eta.as_ref().map(|e| e.remaining)))
    });
    let now = cm.what_if.rows.iter().find(|w| w.change == Change::Current);
    // Gains relative to the current row's projection (same formula, so like with like).
    let base = now
        .and_then(|w| p.rows.iter().find(|r| r.change == w.change))
        .map(|r| (r.tok_per_s, r.concurrency))
        .unwrap_or((p.current_tok_per_s, p.observed_mean_running));
    // A larger TP needs proportionally more GPUs, so its gain is counted per GPU.
    let gpu_factor = |c: Change| match c {
        Change::TpSize { to } => f64::from(to) / f64::from(cm.tp_size.max(1)),
        _ => 1.0,
    };
    let mut candidates: Vec<ProjectionRow> = p
        .rows
        .iter()
        .filter(|r| r.change != Change::Current)
        .map(|r| {
            let mut r = r.clone();
            r.gain_pct = (r.tok_per_s / gpu_factor(r.change) / base.0 - 1.0) * 100.0;
            r
        })
        // A change is offered when it fits with the margin (or takes no memory and its memory
        // is unknown); a larger TP needs more GPUs and is not a free change: it stays in the table.
        .filter(|r| !matches!(r.change, Change::TpSize { .. }))
        .filter(|r| {
            let w = cm.what_if.rows.iter().find(|w| w.change == r.change);
            r.feasibility == Some(Feasibility::Fits)
                || (r.feasibility.is_none() && w.is_some_and(|w| w.extra_gib_per_gpu <= 0.0))
        })
        .filter(|r| r.gain_pct > th::MIN_GAIN_PCT)
        // A KV plan gains by letting more requests decode at once: a change that lets fewer
        // (a smaller pool) gains only in a fit whose step time falls as the batch shrinks
        // below zero cost, which no decode step has (each reads the weights once): a fit
        // thrown by a reading it should not hold, never a lever.
        .filter(|r| r.concurrency > base.1)
        .collect();
    // Changes without a cost in output quality come first (fp8 KV changes numerics: for
    // distillation data that is output fidelity), then by gain.
    candidates.sort_by(|a, b| {
        costs_output_quality(a.change)
            .cmp(&costs_output_quality(b.change))
            .then(b.gain_pct.total_cmp(&a.gain_pct))
    });
    let mut seen = Vec::new();
    for r in candidates {
        if seen.contains(&family(r.change)) {
            continue;
        }
        seen.push(family(r.change));
        let w = cm.what_if.rows.iter().find(|w| w.change == r.change);
        out.push(Plan::Apply(Apply {
            pool: w.map(|w| (w.pool_tokens, w.change_pct)),
            free_after_gib: w
                .and_then(|w| w.feasibility.as_ref())
                .map(|f| f.free_after_gib),
            base,
            fit_r2: p.r2,
            measured,
            user,
            row: r,
        }));
    }
    // The first fraction above today's that would not fit: the usual first idea.
    let above = |to: f64| fraction.is_none_or(|f| to > f + 1e-9);
    let fraction_rows = || {
        cm.what_if
            .rows
            .iter()
            .filter(move |w| matches!(w.change, Change::Fraction { to } if above(to)))
    };
    let edge = fraction_rows()
        .take_while(|w| {
            w.feasibility
                .as_ref()
                .is_some_and(|f| f.verdict == Feasibility::Fits)
        })
        .last()
        .map(|w| w.mem_fraction_static);
    let uncertain: Vec<f64> = fraction_rows()
        .skip_while(|w| {
            w.feasibility
                .as_ref()
                .is_some_and(|f| f.verdict == Feasibility::Fits)
        })
        .take_while(|w| {
            w.feasibility
                .as_ref()
                .is_some_and(|f| f.verdict == Feasibility::Uncertain)
        })
        .map(|w| w.mem_fraction_static)
        .collect();
    let uncertain = uncertain
        .first()
        .zip(uncertain.last())
        .map(|(a, b)| (*a, *b));
    if let Some(bad) = fraction_rows().find(|w| {
        w.feasibility
            .as_ref()
            .is_some_and(|f| f.verdict == Feasibility::OomLikely)
    }) {
        out.push(Plan::DoNotRaise(DoNotRaise {
            to: bad.mem_fraction_static,
            check: bad.feasibility,
            extra_gib_per_gpu: bad.extra_gib_per_gpu,
            edge,
            uncertain,
        }));
    }
}

/// What filling today's pool would give, when admission lets fewer run than it holds.
/// What filling today's pool would give: the what-if table's "now" row (the pool's decode
/// concurrency at today's pool, `kv_capacity`) on the step-time fit, when it holds more
/// requests than the run decoded on average.
pub fn fill(cap: Option<&CapacityModel>, proj: Option<&Projection>) -> Option<Fill> {
    let (cm, p) = (cap?, proj?);
    let now = cm
        .what_if
        .rows
        .iter()
        .find(|w| w.change == Change::Current)?;
    let n = now.decode_concurrency?;
    let r = p.rows.iter().find(|r| r.change == Change::Current)?;
    (n > p.observed_mean_running).then(|| Fill {
        concurrency: n,
        tok_per_s: r.tok_per_s,
        gain_pct: (r.tok_per_s / p.current_tok_per_s - 1.0) * 100.0,
        extrapolated: r.extrapolated,
        now: (p.observed_mean_running, p.current_tok_per_s),
    })
}

/// The plans: those with a gain first, output-preserving changes before those that alter
/// outputs (fp8 KV), each by expected gain; those without a gain after, in the order made;
/// advice not to change something last.
pub fn plans(i: &Input<'_>) -> Vec<Plan> {
    let mut out = Vec::new();
    if i.bottleneck == Bottleneck::KvCacheBound && !i.long_requests {
        if let (Some(cm), Some(p)) = (i.capacity, i.projection) {
            kv_plans(
                cm,
                p,
                i.mem_fraction_static,
                i.measured_tok_per_s,
                i.client,
                &mut out,
            );
        }
        if let Some(tp) = i.kv_replicated_by_tp {
            match i.dp_attention {
                // sized: the DP size that holds the most requests, or none fits
                Some(s) if s.best().is_some() => out.push(Plan::DpAttention(tp, Some(s.clone()))),
                Some(s) => out.push(Plan::DpAttentionNoRoom(s.clone())),
                None => out.push(Plan::DpAttention(tp, None)),
            }
        }
        if i.capacity.is_some() {
            out.push(Plan::HiCacheNoGain);
        } else {
            out.push(Plan::MoreKvSlots {
                for_cap: false,
                missing: i.what_if_missing,
                fp8_kv: i.fp8_kv,
            });
        }
        // admitting fewer requests lowers throughput on a full pool: only for a material cost
        if i.retractions.events > 0 && i.retraction_material {
            out.push(Plan::RaiseConservativeness(i.retractions.events));
        }
    }
    match i.bottleneck {
        Bottleneck::SchedulerConservative => {
            out.push(Plan::LowerConservativeness(fill(i.capacity, i.projection)))
        }
        Bottleneck::RunningCapBound => {
            // the pool binds too: a higher cap needs more KV slots first (raising the cap alone
            // would run the pool out and retract), so those come before it
            let pool_binds = i
                .load
                .is_some_and(|l| l.usage_median >= th::CONSERVATIVE_USAGE);
            if !pool_binds {
                out.push(Plan::RaiseMaxRunning(i.cap_advice));
            }
            if pool_binds {
                match (i.capacity, i.projection) {
                    (Some(cm), Some(p)) => kv_plans(
                        cm,
                        p,
                        i.mem_fraction_static,
                        i.measured_tok_per_s,
                        i.client,
                        &mut out,
                    ),
                    _ => out.push(Plan::MoreKvSlots {
                        for_cap: true,
                        missing: i.what_if_missing,
                        fp8_kv: i.fp8_kv,
                    }),
                }
                out.push(Plan::RaiseMaxRunning(i.cap_advice));
            }
        }
        // at the cap with nothing waiting: the cap advice, conditional on a client with more
        Bottleneck::Inconclusive
            if i.cap_advice.nothing_waits
                && i.levers.iter().any(|&(l, k)| {
                    l == Lever::MaxRunningRequests && k == FindingKind::RunningCapBound
                }) =>
        {
            out.push(Plan::RaiseMaxRunning(i.cap_advice))
        }
        // Nothing runs (a PD prefill instance, an idle server): the batch model does not apply.
        Bottleneck::ClientBound if i.load.is_some_and(|l| l.running_median < 1.0) => {}
        Bottleneck::ClientBound if i.pd_decode => out.push(Plan::CheckPrefillSide(i.load)),
        Bottleneck::ClientBound => out.push(Plan::RaiseClientConcurrency(i.load)),
        _ => {}
    }
    if let Some(c) = i.client
        && c.printed_req_per_s.is_some()
        && lifetime_misleads(c)
    {
        out.push(Plan::UseWindowedRate);
    }
    // Every setting a finding names is among the recommendations: those the plans above do
    // not cover, once each, from the first finding that names it.
    for &(lever, finding) in i.levers {
        let covered = out.iter().any(|p| p.kind().levers().contains(&lever));
        if !covered {
            out.push(Plan::Change { lever, finding });
        }
    }
    // Changes that keep outputs as they are first (fp8 KV changes numerics, a max_tokens cap
    // cuts completions), those with a gain by gain, then those without in the order made;
    // then those that alter outputs, the same way; advice not to change something last.
    out.sort_by(|a, b| {
        let key = |p: &Plan| {
            let quality = match p {
                Plan::Apply(x) => costs_output_quality(x.row.change),
                Plan::Change { lever, .. } => *lever == Lever::MaxTokens,
                _ => false,
            };
            let dont = matches!(
                p,
                Plan::DoNotRaise(_) | Plan::HiCacheNoGain | Plan::DpAttentionNoRoom(_)
            );
            (dont, quality, p.gain_pct().is_none())
        };
        key(a).cmp(&key(b)).then(
            b.gain_pct()
                .unwrap_or(f64::NEG_INFINITY)
                .total_cmp(&a.gain_pct().unwrap_or(f64::NEG_INFINITY)),
        )
    });
    out
}
