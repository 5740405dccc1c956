//! # `prefill_limit`: admission limited by the prefill batch size
//!
//! **What it detects.** With a standing queue, at least [`th::PREFILL_AT_LIMIT_SHARE`] of the
//! steady prefill batches carry `#new-token` within [`th::PREFILL_AT_LIMIT_FRACTION`] of the
//! prefill size limit: `min(chunked_prefill_size, max_prefill_tokens)` when the log or server
//! info gives them, else the largest prefill seen. It also tells when `max_prefill_tokens` is
//! below a single prompt, so that every prefill pass admits exactly one request; and when every
//! pass admits exactly one request although its prompt fills a small part of the budget
//! ([`OnePerPass`]): something other than the budget caps each pass at one request
//! (`--prefill-max-requests 1`, named as the cause when the start-up's server_args set it and
//! ruled out when they set it higher or leave it unset; a build without batched prefill, such
//! as older speculative decoding; a running cap the batch sits just below; not late arrivals,
//! since requests wait in the scheduler's queue), and the queue drains one request per pass.
//!
//! **Why it matters.** Queued requests are admitted only as fast as their prompts are
//! prefilled; with the KV cache still having room, the prefill budget is the limit.
//!
//! **Evidence it needs.** At least [`th::MIN_PREFILL_LINES`] steady prefill lines with
//! `#new-token` (and `#new-seq`), a limit of at least [`th::MIN_PREFILL_LIMIT_TOKENS`].
//!
//! **What to change.** A larger `--chunked-prefill-size` / `--max-prefill-tokens` (more
//! activation memory, longer decode pauses), or PD disaggregation; when the budget is below one
//! prompt, raise `--max-prefill-tokens` to a few prompts; when `prefill_max_requests` is 1,
//! raise it or leave it unset.
//!
//! **Source.** SGLang `schedule_policy.py` (`PrefillAdder`: `rem_input_tokens` from
//! `max_prefill_tokens`, `rem_chunk_tokens` from `chunked_prefill_size`; the first request of a
//! batch may exceed the budget; `prefill_max_requests` ends a pass once it holds that many
//! requests); spec §6.2.

use crate::evidence::collect_within;
use crate::evidence::view::SchedulerView;
use crate::narrative::words::pool_room_clause;
use crate::report::{CapacitySummary, Confidence, Figure, FindingKind, Lever, Unit};
use crate::rules::{VerdictWords, on_rank};
use crate::thresholds as th;

pub use crate::thresholds::DEFAULT_MAX_PREFILL_TOKENS;

pub use crate::report::prefill_limit::{Facts, LimitSource, OnePerPass};

/// The prefill size limit (tokens) and where it came from: a chunk size the batches fill
/// exactly and repeatedly, else the configured limit, else SGLang's default budget. Never the
/// largest batch seen by itself: the largest of varying batches is no limit.
pub(crate) fn budget(v: &SchedulerView<'_>, cap: &CapacitySummary) -> Option<(u64, LimitSource)> {
    let configured = match (
        cap.chunked_prefill_size.filter(|&c| c > 0),
        cap.max_prefill_tokens,
    ) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    // the largest pass, how many passes carry exactly it, and whether a pass of several
    // requests goes above the default budget, in one pass
    let (mut max, mut exact, mut over_default) = (None, 0usize, false);
    for p in &v.steady_prefill {
        let Some(n) = p.new_token else {
            continue;
        };
        over_default |= n > DEFAULT_MAX_PREFILL_TOKENS && p.new_seq.is_some_and(|s| s > 1);
        match max {
            Some(m) if n < m => {}
            Some(m) if n == m => exact += 1,
            _ => (max, exact) = (Some(n), 1),
        }
    }
    let max = max?;
    if exact >= th::MIN_EXACT_CHUNKS && max.is_power_of_two() && configured.is_none_or(|c| max <= c)
    {
        return Some((max, LimitSource::RepeatedChunk));
    }
    if configured.is_none() {
        // passes of several requests above the default: the default is not this server's
        if over_default {
            let near = v
                .steady_prefill
                .iter()
                .filter(|p| {
                    p.new_token
                        .is_some_and(|t| t as f64 >= th::PREFILL_AT_LIMIT_FRACTION * max as f64)
                })
                .count();
            let steady = near >= th::MIN_EXACT_CHUNKS
                && near as f64 >= th::PREFILL_AT_LIMIT_SHARE * v.steady_prefill.len() as f64;
            return steady.then_some((max, LimitSource::SteadyPasses));
        }
    }
    Some(match configured {
        Some(c) => (c, LimitSource::Configured),
        None => (DEFAULT_MAX_PREFILL_TOKENS, LimitSource::DefaultBudget),
    })
}

/// The rule on one scheduler. Judged once per view: asked again with the same capacity, the
/// view's copy.
pub fn check(v: &SchedulerView<'_>, cap: &CapacitySummary) -> Option<Facts> {
    judged(v, cap, || budget(v, cap))
}

/// [`check`] for a caller that holds the budget already (`budget(v, cap)`, which it is not
/// worked out again from: the admission model asks for both).
pub(crate) fn check_with_budget(
    v: &SchedulerView<'_>,
    cap: &CapacitySummary,
    limit: Option<(u64, LimitSource)>,
) -> Option<Facts> {
    judged(v, cap, || limit)
}

/// The view's copy of the facts, else the facts judged with the budget `limit` gives.
fn judged(
    v: &SchedulerView<'_>,
    cap: &CapacitySummary,
    limit: impl FnOnce() -> Option<(u64, LimitSource)>,
) -> Option<Facts> {
    if let Some((c, f)) = v.prefill_limit.get()
        && c == cap
    {
        return *f;
    }
    let f = check_of(v, cap, limit);
    // the first capacity asked is kept (the pipeline asks with one capacity only)
    let _ = v.prefill_limit.set((cap.clone(), f));
    f
}

fn check_of(
    v: &SchedulerView<'_>,
    cap: &CapacitySummary,
    limit: impl FnOnce() -> Option<(u64, LimitSource)>,
) -> Option<Facts> {
    if !v.queued() || v.steady_prefill.len() < th::MIN_PREFILL_LINES {
        return None;
    }
    let (limit_tokens, source) = limit().filter(|l| l.0 >= th::MIN_PREFILL_LIMIT_TOKENS)?;
    // one pass for the share of passes at the limit (of those printing `#new-token`) and
    // whether every pass printing `#new-seq` admitted one request; the prompts are gathered
    // only then, both patterns below need it (0.78 M -> ~0.2 M instructions on the 20 MB
    // sample, whose passes admit several)
    let (mut judged, mut at_limit, mut seqs, mut one_each) = (0usize, 0usize, 0usize, true);
    for p in &v.steady_prefill {
        if let Some(n) = p.new_token {
            judged += 1;
            at_limit +=
                usize::from(n as f64 >= th::PREFILL_AT_LIMIT_FRACTION * limit_tokens as f64);
        }
        if let Some(s) = p.new_seq {
            seqs += 1;
            one_each &= s == 1;
        }
    }
    if judged == 0 {
        return None;
    }
    let share_at_limit = at_limit as f64 / judged as f64;
    let one_each = one_each && seqs > 0;
    let prompts: Vec<u64> = if one_each {
        let n = v.steady_prefill.len();
        collect_within(n, v.steady_prefill.iter().filter_map(|p| p.new_token))
    } else {
        Vec::new()
    };
    let budget_below_prompt = match (cap.max_prefill_tokens, prompts.iter().min()) {
        (Some(b), Some(&p)) if one_each && p > b => {
            throughput_stats::median_u64(&prompts).map(|m| (b, m))
        }
        _ => None,
    };
    // one request a pass although the budget held several of these prompts
    // (the median only when the pattern holds: it is a selection over every pass)
    let one_per_pass = (one_each
        && budget_below_prompt.is_none()
        && seqs >= th::MIN_PREFILL_LINES
        && prompts
            .iter()
            .all(|&p| (p as f64) < th::PREFILL_AT_LIMIT_FRACTION * limit_tokens as f64))
    .then(|| throughput_stats::median_u64(&prompts))
    .flatten()
    .map(|m| OnePerPass {
        passes: seqs,
        median_prompt: m,
    });
    if share_at_limit < th::PREFILL_AT_LIMIT_SHARE
        && budget_below_prompt.is_none()
        && one_per_pass.is_none()
    {
        return None;
    }
    Some(Facts {
        share_at_limit,
        limit_tokens,
        source,
        budget_below_prompt,
        one_per_pass,
    })
}

/// The finding of a prefill-bound verdict in this rule's words: facts `f` on the scheduler `v`
/// whose verdict (or whose second finding) it is, with the capacity `cap`; no lever when the
/// budget is not what limits a pass (one request per pass) or no budget in force is known.
pub(crate) fn finding(f: &Facts, v: &SchedulerView<'_>, cap: &CapacitySummary) -> VerdictWords {
    let lead = vec![Figure::new(
        on_rank(v, "share of prefill batches at the size limit"),
        f.share_at_limit,
        Unit::Fraction,
    )];
    let levers = if f.budget_below_prompt.is_some() {
        vec![Lever::MaxPrefillTokens]
    } else if f.one_per_pass.is_some() || f.source == LimitSource::SteadyPasses {
        // the budget is not what caps a pass at one request; or no budget in force is known:
        // a larger one is no known gain
        Vec::new()
    } else {
        vec![Lever::ChunkedPrefillSize, Lever::MaxPrefillTokens]
    };
    let mut figures = Vec::new();
    if let Some(c) = cap.chunked_prefill_size {
        figures.push(Figure::new("chunked_prefill_size", c as f64, Unit::Tokens));
    }
    if let Some(m) = cap.max_prefill_tokens {
        figures.push(Figure::new("max_prefill_tokens", m as f64, Unit::Tokens));
    }
    if let Some(m) = v.tl.agg.max_prefill_new_tokens {
        figures.push(Figure::new("largest prefill batch", m as f64, Unit::Tokens));
    }
    // a running cap the batch sits just below: the count after the passes tops out at the
    // same value more than once (a batch still climbing fills no cap)
    let after: Vec<u64> = v
        .steady_prefill
        .iter()
        .filter_map(|p| Some(p.running? + p.new_seq.unwrap_or(0)))
        .collect();
    let top = after.iter().max();
    let at_cap = if top.is_some_and(|t| after.iter().filter(|&a| a == t).count() >= 2) {
        ", a running-request cap the batch sits just below (each pass fills it)"
    } else {
        ""
    };
    // `--prefill-max-requests`: SGLang's PrefillAdder stops a pass once it holds that many
    // requests (spec §6.2); the start-up's server_args tell whether it is set
    let per_pass_setting = match cap.prefill_max_requests {
        Some(Some(n)) => {
            format!(" (not --prefill-max-requests: this log's server_args set it to {n})")
        }
        Some(None) => {
            " (not --prefill-max-requests: this log's server_args leave it unset)".to_string()
        }
        None => String::new(),
    };
    let unknown_setting = if cap.prefill_max_requests.is_none() {
        "--prefill-max-requests 1 (SGLang's cap on the requests one prefill pass admits; this log prints no server_args with it), "
    } else {
        ""
    };
    let detail = match (f.budget_below_prompt, f.one_per_pass) {
        (None, Some(o)) if cap.prefill_max_requests == Some(Some(1)) => format!(
            "Each of {} prefill passes admitted one request (prompts of ~{} tokens) while requests waited: this log's server_args set prefill_max_requests=1, and SGLang's PrefillAdder stops a prefill pass once it holds that many requests, so requests leave the queue one per pass. \
                 Raise --prefill-max-requests, or leave it unset (SGLang's default, no cap), so that a pass admits as many waiting requests as the budget and the pool hold; raising --chunked-prefill-size or --max-prefill-tokens changes nothing while it is 1.",
            o.passes, o.median_prompt
        ),
        (None, Some(o)) if f.source == LimitSource::Configured => format!(
            "Each of {} prefill passes admitted one request (prompts of ~{} tokens, a small part of the configured {}-token prefill budget) while requests waited: requests leave the queue one per pass. \
                 SGLang's PrefillAdder admits as many waiting requests as the budget and the pool hold, so something else caps each pass at one: {unknown_setting}a build without batched prefill (older speculative decoding){at_cap}{per_pass_setting} (requests already waiting in the scheduler's queue did not arrive too late for the pass). \
                 Check which: the budget is not it, so raising --chunked-prefill-size or --max-prefill-tokens changes nothing.",
            o.passes, o.median_prompt, f.limit_tokens
        ),
        (None, Some(o)) => format!(
            "Each of {} prefill passes admitted one request (prompts of ~{} tokens) while requests waited: requests leave the queue one per pass. \
                 SGLang's PrefillAdder admits as many waiting requests as the budget and the pool hold, and this log prints no budget (SGLang's default max_prefill_tokens is {}, its default chunk size depends on the GPU): \
                 either the budget (chunked_prefill_size or max_prefill_tokens) is below two of these prompts, or something else caps each pass at one: {unknown_setting}a build without batched prefill (older speculative decoding){at_cap}{per_pass_setting}; requests already waiting in the scheduler's queue did not arrive too late for the pass. \
                 The start-up's capacity line and server_args (chunked_prefill_size, max_prefill_tokens, prefill_max_requests) tell which.",
            o.passes, o.median_prompt, DEFAULT_MAX_PREFILL_TOKENS
        ),
        _ => match f.budget_below_prompt {
            Some((budget, p)) => format!(
                "max_prefill_tokens ({budget}) is below one prompt (~{p} tokens): SGLang admits the first request of a prefill batch whatever its size, \
                 so every prefill batch holds exactly one request and requests are admitted one per prefill pass while the queue waits. \
                 Raise --max-prefill-tokens to a few prompts (e.g. {}) so that one pass admits several; it costs activation memory and longer decode pauses.",
                p * 4
            ),
            None if f.source == LimitSource::SteadyPasses => format!(
                "Every prefill pass holds about the same size, up to {} tokens of several requests, while the queue waits{}: requests are admitted only as fast as these passes run. \
                 That is above SGLang's default max_prefill_tokens, so this server's budget is not the default, and the log prints neither the budget nor the chunk size: \
                 whether a budget or prefill's own pace sets the size is not in it. If the passes run back to back (a prefill line every pass's compute time), prefill compute paces admission \
                 and a larger budget only makes each pass longer; more prefill compute (a larger TP, PD disaggregation) admits faster. The start-up's capacity line tells the budget.",
                f.limit_tokens,
                pool_room_clause(&v.pool_room),
            ),
            None => format!(
                "Prefill batches run at their token limit ({} tokens: {}) while the queue waits{}: requests are admitted only as fast as prompts are prefilled. \
             A larger --chunked-prefill-size and --max-prefill-tokens admit more per batch (more activation memory; longer decode pauses), or PD disaggregation separates prefill from decode.",
                f.limit_tokens,
                match f.source {
                    LimitSource::Configured =>
                        "the configured chunked_prefill_size / max_prefill_tokens",
                    LimitSource::RepeatedChunk =>
                        "batch after batch filled to exactly this size, SGLang's chunked prefill at work; the log does not print chunked_prefill_size",
                    LimitSource::DefaultBudget =>
                        "SGLang's default max_prefill_tokens; the log does not print the configured one",
                    LimitSource::SteadyPasses => "the size the passes fill again and again",
                },
                pool_room_clause(&v.pool_room),
            ),
        },
    };
    let (kind, title, detail, confidence) = (
        FindingKind::PrefillBound,
        if f.one_per_pass.is_some() {
            "Prefill bound: one request admitted per prefill pass".to_string()
        } else {
            "Prefill bound: admission is limited by the prefill batch size".to_string()
        },
        detail,
        Confidence::Medium,
    );
    VerdictWords::new(kind, title, detail, confidence)
        .levers(levers)
        .lead(lead)
        .figures(figures)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{excerpt, set_field, whole, with_input};

    const CHUNKS: &str = "real/041-i11970-v0.5.3post3-prefill-queue114-chunk8192.log";
    const COMPOSE: &str = "real/026-i6901-docker-compose-prefix-prefill.log";

    fn check_lines(lines: &str, cap: &CapacitySummary) -> Option<Facts> {
        with_input(lines, |i| check(&i.views[0], cap))
    }

    const EAGLE_BURST: &str = "real-3/039-i2777-eagle2-bench-cache-hit-rate-queue62.log";

    #[test]
    fn one_request_per_pass_while_a_burst_waits() {
        // 039: 63 requests at once; every prefill admits #new-seq 1 (48-80 tokens) and the
        // queue falls 62, 61, 60, ... one per line
        let f = check_lines(&whole(EAGLE_BURST), &CapacitySummary::default()).expect("facts");
        let o = f.one_per_pass.expect("one per pass");
        assert_eq!(o.passes, 7);
        assert_eq!(o.median_prompt, 60);
        assert_eq!(f.budget_below_prompt, None);
    }

    #[test]
    fn two_requests_in_one_pass_is_not_one_per_pass() {
        // boundary: one pass admitting 2 breaks the pattern
        let text = crate::rules::testing::edit(
            &whole(EAGLE_BURST),
            "#new-seq: 1, #new-token: 75",
            "#new-seq: 2, #new-token: 75",
        );
        assert_eq!(
            check_lines(&text, &CapacitySummary::default()).and_then(|f| f.one_per_pass),
            None
        );
    }

    #[test]
    fn one_per_pass_needs_a_queue() {
        let text = set_field(&whole(EAGLE_BURST), "#queue-req", "0");
        assert_eq!(
            check_lines(&text, &CapacitySummary::default()).and_then(|f| f.one_per_pass),
            None
        );
    }

    #[test]
    fn full_chunks_while_the_queue_waits() {
        // 041: 9 requests in exactly 8192 tokens, batch after batch: the chunk size.
        let f = check_lines(&whole(CHUNKS), &CapacitySummary::default()).expect("prefill bound");
        assert_eq!(f.limit_tokens, 8192);
        assert_eq!(f.source, LimitSource::RepeatedChunk);
        assert_eq!(f.share_at_limit, 1.0);
        assert_eq!(f.budget_below_prompt, None);
        // 026: three 5000-token prompts (15000) per batch, chunked prefill 32768: the default
        // max_prefill_tokens (16384) holds the fourth back.
        let f = check_lines(&whole(COMPOSE), &CapacitySummary::default()).expect("prefill bound");
        assert_eq!(f.limit_tokens, 16384);
        assert_eq!(f.source, LimitSource::DefaultBudget);
    }

    #[test]
    fn the_largest_batch_seen_is_no_limit() {
        // 026's batches against a configured limit far above them: not at the limit.
        let big = CapacitySummary {
            chunked_prefill_size: Some(65536),
            max_prefill_tokens: Some(65536),
            ..CapacitySummary::default()
        };
        assert_eq!(check_lines(&whole(COMPOSE), &big), None);
        // Batches of 15000 tokens are not a repeated power-of-two chunk: with a 32768 chunk
        // named, only the configured budget could bind.
        let f = check_lines(
            &whole(COMPOSE),
            &CapacitySummary {
                chunked_prefill_size: Some(32768),
                max_prefill_tokens: Some(16384),
                ..CapacitySummary::default()
            },
        )
        .expect("prefill bound");
        assert_eq!((f.limit_tokens, f.source), (16384, LimitSource::Configured));
    }

    #[test]
    fn no_queue_or_one_line_is_not_prefill_bound() {
        let none = CapacitySummary::default();
        assert_eq!(
            check_lines(&set_field(&whole(CHUNKS), "#queue-req", "0"), &none),
            None
        );
        assert_eq!(check_lines(&excerpt(COMPOSE, 1..=1), &none), None);
    }

    #[test]
    fn passes_above_the_default_budget_are_not_judged_against_it() {
        // real-3/015: 12 requests and 43,008-43,904 tokens a pass (lines 1-5), no budget
        // printed: the default 16,384 is not this server's; the passes fill the same size
        let log = "real-3/015-pr30047-npu-mamba-prefill-queue97-pending-token.log";
        with_input(&whole(log), |i| {
            let f = check(&i.views[0], i.capacity).expect("prefill bound");
            assert_eq!(f.source, LimitSource::SteadyPasses);
            assert_eq!(f.limit_tokens, 43_904);
            assert!((f.share_at_limit - 1.0).abs() < 1e-9);
        });
        // one pass of one request over the default is a long prompt, not a larger budget
        let one = set_field(&whole(log), "#new-seq", "1");
        with_input(&one, |i| {
            assert!(
                check(&i.views[0], i.capacity)
                    .is_none_or(|f| f.source != LimitSource::SteadyPasses)
            );
        });
        // passes that vary (three of the five at half the size) set no size in force
        let varied: String = whole(log)
            .lines()
            .enumerate()
            .map(|(n, l)| {
                if n % 2 == 0 {
                    format!("{}\n", l.replacen("#new-token: 43", "#new-token: 21", 1))
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        with_input(&varied, |i| {
            assert_eq!(check(&i.views[0], i.capacity), None)
        });
    }

    #[test]
    fn a_budget_below_one_prompt_admits_one_request_per_pass() {
        let one_each = set_field(&whole(COMPOSE), "#new-seq", "1");
        let cap = CapacitySummary {
            max_prefill_tokens: Some(1500),
            ..CapacitySummary::default()
        };
        let f = check_lines(&one_each, &cap).expect("prefill bound");
        assert_eq!(f.budget_below_prompt, Some((1500, 15000)));
        // A limit under 512 tokens is no throughput limit worth naming.
        let small = set_field(&whole(COMPOSE), "#new-token", "300");
        assert_eq!(check_lines(&small, &CapacitySummary::default()), None);
    }

    /// The alternatives for one request a pass name a cap only where the batch tops out at
    /// one count on several passes: real-3/021 reaches 48 after two passes; real-3/027's
    /// batch climbs 1, 2, … with a queue of 28-119, filling no cap.
    #[test]
    fn a_cap_is_offered_only_where_the_batch_tops_out() {
        let words = |rel: &str| {
            with_input(&crate::rules::testing::whole(rel), |i| {
                let v = &i.views[0];
                let f = check(v, i.capacity).expect("prefill limit");
                assert!(f.one_per_pass.is_some(), "{rel}");
                finding(&f, v, i.capacity).detail
            })
        };
        let cap = "a running-request cap the batch sits just below";
        assert!(words("real-3/021-pr25960-npu-column-truncated-malformed.log").contains(cap));
        assert!(!words("real-3/027-pr25960-npu-tqdm-interleaved-truncated.log").contains(cap));
    }

    /// One request a pass, worded by what the start-up's server_args say of
    /// `prefill_max_requests` (real-3/039's lines): set to 1 it is the cause and the lever; set
    /// higher (boundary: 2) or unset it is ruled out; not printed it is one of the candidates.
    #[test]
    fn one_per_pass_names_prefill_max_requests_by_what_server_args_say() {
        with_input(&whole(EAGLE_BURST), |i| {
            let v = &i.views[0];
            let f = check(v, i.capacity).expect("prefill limit");
            assert!(f.one_per_pass.is_some());
            let words = |pmr: Option<Option<u64>>| {
                let cap = CapacitySummary {
                    prefill_max_requests: pmr,
                    ..i.capacity.clone()
                };
                finding(&f, v, &cap).detail
            };
            let set_to_one = words(Some(Some(1)));
            assert!(
                set_to_one.contains("server_args set prefill_max_requests=1")
                    && set_to_one.contains("Raise --prefill-max-requests"),
                "{set_to_one}"
            );
            let two = words(Some(Some(2)));
            assert!(
                two.contains("not --prefill-max-requests: this log's server_args set it to 2")
                    && !two.contains("Raise --prefill-max-requests"),
                "{two}"
            );
            let unset = words(Some(None));
            assert!(
                unset.contains("leave it unset") && !unset.contains("--prefill-max-requests 1 ("),
                "{unset}"
            );
            let unknown = words(None);
            assert!(
                unknown.contains("--prefill-max-requests 1 (SGLang's cap"),
                "{unknown}"
            );
        });
    }

    /// `prefill_max_requests` read from a real start-up's server_args (an Ascend log that
    /// prints `prefill_max_requests=None`), and the same line with it set.
    #[test]
    fn prefill_max_requests_is_read_from_server_args() {
        const ASCEND: &str = "real-long/ascend-qwen3-30b-tp2-eagle3-highload.log";
        let pmr = |text: &str| with_input(text, |i| i.capacity.prefill_max_requests);
        assert_eq!(pmr(&whole(ASCEND)), Some(None));
        let set = crate::rules::testing::edit(
            &whole(ASCEND),
            "prefill_max_requests=None",
            "prefill_max_requests=4",
        );
        assert_eq!(pmr(&set), Some(Some(4)));
        // a log without server_args says nothing of it
        assert_eq!(pmr(&whole(EAGLE_BURST)), None);
    }
}
