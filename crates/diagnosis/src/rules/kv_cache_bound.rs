//! # `kv_cache_bound`: the KV pool is full and decides how many requests run
//!
//! **What it detects.** Token usage at or above [`th::KV_FULL_USAGE`] (p90 over the steady
//! span, or on at least [`th::FULL_SHARE`] of its lines) while requests queue on most lines; on
//! a PD decode server, the pool full while the pre-allocation queue holds requests; or the pool
//! full with nothing waiting yet.
//!
//! **Why it matters.** SGLang admits a request only when the pool can hold its prompt plus its
//! reserved output, so at a full pool only what fits decodes at once, whatever the client
//! sends. Faster kernels or more client concurrency change nothing; more KV slots do.
//!
//! **Evidence it needs.** Decode or prefill lines with `token usage` and `#queue-req` over a
//! steady span.
//!
//! **What to change.** More KV slots per GPU: a larger `mem_fraction_static` (as far as free
//! memory allows; see the what-if table), `--kv-cache-dtype fp8_e4m3`, more GPUs, shorter
//! `max_tokens`. Not HiCache: it extends the prefix cache, not the running batch.
//!
//! **A few long requests** ([`Pattern::FewLongRequests`]). The pool full with nothing waiting
//! (the queue printed and 0 on every steady line) and at most
//! [`th::FEW_LONG_REQUESTS_MAX_RUNNING`] requests running, each holding at least
//! [`th::LONG_REQUEST_TOKENS`] of KV (`#token / #running-req`): the pool is full because these
//! requests are long, not because many run. More KV slots add no throughput while nothing
//! waits; they only let the same requests grow longer before a retraction. Generations that
//! run away (no stop token) are stopped by `max_tokens`; prompts this long need more KV memory
//! or GPUs to run more at once.
//!
//! **Filling as the queue is admitted** ([`fills_as_admitted`], [`Pattern::FillsAsAdmitted`]).
//! A burst's ramp: requests wait on most lines while, from the queue's peak on, running
//! requests climb, the queue drains and token usage rises to at least [`th::FILL_MIN_USAGE`],
//! and at the last line's KV tokens per request the requests it counts plus those still to
//! come need the whole pool or more (`usage × (holding + to come) / holding ≥ 1`; a lower
//! bound, since the running requests still grow as they decode). A prefill line printed
//! before its batch was allocated (no graph flag: SGLang up to v0.5.8, spec §2.2.1) counts only
//! `#running-req` in its usage, and its `#new-seq` requests are still to come; one printed
//! after the forward counts them too. Prefill sets the pace of the ramp only: the batch will be held
//! by the KV cache before the queue drains, so larger prefill chunks reach that limit sooner
//! and gain little.
//!
//! **Source.** SGLang `schedule_policy.py` (`PrefillAdder`: admission against the pool's
//! available tokens), hyperparameter-tuning guide (token usage above 0.9 means the pool is
//! the limit); spec §2.1.

use crate::evidence::view::{SchedulerView, share};
use crate::narrative::words::count;
use crate::report::{
    CapacitySummary, Confidence, Figure, FindingKind, Lever, RetractionSummary, Unit,
};
pub use crate::report::{LongRequests, PoolFill};
use crate::rules::VerdictWords;
use crate::thresholds as th;

/// Which shape of a full pool was seen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pattern {
    /// The pool is full and requests queue.
    QueuedAtFullPool,
    /// PD decode: the pool is full and requests wait for pre-allocation (`#prealloc-req` > 0).
    PreallocAtFullPool,
    /// The pool is full, nothing waits (yet).
    FullWithoutQueue,
    /// The pool is full, nothing waits, and a few long requests hold it (see the module doc).
    FewLongRequests(LongRequests),
    /// A ramp whose waiting requests will not fit in the pool (see the module doc).
    FillsAsAdmitted(PoolFill),
}

/// The rule's verdict on a ramp whose waiting requests will not fit (see the module doc).
pub fn fills_as_admitted(v: &SchedulerView<'_>) -> Option<Pattern> {
    if !v.queued() || v.kv_full() {
        return None;
    }
    // the last line that reads all three, found from the end: a pool still low there, or no
    // queue left, settles it before the lines are read (on the 20 MB sample's nearly empty
    // pool, fills_as_admitted 0.83 M -> ~0 instructions)
    let (last, r1, q1, u1) = v
        .steady
        .iter()
        .rev()
        .find_map(|o| Some((o, o.running?, o.queue?, o.usage?)))?;
    if u1 < th::FILL_MIN_USAGE || q1 == 0 {
        return None;
    }
    // from the queue's peak (its first line) on (the first line of a burst may still show it
    // empty), in one pass without a copy of the lines
    let mut peak: Option<(u64, u64, f64)> = None;
    for o in &v.steady {
        let (Some(r), Some(q), Some(u)) = (o.running, o.queue, o.usage) else {
            continue;
        };
        if peak.is_none_or(|(_, top, _)| q > top) {
            peak = Some((r, q, u));
        }
    }
    let (r0, q0, u0) = peak?;
    if u1 <= u0 || r1 <= r0 || q1 >= q0 {
        return None;
    }
    // a prefill line's `#running-req` leaves out its own batch; its usage counts the batch
    // only when printed after the forward (the graph flag tells)
    let (new_seq, after_forward) = match last.decode {
        true => (0, false),
        false => v
            .steady_prefill
            .iter()
            .find(|p| p.line == last.line)
            .map_or((0, false), |p| (p.new_seq.unwrap_or(0), p.graph.is_some())),
    };
    let (holding, to_come) = if after_forward {
        (r1 + new_seq, q1)
    } else {
        (r1, q1 + new_seq)
    };
    if holding == 0 {
        return None;
    }
    let projected_usage = u1 * (holding + to_come) as f64 / holding as f64;
    (projected_usage >= 1.0).then_some(Pattern::FillsAsAdmitted(PoolFill {
        usage: u1,
        holding,
        to_come,
        projected_usage,
    }))
}

/// The [`Pattern::FewLongRequests`] test on a scheduler whose pool is full.
fn few_long_requests(v: &SchedulerView<'_>) -> Option<LongRequests> {
    let nothing_waits = v.queued.max == Some(0.0);
    let running = v.running.median?;
    if !nothing_waits || !(1.0..=th::FEW_LONG_REQUESTS_MAX_RUNNING).contains(&running) {
        return None;
    }
    let mut per_request: Vec<f64> = v
        .steady_decode
        .iter()
        .filter_map(|d| Some(d.tokens? as f64 / d.running.filter(|&r| r > 0)? as f64))
        .collect();
    per_request.sort_by(f64::total_cmp);
    let tokens_per_request = *per_request.get(per_request.len() / 2)?;
    (tokens_per_request >= th::LONG_REQUEST_TOKENS).then_some(LongRequests {
        running,
        tokens_per_request,
    })
}

/// The rule's verdict on a scheduler with a standing queue (or a PD pre-allocation queue).
pub fn queued_at_full_pool(v: &SchedulerView<'_>) -> Option<Pattern> {
    if !v.kv_full() {
        return None;
    }
    if v.queued() {
        return Some(Pattern::QueuedAtFullPool);
    }
    let prealloc = share(&v.steady_decode, |d| d.prealloc_req.map(|p| p > 0));
    prealloc
        .is_some_and(|s| s >= th::QUEUED_SHARE)
        .then_some(Pattern::PreallocAtFullPool)
}

/// The rule's verdict on a scheduler that nothing else explains: a full pool without a queue
/// (or with its queue unknown: a paste that cut `#queue-req` away still shows the pool full,
/// and a full pool admits nothing more; the headline then says the queue is unknown).
pub fn full_without_queue(v: &SchedulerView<'_>) -> Option<Pattern> {
    if !v.kv_full() {
        return None;
    }
    Some(few_long_requests(v).map_or(Pattern::FullWithoutQueue, Pattern::FewLongRequests))
}

/// The finding of a KV-bound verdict in this rule's words: `pattern` on the scheduler `v` whose
/// verdict it is, with the pool's size (`cap`) and the retractions (`retr`); the levers follow
/// the pattern (a few long requests: `max_tokens` only).
pub(crate) fn finding(
    pattern: &Pattern,
    v: &SchedulerView<'_>,
    cap: &CapacitySummary,
    retr: &RetractionSummary,
) -> VerdictWords {
    let waits = v.queued.median.is_some_and(|q| q >= 1.0);
    let levers = match pattern {
        Pattern::FewLongRequests(_) => vec![Lever::MaxTokens],
        _ => vec![
            Lever::MemFractionStatic,
            Lever::KvCacheDtype,
            Lever::MaxTokens,
        ],
    };
    let mut figures = Vec::new();
    let (kind, title, detail, confidence) = match pattern {
        Pattern::FillsAsAdmitted(f) => {
            figures.push(Figure::new(
                "requests holding the pool at the last line",
                f.holding as f64,
                Unit::Requests,
            ));
            figures.push(Figure::new(
                "requests still to come at the last line",
                f.to_come as f64,
                Unit::Requests,
            ));
            figures.push(Figure::new(
                "token usage all of them would need",
                f.projected_usage,
                Unit::Fraction,
            ));
            (
                FindingKind::KvCacheBound,
                "KV-cache bound: the pool fills as the queue is admitted".to_string(),
                format!(
                    "Running requests climb while the queue drains and token usage rises to {:.2}, held by {} requests; with the {} still to come (admitted but not yet allocated, or waiting) they would need ~{:.2} of the pool at the same KV tokens per request (more, as the running requests keep growing while they decode). \
                     The batch will be held by the KV cache before the queue drains: prefill sets the pace of this ramp only, so larger prefill chunks reach the limit sooner and gain little. \
                     More requests can decode at once only with more KV slots: a larger mem_fraction_static (as far as free memory allows), an fp8 KV cache (kv_cache_dtype=fp8_e4m3), more GPUs (DP), or shorter max_tokens.",
                    f.usage, f.holding, f.to_come, f.projected_usage
                ),
                Confidence::Medium,
            )
        }
        Pattern::FewLongRequests(l) => {
            figures.push(Figure::new(
                "KV tokens held per running request",
                l.tokens_per_request,
                Unit::Tokens,
            ));
            (
                FindingKind::KvCacheBound,
                "KV-cache bound: a few long requests hold the pool".to_string(),
                format!(
                    "Token usage reaches {:.2} with only ~{:.0} requests running and nothing waiting: each holds ~{} tokens of KV (prompt plus output so far). \
                     The pool is full because these requests are long, not because many run, so more KV slots add no throughput while nothing waits; they only let the same requests grow longer before a retraction. \
                     If these are generations that run away (no stop token), cap max_tokens near the real completion lengths; if the prompts are this long, only more KV memory or more GPUs run more of them at once.",
                    v.usage.p90.or(v.usage.max).unwrap_or(th::KV_FULL_USAGE),
                    l.running,
                    count(l.tokens_per_request.round() as u64),
                ),
                Confidence::Medium,
            )
        }
        _ => {
            let pool = cap.max_total_num_tokens;
            if let (Some(u), Some(p), Some(r)) = (v.usage.median, pool, v.running.median)
                && r > 0.0
            {
                figures.push(Figure::new(
                    "KV tokens held per running request",
                    u * p as f64 / r,
                    Unit::Tokens,
                ));
            }
            let usage_s = match (v.usage.p90, v.usage.median) {
                (Some(p), Some(m)) => {
                    format!("Token usage reaches {p:.2} (90th percentile; median {m:.2})")
                }
                _ => format!("Token usage sits at or above {}", th::KV_FULL_USAGE),
            };
            let queue_s = match (v.queued.median, v.queued.max) {
                (Some(m), _) if m >= 1.0 => format!(" while ~{m:.0} requests queue"),
                (_, Some(x)) if x >= 1.0 => format!(" and up to {x:.0} requests queue at times"),
                _ => String::new(),
            };
            let detail = format!(
                "{usage_s}{queue_s}{}: admission stops when the pool cannot hold another request's prompt plus its reserved output, so only what fits decodes at once. \
                 More requests can decode at once only with more KV slots: a larger mem_fraction_static (each +0.01 adds 1% of the GPU's memory, but only if that much is free after activations and CUDA graphs), \
                 an fp8 KV cache (kv_cache_dtype=fp8_e4m3 halves bytes per token), more GPUs (DP), or shorter max_tokens; the what-if table checks each against the free memory when the model config and GPU memory are given. \
                 Host-RAM hierarchical cache (HiCache) extends the prefix cache only and does not raise decode concurrency.{}",
                if retr.events > 0 {
                    format!(", and the pool ran out {} times (retractions)", retr.events)
                } else {
                    String::new()
                },
                match (pool, cap.swa_pool_tokens) {
                    (Some(p), Some(s)) => format!(
                        " The full-attention pool holds {p} tokens and the sliding-window pool {s} per DP rank."
                    ),
                    (Some(p), None) => format!(" The pool holds {p} tokens per DP rank."),
                    _ => String::new(),
                }
            );
            let sure = retr.events > 0
                || (waits && v.usage.median.is_some_and(|u| u >= th::CONSERVATIVE_USAGE));
            (
                FindingKind::KvCacheBound,
                "KV-cache bound".to_string(),
                detail,
                if sure {
                    Confidence::High
                } else {
                    Confidence::Medium
                },
            )
        }
    };
    VerdictWords::new(kind, title, detail, confidence)
        .levers(levers)
        .figures(figures)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{excerpt, set_field, whole, with_input};

    const DP_ATTN: &str = "real/019-i5429-2x8h100-dsr1-dp-attn-queue990.log";
    const FULL_QUEUE: &str = "real/001-i938-a100-llama13b-queue12k.log";

    fn check_lines(lines: &str, expected: Option<Pattern>) {
        with_input(lines, |i| {
            let v = &i.views[0];
            assert_eq!(queued_at_full_pool(v).or(full_without_queue(v)), expected);
        });
    }

    #[test]
    fn full_pool_with_a_queue() {
        check_lines(&excerpt(DP_ATTN, 1..=5), Some(Pattern::QueuedAtFullPool));
        check_lines(&excerpt(FULL_QUEUE, 1..=1), Some(Pattern::QueuedAtFullPool));
    }

    #[test]
    fn a_queue_with_room_in_the_pool_is_not_kv_bound() {
        check_lines(
            &set_field(&excerpt(DP_ATTN, 1..=5), "token usage", "0.70"),
            None,
        );
    }

    #[test]
    fn the_full_line_is_at_ninety_percent() {
        let lines = excerpt(FULL_QUEUE, 1..=1);
        check_lines(
            &set_field(&lines, "token usage", "0.90"),
            Some(Pattern::QueuedAtFullPool),
        );
        check_lines(&set_field(&lines, "token usage", "0.89"), None);
        let idle = set_field(&set_field(&lines, "token usage", "0.95"), "#queue-req", "0");
        check_lines(&idle, Some(Pattern::FullWithoutQueue));
    }

    const RUNAWAY: &str = "real/046-i2746-dsv3-usage100-tiny-batch-then-decode-oom.log";

    #[test]
    fn two_requests_of_150k_tokens_hold_the_pool() {
        // lines 1-5: 2 running, #token 307481-307801, usage 1.00, #queue-req 0
        check_lines(
            &excerpt(RUNAWAY, 1..=5),
            Some(Pattern::FewLongRequests(LongRequests {
                running: 2.0,
                tokens_per_request: 307641.0 / 2.0,
            })),
        );
    }

    #[test]
    fn a_waiting_request_or_short_requests_are_not_a_few_long_ones() {
        let lines = excerpt(RUNAWAY, 1..=5);
        // one request waits on every line: the pool turns it away (queued at a full pool)
        check_lines(
            &set_field(&lines, "#queue-req", "1"),
            Some(Pattern::QueuedAtFullPool),
        );
        // 2 requests of 16k tokens each fill a small pool: full, but not long requests
        check_lines(
            &set_field(&lines, "#token", "32000"),
            Some(Pattern::FullWithoutQueue),
        );
        // 40 requests share the same tokens: a busy pool, not a few long requests
        check_lines(
            &set_field(&lines, "#running-req", "40"),
            Some(Pattern::FullWithoutQueue),
        );
    }

    const FILLING: &str = "real/055-i1612-engine-generate-offline-tqdm-time-only.log";

    #[test]
    fn a_ramp_whose_queue_will_not_fit_fills_the_pool() {
        // lines 6-12: running 0 → 21, queue 38 → 18, usage 0.00 → 0.77; v0.3 prints the line
        // before allocating its batch (no graph flag; line 7 reads 0.04 after line 6's 2062
        // tokens only), so 21 hold 0.77, and 5 admitted plus 18 waiting need 0.77 × 44 / 21
        with_input(&excerpt(FILLING, 6..=12), |i| {
            let v = &i.views[0];
            assert_eq!(
                fills_as_admitted(v),
                Some(Pattern::FillsAsAdmitted(PoolFill {
                    usage: 0.77,
                    holding: 21,
                    to_come: 23,
                    projected_usage: 0.77 * 44.0 / 21.0,
                }))
            );
        });
    }

    #[test]
    fn a_ramp_with_room_for_its_queue_does_not_fill() {
        // the same ramp cut at line 9 (usage 0.33 is too little to project from), and 041's
        // ramp (usage 0.24 at 64 running with 53 waiting: ~0.44 projected)
        with_input(&excerpt(FILLING, 6..=9), |i| {
            assert_eq!(fills_as_admitted(&i.views[0]), None)
        });
        with_input(
            &whole("real/041-i11970-v0.5.3post3-prefill-queue114-chunk8192.log"),
            |i| assert_eq!(fills_as_admitted(&i.views[0]), None),
        );
    }

    #[test]
    fn few_is_at_most_eight_running() {
        // 307,641 tokens over 8 running is 38,455 each, still long; 9 is no longer few
        let lines = excerpt(RUNAWAY, 1..=5);
        assert!(matches!(
            queued_or_full(&set_field(&lines, "#running-req", "8")),
            Some(Pattern::FewLongRequests(_))
        ));
        assert_eq!(
            queued_or_full(&set_field(&lines, "#running-req", "9")),
            Some(Pattern::FullWithoutQueue)
        );
    }

    #[test]
    fn a_fill_is_projected_from_half_the_pool_on() {
        // line 10 reads usage 0.48 (below FILL_MIN_USAGE), line 11 0.62
        with_input(&excerpt(FILLING, 6..=10), |i| {
            assert_eq!(fills_as_admitted(&i.views[0]), None)
        });
        with_input(&excerpt(FILLING, 6..=11), |i| {
            assert!(fills_as_admitted(&i.views[0]).is_some())
        });
    }

    fn queued_or_full(lines: &str) -> Option<Pattern> {
        with_input(lines, |i| {
            let v = &i.views[0];
            queued_at_full_pool(v).or(full_without_queue(v))
        })
    }

    #[test]
    fn a_full_pool_without_any_queue_field_is_still_full() {
        // 6 running at full token usage 0.92, the user's excerpt has no `#queue-req` at all
        check_lines(
            &excerpt(
                "real/014-i26248-after-retraction-user-abbreviated.log",
                1..=7,
            ),
            Some(Pattern::FullWithoutQueue),
        );
    }
}
