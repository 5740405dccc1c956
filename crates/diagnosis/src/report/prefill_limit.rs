//! The `prefill_limit` rule's facts (`crate::rules::prefill_limit`), plain data kept here,
//! below the evidence's views, so that a view can hold them once judged (the views sit below
//! the rules).

/// Where the prefill size limit came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitSource {
    /// `chunked_prefill_size` / `max_prefill_tokens` from the log, server args or server info
    /// (the smaller of those given).
    Configured,
    /// The same batch size, a power of two, filled exactly again and again (SGLang's
    /// `PrefillAdder` fills a chunk to `rem_chunk_tokens` exactly, truncating the last request,
    /// and its default chunk sizes are powers of two, `server_args.py`): the chunk size,
    /// though the log does not print it.
    RepeatedChunk,
    /// Nothing says it: SGLang's default `max_prefill_tokens` (16384, `server_args.py`).
    DefaultBudget,
    /// Nothing says it, and passes of several requests hold more than the default budget, so
    /// this server's budget is not the default: the passes fill about the same size again and
    /// again ([`crate::thresholds::MIN_EXACT_CHUNKS`] and [`crate::thresholds::PREFILL_AT_LIMIT_SHARE`] of them within
    /// [`crate::thresholds::PREFILL_AT_LIMIT_FRACTION`] of the largest),
    /// which is the size in force; whether a budget or prefill's own pace sets it the log does
    /// not say, so no budget is advised.
    SteadyPasses,
}

/// What the rule saw.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Facts {
    /// Share of steady prefill batches at the limit (fraction).
    pub share_at_limit: f64,
    /// The limit they were judged against (tokens).
    pub limit_tokens: u64,
    /// Where that limit came from.
    pub source: LimitSource,
    /// `Some((max_prefill_tokens, median prompt))` when the budget is below every prompt and
    /// each prefill batch holds one request (tokens).
    pub budget_below_prompt: Option<(u64, u64)>,
    /// Every pass admits one request though its prompt fills a small part of the budget.
    pub one_per_pass: Option<OnePerPass>,
}

/// Every steady prefill pass admits exactly one request while requests wait, its prompt below
/// [`crate::thresholds::PREFILL_AT_LIMIT_FRACTION`] of the budget.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OnePerPass {
    /// Prefill passes seen, each with `#new-seq: 1`.
    pub passes: usize,
    /// Median `#new-token` of a pass (tokens).
    pub median_prompt: u64,
}
