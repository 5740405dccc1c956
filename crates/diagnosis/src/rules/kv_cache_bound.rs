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
pub use crate::report::{LongRequests, PoolFill};
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
    let lines: Vec<_> = v
        .steady
        .iter()
        .filter_map(|o| Some((o, o.running?, o.queue?, o.usage?)))
        .collect();
    // from the queue's peak on (the first line of a burst may still show it empty)
    let peak = lines
        .iter()
        .enumerate()
        .max_by_key(|(i, l)| (l.2, std::cmp::Reverse(*i)))?
        .0;
    let (&(_, r0, q0, u0), &(last, r1, q1, u1)) = (&lines[peak], lines.last()?);
    if u1 < th::FILL_MIN_USAGE || u1 <= u0 || r1 <= r0 || q1 >= q0 || q1 == 0 {
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
