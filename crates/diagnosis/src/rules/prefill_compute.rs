//! # `prefill_compute`: prefill chunks crawl on an idle server
//!
//! **What it detects.** Consecutive prefill lines that are chunks of one long prompt on an
//! otherwise idle server (`#new-seq: 1`, the same `#new-token` of at least
//! [`th::MIN_CHUNK_TOKENS`], nothing running or queued): chunk tokens over the time to the next
//! chunk is the prefill speed. Reported when its median over at least [`th::MIN_CHUNK_PAIRS`]
//! pairs is below [`th::SLOW_PREFILL_TOK_PER_S`].
//!
//! **Why it matters.** A GPU prefills thousands of tokens per second even for one request;
//! tens of tok/s means offloaded layers or experts, kernels on a slow path, or the wrong device.
//! Every prompt of N tokens then waits N / speed seconds for its first token.
//!
//! **Evidence it needs.** Timestamped prefill lines with `#new-seq`, `#new-token`,
//! `#running-req`, `#queue-req`, every one of them: on a timeline thinned to one prefill line
//! in `stride` two kept samples are no consecutive chunks (their gap is `stride` chunks: a
//! 0.5 s chunk read as 64 s), so such a scheduler is passed over.
//!
//! **What to change.** Look for `--cpu-offload-gb` or expert offload, fallbacks in the
//! attention/MoE kernels, the device actually used.
//!
//! **Source.** SGLang `scheduler.py` (chunked prefill runs one chunk per forward pass, with no
//! decode step in between when nothing runs); spec §6.

use crate::narrative::words;
use crate::report::{Confidence, Figure, Finding, FindingKind, SlowPrefill, SourceRange, Unit};
use crate::rules::Input;
use crate::thresholds as th;

/// The slowest crawl, and the lines it spans.
#[derive(Clone, Debug, PartialEq)]
pub struct Facts {
    /// The crawl.
    pub slow: SlowPrefill,
    /// The chunk lines measured.
    pub evidence: Option<SourceRange>,
}

/// The rule over all schedulers.
pub fn check(input: &Input<'_>) -> Option<Facts> {
    input
        .views
        .iter()
        .filter_map(|v| {
            if v.tl.prefill.stride() > 1 {
                return None;
            }
            let p = v.tl.prefill.samples();
            let mut rates = Vec::new();
            let mut lines: Option<(crate::Loc, crate::Loc)> = None;
            for w in p.windows(2) {
                let (x, y) = (&w[0], &w[1]);
                let (Some(chunk), Some(t0), Some(t1)) =
                    (x.new_token.filter(|&n| n >= th::MIN_CHUNK_TOKENS), x.t, y.t)
                else {
                    continue;
                };
                let same = x.new_seq == Some(1)
                    && y.new_token == Some(chunk)
                    && x.queue.unwrap_or(0) == 0
                    && x.running == Some(0)
                    && y.running == Some(0);
                let dt = t1 - t0;
                if same && dt > 0.0 {
                    rates.push((chunk as f64 / dt, chunk, dt));
                    // lowest to highest line in one source; first to last in the timeline's
                    // (time) order across sources (a scheduler joined from several files)
                    let (x, y) = (x.loc(), y.loc());
                    lines = Some(match lines {
                        Some((a, b))
                            if a.source == x.source
                                && b.source == y.source
                                && a.source == b.source =>
                        {
                            (a.min(x), b.max(y))
                        }
                        Some((a, _)) => (a, y),
                        None => (x, y),
                    });
                }
            }
            if rates.len() < th::MIN_CHUNK_PAIRS {
                return None;
            }
            rates.sort_by(|x, y| x.0.total_cmp(&y.0));
            let (tok_per_s, chunk_tokens, seconds_per_chunk) = rates[rates.len() / 2];
            (tok_per_s < th::SLOW_PREFILL_TOK_PER_S).then(|| Facts {
                slow: SlowPrefill {
                    scheduler: v.key.to_string(),
                    tok_per_s,
                    chunk_tokens,
                    seconds_per_chunk,
                    pairs: rates.len(),
                },
                evidence: lines.map(|(a, b)| input.span(a, b)),
            })
        })
        .min_by(|x, y| x.slow.tok_per_s.total_cmp(&y.slow.tok_per_s))
}

/// The finding of a `prefill_compute_bound` verdict (or of slow prefill beside another
/// verdict) in this rule's words.
pub(crate) fn finding(f: &Facts) -> Finding {
    let p = &f.slow;
    words::finding(
        FindingKind::PrefillComputeBound,
        "Prefill is extremely slow",
        format!(
            "On {}, consecutive {}-token prefill chunks (one request at a time) are {:.0} s apart: {:.0} tok/s of prefill \
             (median over {} chunk pairs), where a GPU prefills thousands of tokens per second even for a single request. \
             Nothing waits, so this is not load or memory: look for MoE experts or layers offloaded to the CPU \
             (--cpu-offload-gb, expert offload), kernels falling back to a slow path, or a device that is not the one you expect. \
             A prompt of N tokens needs about N / {:.0} seconds before its first token.",
            p.scheduler, p.chunk_tokens, p.seconds_per_chunk, p.tok_per_s, p.pairs, p.tok_per_s
        ),
        vec![
            Figure::new("prefill speed", p.tok_per_s, Unit::TokPerS),
            Figure::new("prefill chunk", p.chunk_tokens as f64, Unit::Tokens),
            Figure::new("seconds per chunk", p.seconds_per_chunk, Unit::Seconds),
        ],
        f.evidence.clone().into_iter().collect(),
        if p.pairs >= th::SURE_CHUNK_PAIRS {
            Confidence::High
        } else {
            Confidence::Medium
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{excerpt, set_field, whole, with_input};

    const SLOW: &str = "real/037-llama-benchy-i15-swa-prefill-slow-46tps.log";

    #[test]
    fn chunks_of_2048_tokens_take_44_seconds() {
        with_input(&whole(SLOW), |i| {
            let f = check(i).expect("slow prefill");
            assert_eq!(f.slow.chunk_tokens, 2048);
            assert!((40.0..50.0).contains(&f.slow.tok_per_s), "{f:?}");
            assert!(f.slow.pairs >= 2);
        });
    }

    #[test]
    fn busy_prefills_are_not_measured() {
        with_input(&set_field(&whole(SLOW), "#running-req", "3"), |i| {
            assert_eq!(check(i), None)
        });
    }

    /// `n` chunks of 512 tokens of one long prompt on an idle server, `gap` seconds apart, in
    /// 037's line format.
    fn chunks(n: u64, gap: u64) -> String {
        (0..n)
            .map(|i| {
                let s = 12 * 3600 + i * gap;
                format!(
                    "[2026-05-{:02} {:02}:{:02}:{:02}] Prefill batch, #new-seq: 1, #new-token: 512, #cached-token: 0, full token usage: 0.01, swa token usage: 0.02, #running-req: 0, #queue-req: 0, input throughput (token/s): 46.36, cuda graph: False\n",
                    15 + s / 86_400,
                    s / 3600 % 24,
                    s / 60 % 60,
                    s % 60
                )
            })
            .collect()
    }

    #[test]
    fn a_thinned_timeline_is_passed_over() {
        // positive: every line kept, chunks 10 s apart: 51 tok/s
        with_input(&chunks(8000, 10), |i| {
            assert_eq!(i.views[0].tl.prefill.stride(), 1);
            let f = check(i).expect("slow prefill");
            assert!((51.0..51.3).contains(&f.slow.tok_per_s), "{f:?}");
        });
        // negative: chunks 1 s apart (512 tok/s) in a log long enough that one line in four is
        // kept: kept samples 4 s apart would read 128 tok/s, a crawl that is not there
        with_input(&chunks(17_000, 1), |i| {
            assert_eq!(i.views[0].tl.prefill.stride(), 4);
            assert_eq!(check(i), None);
        });
        // boundary: the slow server's log as long: not measured either (the report says the
        // check did not run on a thinned timeline)
        with_input(&chunks(17_000, 10), |i| assert_eq!(check(i), None));
    }

    #[test]
    fn one_pair_is_not_enough() {
        with_input(&excerpt(SLOW, 1..=2), |i| assert_eq!(check(i), None));
    }
}
