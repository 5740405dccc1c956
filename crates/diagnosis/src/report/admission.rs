//! The admission model's figures: which of SGLang's admission constraints held the queue, and
//! for what share of the queued request-time (computed by `rules::admission`).

use schemars::JsonSchema;
use serde::Serialize;

/// One admission constraint of SGLang's scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Constraint {
    /// `max_running_requests` (per DP rank).
    RunningCap,
    /// The KV pool (`token usage`; `full token usage` for hybrid models).
    KvPool,
    /// The KV pool's reserve: `token usage` between `thresholds::CONSERVATIVE_USAGE` and the
    /// full mark, where the room SGLang keeps for the running requests' remaining tokens
    /// (`new_token_ratio` × their `max_new_tokens`, clipped; `schedule_policy.py`
    /// `PrefillAdder`) can leave too little for a new request.
    KvReserve,
    /// The sliding-window layers' pool (`swa token usage`).
    SwaPool,
    /// The mamba state slots (`mamba usage`).
    MambaSlots,
    /// The prefill token budget (`chunked_prefill_size` / `max_prefill_tokens`).
    PrefillBudget,
    /// One request per prefill pass (a build without batched prefill).
    OnePerPass,
}

/// How much room a constraint had, the median over the queued steps.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "unit", content = "value", rename_all = "snake_case")]
pub enum Slack {
    /// Requests: more the cap allowed, or more a one-request pass could have taken.
    Requests(f64),
    /// Free fraction of a pool (fraction 0–1).
    Fraction(f64),
    /// Tokens of the prefill budget the pass left unused (tokens).
    Tokens(f64),
}

/// One constraint's part of the queued request-time (waiting requests × seconds).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, JsonSchema)]
pub struct Binding {
    /// Which constraint.
    pub constraint: Constraint,
    /// Share of the queued request-time it held back (fraction 0–1; constraints may hold back
    /// the same requests, so shares may sum above 1).
    pub share: f64,
    /// Its median room over the queued steps.
    pub slack: Slack,
}

/// The admission model of one scheduler over its steady span.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct Admission {
    /// Steady steps with requests waiting.
    pub queued_steps: usize,
    /// Their time (seconds), when the lines carry timestamps.
    pub queued_s: Option<f64>,
    /// Every constraint the log lets us judge, the largest share first.
    pub bindings: Vec<Binding>,
    /// Share of the queued request-time no constraint judged held back (fraction).
    pub room_everywhere: f64,
    /// The running-request cap judged against (requests per DP rank), when one is known.
    pub cap: Option<u64>,
}
