//! # `decode_compute`: each decode step crawls
//!
//! **What it detects.** The scheduler whose decode is slowest per running request: the median
//! over its decode lines of `gen throughput / #running-req`, reported when it is below
//! [`th::SLOW_DECODE_TOK_PER_REQ`].
//!
//! **Why it matters.** A healthy server gives each running request several tokens per second
//! even in large batches. Far below that, decode itself is broken or starved (eager mode, CPU
//! offload, a hung collective), and no load or memory lever helps.
//!
//! **Evidence it needs.** Decode lines with `#running-req` > 0 and `gen throughput` > 0. A
//! scheduler with one such line counts only when that line ran eagerly (`cuda graph: False`):
//! a lone reading is an instant whose window may span idle time (SGLang divides the tokens
//! since the previous decode line by the time since then, idle included), and only a line
//! that shows a cause of slow steps on itself says decode is slow. With graphs on (or no flag
//! printed), a lone low reading is as likely a window after idle as a crawl.
//!
//! **What to change.** Look for decode without CUDA graphs (`cuda graph: False`,
//! `--cuda-graph-max-bs` below the batch), CPU or host offload, a broken kernel.
//!
//! **Source.** SGLang `scheduler_metrics_mixin.py` (`gen throughput` is tokens generated since
//! the last decode line over the wall time since then); spec §2.1.2.

use crate::evidence::SchedulerKey;
use crate::evidence::view::SchedulerView;
use crate::narrative::words;
use crate::report::{Confidence, Figure, Finding, FindingKind, Unit};
use crate::thresholds as th;

/// The slowest scheduler's decode speed.
#[derive(Clone, Debug, PartialEq)]
pub struct Facts {
    /// The scheduler (`rank 0`, `DP1`, ...).
    pub scheduler: SchedulerKey,
    /// Median decode speed per running request (tok/s).
    pub tok_per_s_per_request: f64,
    /// Decode lines the median is over: one reading is an instant whose window may hold a
    /// prefill, a retraction or idle time, so it is said as such.
    pub lines: usize,
}

/// The rule over all schedulers: `Some` only when the slowest is below the threshold.
pub fn check(views: &[SchedulerView<'_>]) -> Option<Facts> {
    views
        .iter()
        .filter_map(|v| {
            let samples = v.tl.decode.samples();
            // each reading's decode speed per running request (tok/s), with its graph flag
            let read = || {
                samples.iter().filter_map(|d| {
                    let r = d.running? as f64;
                    let g = d.gen_tps?;
                    (r > 0.0 && g > 0.0).then_some((g / r, d.graph))
                })
            };
            // counted first: the readings, the finite ones, those below the slow mark; finite
            // speeds at or above it on more than half the lines leave too few slow ones to
            // make the median (below): the pass ends there
            let (mut lines, mut finite, mut slow, mut lone) = (0usize, 0usize, 0usize, None);
            for (x, graph) in read() {
                (lines, lone) = (lines + 1, Some(graph));
                if x.is_finite() {
                    finite += 1;
                    if x < th::SLOW_DECODE_TOK_PER_REQ {
                        slow += 1;
                    } else if (finite - slow) * 2 > samples.len() {
                        return None;
                    }
                }
            }
            // a lone reading counts only when its line ran eagerly (see the module doc)
            if lines == 1 && lone != Some(Some(false)) {
                return None;
            }
            // the median (the element at finite/2 of the finite speeds) is below the slow mark
            // only when more than finite/2 of them are: a scheduler above it can be no slowest
            // one below the mark, and its median is not selected (decode_compute 1.07 M ->
            // ~0.3 M instructions on the 20 MB sample)
            if slow <= finite / 2 {
                return None;
            }
            let per_req: Vec<f64> = crate::evidence::collect_within(lines, read().map(|(x, _)| x));
            Some((v.key, throughput_stats::median_f64(&per_req)?, lines))
        })
        .min_by(|x, y| x.1.total_cmp(&y.1))
        .filter(|s| s.1 < th::SLOW_DECODE_TOK_PER_REQ)
        .map(|(scheduler, tok_per_s_per_request, lines)| Facts {
            scheduler,
            tok_per_s_per_request,
            lines,
        })
}

/// The finding of a `decode_compute_bound` verdict (or of slow decode beside another verdict)
/// in this rule's words: one reading is an instant, several a measure.
pub(crate) fn finding(f: &Facts) -> Finding {
    let per_req = f.tok_per_s_per_request;
    if f.lines == 1 {
        // one instant: its window may hold a prefill, a retraction or idle time
        return words::finding(
            FindingKind::DecodeComputeBound,
            "Decode looks slow per running request in a single reading",
            format!(
                "On {} the one decode line gives each running request {per_req:.2} tok/s (gen throughput / running requests). \
                 One sample is an instantaneous figure over a window that may hold prefill passes, a retraction or idle time, so it shows no more than that one window: \
                 a log with more decode lines tells whether decode itself is slow (no CUDA graphs, CPU offload, a hung collective).",
                f.scheduler
            ),
            vec![Figure::new(
                "decode speed per running request (one line)",
                per_req,
                Unit::TokPerS,
            )],
            Vec::new(),
            Confidence::Low,
        );
    }
    words::finding(
        FindingKind::DecodeComputeBound,
        "Decode is extremely slow per running request",
        format!(
            "On {} each running request gains only {per_req:.2} tok/s (median of gen throughput / running requests over the decode lines); \
             a healthy server gives each several tokens per second even in large batches. Look for decode running without CUDA graphs \
             (cuda graph: False; --cuda-graph-max-bs below the batch), CPU or host offload, a hung collective, or a broken kernel.",
            f.scheduler
        ),
        vec![Figure::new(
            "decode speed per running request",
            per_req,
            Unit::TokPerS,
        )],
        Vec::new(),
        Confidence::Medium,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{edit, set_field, whole, with_input};

    const NPU_NO_GRAPH: &str = "real/058-pr29853-npu-grok2-128running-14tps-no-graph.log";

    #[test]
    fn grok_on_npu_gains_a_tenth_of_a_token_per_request() {
        with_input(&whole(NPU_NO_GRAPH), |i| {
            let f = check(i.views).expect("slow decode");
            assert_eq!(f.scheduler.to_string(), "rank 0");
            // one decode line: a single reading, said as such
            assert_eq!(f.lines, 1);
            assert!(f.tok_per_s_per_request < 0.2, "{f:?}");
        });
    }

    #[test]
    fn a_lone_reading_with_graphs_on_is_no_crawl() {
        // 024: one decode line per DP rank, 12 running at 3.83 tok/s with `cuda graph: True`
        // and 64 KV tokens per request (young requests: the window may span idle time)
        let dp16 = "real-3/024-pr20766-multinode-dp16-stalled-3tps.log";
        with_input(&whole(dp16), |i| assert_eq!(check(i.views), None));
        // the same line run eagerly is slow decode: the line shows why
        with_input(
            &edit(&whole(dp16), "cuda graph: True", "cuda graph: False"),
            |i| {
                let f = check(i.views).expect("slow");
                assert_eq!(f.lines, 1);
                assert!(f.tok_per_s_per_request < 0.33, "{f:?}");
            },
        );
    }

    #[test]
    fn a_healthy_decode_is_not_reported() {
        with_input(
            &whole("real/019-i5429-2x8h100-dsr1-dp-attn-queue990.log"),
            |i| assert_eq!(check(i.views), None),
        );
    }

    #[test]
    fn one_token_per_request_is_the_boundary() {
        // 128 running at 128 tok/s is exactly 1 tok/s each: not reported; 127 tok/s is.
        let lines = set_field(
            &set_field(&whole(NPU_NO_GRAPH), "#running-req", "128"),
            "gen throughput (token/s)",
            "128.00",
        );
        with_input(&lines, |i| assert_eq!(check(i.views), None));
        let lines = set_field(
            &set_field(&whole(NPU_NO_GRAPH), "#running-req", "128"),
            "gen throughput (token/s)",
            "127.00",
        );
        with_input(&lines, |i| assert!(check(i.views).is_some()));
    }
}
