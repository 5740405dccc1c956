//! The diagnosis rules, one file each, written like clippy lints: every file starts with what
//! it detects, why it matters, the evidence it needs, what to change and the SGLang source it
//! follows, exposes pure functions from typed evidence to typed facts, carries its own
//! `check(lines, expected)` tests on real log lines, and words its own finding beside its
//! check, as a clippy lint owns its message.
//!
//! Rules never read text the project wrote: `check` returns facts (numbers, line ranges,
//! enums) and decides; the words only put those facts into sentences and figures, with the
//! shared formatting of `crate::narrative::words` (numbers, the finding's constructor), a leaf
//! that imports nothing of the rules. Which verdict wins when several rules hold is decided in
//! one place, `crate::verdict`.
//!
//! Three kinds of rule, by what they read and how their words are called:
//! - *verdict rules* judge one scheduler's steady span ([`SchedulerView`]) and name its
//!   bottleneck: [`pd_transfer`], [`kv_cache_bound`], [`running_cap`], [`prefill_limit`],
//!   [`conservative_admission`], [`held_admission`], [`drain`], [`client_bound`] (and the
//!   overrides [`decode_compute`], [`prefill_compute`]); each words its verdict's finding in a
//!   `finding` function ([`VerdictWords`] for those `crate::narrative::bottleneck` picks by the
//!   verdict's reason, which adds the figures every verdict shares), and [`admission`] words
//!   its model's figures;
//! - *finding rules* read the whole [`Input`]: the events that end or block serving ([`oom`],
//!   [`rejected_requests`], [`scheduler_exception`], [`watchdog`], [`startup_incomplete`],
//!   [`kv_transfer`]) and the rest (stalls, retractions, graphs, …); each implements [`Rule`]
//!   and is listed in [`FINDING_RULES`], the registry the findings stage runs in one loop;
//! - *client-side rules* read the client's view or a benchmark run ([`client_gap`],
//!   [`littles_law`], the `bench_*` rules) and word theirs in a `finding` function the client
//!   stage calls; the *fleet rule* [`fleet_imbalance`] compares the instances of a fleet (and
//!   each instance's DP ranks) read from Prometheus, after each is diagnosed (`crate::fleet`).

use crate::evidence::view::SchedulerView;
use crate::evidence::{Evidence, Loc, SchedulerTimeline};
use crate::report::{
    CapacitySummary, Confidence, Figure, Finding, FindingKind, Lever, RetractionSummary,
    SourceRange,
};

pub mod admission;
pub mod bench_concurrency_limit;
pub mod bench_failures;
pub mod bench_not_streamed;
pub mod bench_queueing;
pub mod bench_readings;
pub mod bench_tokens;
pub mod client_bound;
pub mod client_gap;
pub mod conservative_admission;
pub mod cuda_graph;
pub mod decode_compute;
pub mod dp_imbalance;
pub mod drain;
pub mod fleet_imbalance;
pub mod health_check;
pub mod held_admission;
pub mod hicache_storage;
pub mod idle_window;
pub mod kv_cache_bound;
pub mod kv_transfer;
pub mod littles_law;
pub mod moe_config;
pub mod oom;
pub mod pd_transfer;
pub mod prefill_compute;
pub mod prefill_interference;
pub mod prefill_limit;
pub mod prefix_reuse;
pub mod ramp_only;
pub mod rejected_requests;
pub mod retraction;
pub mod running_cap;
pub mod scheduler_exception;
pub mod shutdown;
pub mod slow_pass;
pub mod speculative;
pub mod stall;
pub mod startup_incomplete;
pub mod tiny_pool;
pub mod watchdog;

#[cfg(test)]
pub(crate) mod testing;

/// What the finding rules read: the evidence, every scheduler's view, and the capacity and
/// retraction facts.
#[derive(Clone, Copy)]
pub struct Input<'a> {
    /// The evidence (after consolidation).
    pub ev: &'a Evidence,
    /// One view per scheduler, in key order.
    pub views: &'a [SchedulerView<'a>],
    /// The capacity facts.
    pub capacity: &'a CapacitySummary,
    /// The retraction totals.
    pub retractions: &'a RetractionSummary,
}

impl Input<'_> {
    /// The name of a source.
    pub fn source_name(&self, source: usize) -> String {
        self.ev
            .sources
            .get(source)
            .map(|s| s.name.clone())
            .unwrap_or_default()
    }

    /// A line range in one source.
    pub fn range(&self, source: usize, first_line: u64, last_line: u64) -> SourceRange {
        SourceRange {
            source: self.source_name(source),
            first_line,
            last_line,
            last_source: None,
        }
    }

    /// The lines from `first` to `last`, which may lie in another source (a scheduler whose
    /// rotated logs were joined).
    pub fn span(&self, first: Loc, last: Loc) -> SourceRange {
        SourceRange {
            last_source: (last.source != first.source).then(|| self.source_name(last.source)),
            ..self.range(first.source, first.line, last.line)
        }
    }

    /// The whole range of a scheduler's batch lines: from its first line to its last, in one
    /// source or across the rotated parts it was joined from.
    pub fn timeline_range(&self, tl: &SchedulerTimeline) -> Option<SourceRange> {
        Some(self.span(tl.first?, tl.last?))
    }

    /// One line.
    pub fn line(&self, loc: Loc) -> SourceRange {
        self.range(loc.source, loc.line, loc.line)
    }

    /// No scheduler has a decode line: the log holds the startup (and perhaps prefills) only,
    /// so what can be judged is the capacity the startup fixed.
    pub fn no_decode_lines(&self) -> bool {
        self.views.iter().all(|v| v.tl.decode.pushed() == 0)
    }

    /// The source of a scheduler's first batch line (0 when it has none).
    pub fn source_of(&self, tl: &SchedulerTimeline) -> usize {
        tl.first.map(|l| l.source).unwrap_or(0)
    }
}

/// The finding of a scheduler's verdict in the words of the rule that named it (a *verdict
/// rule*: `kv_cache_bound`, `running_cap`, `prefill_limit`, `conservative_admission`,
/// `pd_transfer`, `client_bound`, `drain`), each from its `finding` function beside its check.
/// `crate::narrative::bottleneck` picks the rule from the verdict's reason, adds the figures
/// every verdict shares (the queue, the usage, the admission model's, the medians) around the
/// rule's own, and caps the confidence of a verdict read from a handful of lines.
#[derive(Clone, Debug, PartialEq)]
pub struct VerdictWords {
    /// The finding's kind.
    pub kind: FindingKind,
    /// Its title.
    pub title: String,
    /// Its sentences.
    pub detail: String,
    /// How sure the rule is, before an excerpt's cap.
    pub confidence: Confidence,
    /// The settings it says to change.
    pub levers: Vec<Lever>,
    /// The rule's figures that lead, after the queue's share and the median usage and before
    /// the admission model's figures.
    pub lead: Vec<Figure>,
    /// The rule's figures after every figure the verdicts share.
    pub figures: Vec<Figure>,
}

impl VerdictWords {
    /// A verdict's words with no lever and no figure of its own.
    pub fn new(kind: FindingKind, title: String, detail: String, confidence: Confidence) -> Self {
        Self {
            kind,
            title,
            detail,
            confidence,
            levers: Vec::new(),
            lead: Vec::new(),
            figures: Vec::new(),
        }
    }

    /// With the settings it says to change.
    pub fn levers(mut self, levers: Vec<Lever>) -> Self {
        self.levers = levers;
        self
    }

    /// With the figures that lead ([`Self::lead`]).
    pub fn lead(mut self, lead: Vec<Figure>) -> Self {
        self.lead = lead;
        self
    }

    /// With the figures that trail ([`Self::figures`]).
    pub fn figures(mut self, figures: Vec<Figure>) -> Self {
        self.figures = figures;
        self
    }
}

/// `f64::total_cmp`'s order as an integer's (`throughput_stats`' order keys): values kept as
/// their keys are selected among integers (a compare each, where `total_cmp` turns both values
/// into keys at every compare) and turned back by [`order_value`], the same bits.
pub(crate) fn order_key(x: f64) -> u64 {
    let b = x.to_bits();
    if b >> 63 == 1 { !b } else { b | 1 << 63 }
}

/// The value whose [`order_key`] is `k`.
pub(crate) fn order_value(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k })
}

/// A figure's name on the scheduler behind a verdict: with DP ranks the figures are that
/// rank's, so `name on DP2` says which; without, `name`.
pub fn on_rank(v: &SchedulerView<'_>, name: &str) -> String {
    match v.key.dp {
        Some(_) => format!("{name} on {}", v.key),
        None => name.to_string(),
    }
}

/// A finding rule: from the whole [`Input`] to typed facts, and from its facts to a finding in
/// its own words. One type per rule, in the rule's file (a file may hold two, as `cuda_graph`
/// and `tiny_pool` do for what a startup-only log shows); registered in [`FINDING_RULES`].
///
/// `check` decides and `finding` words: every choice (whether the rule holds, which pattern,
/// which levers) is made on the facts, and `finding` only puts them into sentences and figures
/// with the formatting of `crate::narrative::words`.
pub trait Rule {
    /// The rule's name: its file's name under `rules/` (`"moe_config"`), as `ARCHITECTURE.md`
    /// and the tidy check name it.
    const NAME: &'static str;

    /// What the rule found: numbers, line ranges and enums, no English.
    type Facts;

    /// The rule: one set of facts per thing it found (an `Option` for a rule that holds once,
    /// a `Vec` for one that holds several times, as `stall` does), empty when it does not hold.
    fn check(input: &Input<'_>) -> impl IntoIterator<Item = Self::Facts>;

    /// The rule's words: the finding of one set of its facts. `input` is the evidence the facts
    /// came from (the capacity, the retraction totals and the sources it names).
    fn finding(facts: &Self::Facts, input: &Input<'_>) -> Finding;
}

/// Every finding of rule `R` over `input`: [`Rule::check`], then [`Rule::finding`] of each set
/// of facts, in the order `check` found them.
pub fn run<R: Rule>(input: &Input<'_>) -> Vec<Finding> {
    R::check(input)
        .into_iter()
        .map(|facts| R::finding(&facts, input))
        .collect()
}

/// A finding rule in the registry: its name and the function that runs it.
#[derive(Clone, Copy, Debug)]
pub struct Registered {
    /// [`Rule::NAME`]: the rule's file under `rules/`.
    pub name: &'static str,
    /// [`run`] of the rule: its findings over an input.
    pub run: fn(&Input<'_>) -> Vec<Finding>,
}

impl Registered {
    /// The registry's entry for rule `R`.
    pub const fn of<R: Rule>() -> Self {
        Self {
            name: R::NAME,
            run: run::<R>,
        }
    }
}

/// The finding rules, in the order of their findings in the report, after the verdict's own
/// (the bottleneck, held admission, slow decode or prefill): how serving went (prefill
/// interference, stalls, retractions), then the events that end or block serving (out of
/// memory, rejected requests, a scheduler's exception, the watchdog, a failed health check, an
/// unfinished startup),
/// what a log of startup lines only shows (the CUDA graphs' coverage, few full-context
/// requests), failed KV transfers, and the rest, most important first.
///
/// The event rules' facts are read by the verdict too (`crate::verdict::ENDS_SERVING`), and
/// `retraction` and `ramp_only`'s by later stages: the findings stage checks those two once
/// and words their findings in this order itself (`pipeline::findings`).
pub const FINDING_RULES: &[Registered] = &[
    Registered::of::<prefill_interference::PrefillInterference>(),
    Registered::of::<stall::Stall>(),
    Registered::of::<retraction::Retraction>(),
    Registered::of::<oom::Oom>(),
    Registered::of::<rejected_requests::RejectedRequests>(),
    Registered::of::<scheduler_exception::SchedulerException>(),
    Registered::of::<watchdog::Watchdog>(),
    Registered::of::<health_check::HealthCheck>(),
    Registered::of::<slow_pass::SlowPass>(),
    Registered::of::<startup_incomplete::StartupIncomplete>(),
    Registered::of::<cuda_graph::StartupCoverage>(),
    Registered::of::<tiny_pool::FewFullContext>(),
    Registered::of::<kv_transfer::KvTransfer>(),
    Registered::of::<moe_config::MoeConfig>(),
    Registered::of::<prefix_reuse::PrefixReuse>(),
    Registered::of::<hicache_storage::HiCacheStorage>(),
    Registered::of::<idle_window::IdleWindow>(),
    Registered::of::<cuda_graph::CudaGraph>(),
    Registered::of::<speculative::Speculative>(),
    Registered::of::<dp_imbalance::DpImbalance>(),
    Registered::of::<ramp_only::RampOnly>(),
    Registered::of::<tiny_pool::TinyPool>(),
    Registered::of::<shutdown::Shutdown>(),
];

/// The findings of every registered rule over `input`, in registry order.
pub fn findings(input: &Input<'_>) -> Vec<Finding> {
    FINDING_RULES.iter().flat_map(|r| (r.run)(input)).collect()
}
