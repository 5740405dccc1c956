//! # `cuda_graph`: decode runs without CUDA graphs
//!
//! **What it detects.** A scheduler on which at least [`th::NO_GRAPH_SHARE`] of the decode
//! lines report `cuda graph: False` (or `npu graph` / `cpu graph`), with the largest batch that
//! did run as a graph, whether the server was started with `disable_cuda_graph=True`, and
//! whether its `Engine startup timings` line says the decode graphs took 0.00 s to capture
//! (none captured: [`Pattern::NotCaptured`]).
//!
//! **Why it matters.** Batches larger than `--cuda-graph-max-bs` (or all of them, with graphs
//! disabled) run eagerly, and each decode step pays the kernel-launch overhead: slower steps at
//! the same batch.
//!
//! **Evidence it needs.** Decode lines that print the graph flag; `server_args` for the
//! disabled case; the start-up timings line for the not-captured one.
//!
//! **Three situations, three advices** ([`Pattern`]): graphs disabled or never run (no batch,
//! however small, ran as a graph: turn them on; `--cuda-graph-max-bs` changes nothing); graphs
//! dropped only at batch sizes that ran as graphs elsewhere (those steps were mixed with a
//! prefill: another DP rank's under DP attention, or `--enable-mixed-chunk`; nothing to
//! raise); graphs dropped only above the largest batch that ran as one (raise
//! `--cuda-graph-max-bs`, or add sizes to an explicit `--cuda-graph-bs`).
//!
//! **What to change.** As the pattern says; remove `--disable-cuda-graph` unless it works
//! around a bug.
//!
//! **Without batch lines** ([`startup_coverage`]): the startup fixes how many decode requests
//! run as a graph (`cuda_graph_max_bs` in `server_args`, else the largest `bs` of the
//! `Capture … cuda graph begin` line) and how many the scheduler admits
//! (`max_running_requests`); graphs covering at most [`th::GRAPH_COVERAGE_SHARE`] of the cap
//! mean every batch above them will decode eagerly once load comes.
//!
//! **Source.** SGLang `model_executor/cuda_graph_runner.py` (`can_run`: batch size ≤ the
//! largest captured), `scheduler_metrics_mixin.py` (`cuda graph:` field); spec §2.1.

use crate::evidence::SchedulerKey;
use crate::narrative::words::{finding, with_levers};
use crate::report::{Confidence, Figure, Finding, FindingKind, Lever, SourceRange, Unit};
use crate::rules::{Input, Rule};
use crate::thresholds as th;

/// Which batches ran without a graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// `disable_cuda_graph=True` in the server arguments.
    Disabled,
    /// The start-up's timings line says the decode graphs took 0.00 s to capture: none was
    /// captured (`Engine startup timings (s): … cuda_graph={…, decode=0.00}`).
    NotCaptured,
    /// No decode batch ran as a graph, down to this many requests, a size SGLang captures
    /// whenever graphs are on (at most [`th::ALWAYS_CAPTURED_BS`], or at most the captured
    /// sizes the start-up names): graphs are off (disabled where the log does not show it, or
    /// not captured on this backend).
    NeverRan {
        /// The smallest batch that ran eagerly (requests).
        smallest: u64,
    },
    /// No decode batch ran as a graph, but the smallest was larger than the sizes SGLang always
    /// captures and the captured sizes are not in the log: graphs are off, or every batch was
    /// larger than them.
    NeverRanLarge {
        /// The smallest batch that ran eagerly (requests).
        smallest: u64,
    },
    /// Batches ran eagerly at sizes that also ran as graphs: mixed with a prefill, not too
    /// large for the captured sizes.
    MixedSteps,
    /// Only batches larger than every batch that ran as a graph ran eagerly.
    AboveLargest,
}

/// What the rule saw on the first scheduler that qualifies.
#[derive(Clone, Debug, PartialEq)]
pub struct Facts {
    /// Which batches ran without a graph.
    pub pattern: Pattern,
    /// The scheduler.
    pub scheduler: SchedulerKey,
    /// Share of its decode lines without a graph (fraction).
    pub share: f64,
    /// The largest batch that ran with a graph (requests).
    pub largest_with_graph: Option<u64>,
    /// Whether `server_args` has `disable_cuda_graph=True`.
    pub disabled: bool,
    /// `chunked_prefill_size` (tokens per prefill pass) when known: with mixed steps, the
    /// smaller it is, the more passes a prompt takes and the more decode steps run eagerly.
    pub chunked_prefill_size: Option<u64>,
    /// Its batch lines.
    pub evidence: Option<SourceRange>,
    /// The decode lines print `npu graph`: an Ascend build, whose graphs are NPU graphs
    /// (still switched by `--disable-cuda-graph`).
    pub npu: bool,
}

/// The startup's graph coverage against the running cap.
#[derive(Clone, Debug, PartialEq)]
pub struct Coverage {
    /// The largest decode batch captured as a graph (requests).
    pub graph_max_bs: u64,
    /// `max_running_requests` (requests per DP rank).
    pub max_running_requests: u64,
    /// KV pool (tokens per DP rank), if known.
    pub pool_tokens: Option<u64>,
}

/// The largest decode batch run as a CUDA graph, from `server_args` (`cuda_graph_max_bs`, else
/// the largest of `cuda_graph_bs`, a list in `server_args` or space-separated in a launch
/// command) or the capture line's batch sizes.
pub fn graph_max_bs(input: &Input<'_>) -> Option<u64> {
    let args = &input.ev.startup.server_args;
    args.get("cuda_graph_max_bs")
        .and_then(|v| v.trim().parse().ok())
        .or_else(|| {
            args.get("cuda_graph_bs")?
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|n| n.parse::<u64>().ok())
                .max()
        })
        .or(input.ev.incidents.captured_graph_max_bs)
}

/// Whether the graphs' batch sizes were given as an explicit list (`--cuda-graph-bs 8 16 24`,
/// `cuda_graph_bs=[…]` in `server_args`): SGLang then captures exactly those sizes and ignores
/// `--cuda-graph-max-bs`, so a larger batch needs a larger size in the list.
pub fn graph_sizes_listed(input: &Input<'_>) -> bool {
    input
        .ev
        .startup
        .server_args
        .get("cuda_graph_bs")
        .is_some_and(|v| v.bytes().any(|b| b.is_ascii_digit()))
}

/// The rule for a startup without batch lines (see the module doc).
pub fn startup_coverage(input: &Input<'_>) -> Option<Coverage> {
    let graph_max_bs = graph_max_bs(input)?;
    let max_running_requests = input.capacity.max_running_requests?;
    (max_running_requests > 0
        && graph_max_bs as f64 <= th::GRAPH_COVERAGE_SHARE * max_running_requests as f64)
        .then_some(Coverage {
            graph_max_bs,
            max_running_requests,
            pool_tokens: input.capacity.max_total_num_tokens,
        })
}

/// The rule.
pub fn check(input: &Input<'_>) -> Option<Facts> {
    let disabled = input
        .ev
        .startup
        .server_args
        .get("disable_cuda_graph")
        .is_some_and(|v| v.trim() == "True");
    input.views.iter().find_map(|v| {
        let d = v.tl.decode.samples();
        let total = v.tl.decode.pushed();
        let without = v.tl.agg.decode_without_graph;
        if total == 0 || without == 0 || !d.iter().any(|s| s.graph.is_some()) {
            return None;
        }
        let share = without as f64 / total as f64;
        let largest_with_graph = d
            .iter()
            .filter(|s| s.graph == Some(true))
            .filter_map(|s| s.running)
            .max();
        let eager = || {
            d.iter()
                .filter(|s| s.graph == Some(false))
                .filter_map(|s| s.running)
        };
        let captured = graph_max_bs(input);
        // no decode graph captured at start-up: every decode step runs eagerly, whatever its batch
        let not_captured = input.ev.startup.graph_decode_capture_s == Some(0.0);
        let pattern = match largest_with_graph {
            _ if disabled => Pattern::Disabled,
            None if not_captured => Pattern::NotCaptured,
            None => {
                let smallest = eager().min().unwrap_or(0);
                match captured {
                    Some(c) if smallest > c => Pattern::AboveLargest,
                    Some(_) => Pattern::NeverRan { smallest },
                    None if smallest <= th::ALWAYS_CAPTURED_BS => Pattern::NeverRan { smallest },
                    None => Pattern::NeverRanLarge { smallest },
                }
            }
            Some(g) if eager().any(|r| r <= g) => Pattern::MixedSteps,
            Some(_) => Pattern::AboveLargest,
        };
        (share >= th::NO_GRAPH_SHARE).then(|| Facts {
            pattern,
            scheduler: v.key,
            share,
            largest_with_graph,
            disabled,
            chunked_prefill_size: input.capacity.chunked_prefill_size,
            evidence: v.tl.first.map(|f| input.span(f, v.tl.last.unwrap_or(f))),
            npu: d.iter().any(|s| s.npu),
        })
    })
}

/// The rule as [`super::FINDING_RULES`] runs it: [`check`], then the finding in its words.
#[derive(Clone, Copy, Debug)]
pub struct CudaGraph;

impl Rule for CudaGraph {
    const NAME: &'static str = "cuda_graph";
    type Facts = Facts;

    fn check(input: &Input<'_>) -> impl IntoIterator<Item = Facts> {
        check(input)
    }

    fn finding(f: &Facts, _input: &Input<'_>) -> Finding {
        // an Ascend build's graphs are NPU graphs, switched by the same flags
        let (dev, a_dev) = if f.npu {
            ("NPU", "an NPU")
        } else {
            ("CUDA", "a CUDA")
        };
        let mut figures = vec![Figure::new(
            "share of decode lines without a graph",
            f.share,
            Unit::Fraction,
        )];
        if let Some(m) = f.largest_with_graph {
            figures.push(Figure::new(
                "largest batch that ran with a graph",
                m as f64,
                Unit::Requests,
            ));
        }
        let detail = match f.pattern {
            Pattern::Disabled => format!(
                "{:.0}% of decode batches of {} ran without a captured graph: the server was started with disable_cuda_graph=True, so every decode step runs eagerly. \
                 Remove --disable-cuda-graph (graphs cost some memory and start-up time) unless it was set to work around a bug.",
                f.share * 100.0,
                f.scheduler
            ),
            Pattern::NotCaptured => format!(
                "No decode batch of {} ran as {a_dev} graph, and the start-up's timings line says the decode graphs took 0.00 s to capture: none was captured, so every decode step pays its kernel launches whatever its batch; --cuda-graph-max-bs changes nothing here. Turn graphs on (remove --disable-cuda-graph if it is set; the start-up lines say why capture was skipped).",
                f.scheduler
            ),
            Pattern::NeverRan { smallest } => format!(
                "No decode batch of {} ran as {a_dev} graph, not even of {smallest} request{}: graphs are off (--disable-cuda-graph, or this backend or model did not capture them), so every step pays its kernel launches; --cuda-graph-max-bs changes nothing here. Turn graphs on (remove --disable-cuda-graph; check the start-up lines for why capture was skipped).",
                f.scheduler,
                if smallest == 1 { "" } else { "s" }
            ),
            Pattern::NeverRanLarge { smallest } => format!(
                "No decode batch of {} ran as {a_dev} graph; the smallest ran {smallest} requests: either graphs are off (--disable-cuda-graph, or not captured on this backend), or every batch was larger than the captured sizes (the start-up's graph capture line lists them). Turn graphs on, or raise --cuda-graph-max-bs to the running batch size.",
                f.scheduler
            ),
            Pattern::MixedSteps => format!(
                "{:.0}% of decode batches of {} ran without a graph, at batch sizes that also ran as graphs (up to {} requests): those steps were mixed with a prefill (under DP attention another rank's prefill makes every rank step eagerly; or --enable-mixed-chunk), not too large for the captured sizes, so --cuda-graph-max-bs changes nothing; fewer or larger prefill passes (a larger chunked prefill size{}) leave more pure decode steps.",
                f.share * 100.0,
                f.scheduler,
                f.largest_with_graph.unwrap_or(0),
                f.chunked_prefill_size
                    .map(|c| format!(
                        "; the chunked prefill size is {c} tokens here, so a prompt takes one prefill pass per {c} tokens"
                    ))
                    .unwrap_or_default()
            ),
            Pattern::AboveLargest => format!(
                "{:.0}% of decode batches of {} ran without a captured graph (graphs were used up to {} requests): batches larger than the captured sizes run eagerly and each step is slower. Raise --cuda-graph-max-bs to the running batch size if memory allows.",
                f.share * 100.0,
                f.scheduler,
                f.largest_with_graph.unwrap_or(0)
            ),
        };
        with_levers(
            finding(
                FindingKind::NoCudaGraph,
                format!("Decode runs without {dev} graphs"),
                detail,
                figures,
                f.evidence.clone().into_iter().collect(),
                Confidence::Medium,
            ),
            match f.pattern {
                Pattern::Disabled | Pattern::NotCaptured | Pattern::NeverRan { .. } => {
                    &[Lever::DisableCudaGraph]
                }
                Pattern::NeverRanLarge { .. } => &[Lever::DisableCudaGraph, Lever::CudaGraphMaxBs],
                Pattern::MixedSteps => &[],
                Pattern::AboveLargest => &[Lever::CudaGraphMaxBs],
            },
        )
    }
}

/// The startup's CUDA-graph coverage ([`startup_coverage`]) as a registered rule: judged on a
/// log of startup lines only ([`Input::no_decode_lines`]), where the capacity the startup
/// fixed is what can be judged.
#[derive(Clone, Copy, Debug)]
pub struct StartupCoverage;

impl Rule for StartupCoverage {
    const NAME: &'static str = "cuda_graph";
    type Facts = Coverage;

    fn check(input: &Input<'_>) -> impl IntoIterator<Item = Coverage> {
        input
            .no_decode_lines()
            .then(|| startup_coverage(input))
            .flatten()
    }

    fn finding(c: &Coverage, _input: &Input<'_>) -> Finding {
        Finding {
            kind: FindingKind::CudaGraphCoverage,
            title: format!(
                "Decode CUDA graphs cover batches up to {} requests; the scheduler admits {}",
                c.graph_max_bs, c.max_running_requests
            ),
            detail: format!(
                "A decode batch larger than {} runs eagerly (without a CUDA graph), each step paying the kernel launches; under load the running batch grows past it{}. Raise --cuda-graph-max-bs towards the batch you expect (memory allows it on most GPUs), or cap --max-running-requests.",
                c.graph_max_bs,
                c.pool_tokens
                    .map(|p| format!(" (the pool holds {p} tokens)"))
                    .unwrap_or_default()
            ),
            figures: vec![
                Figure::new("cuda_graph_max_bs", c.graph_max_bs as f64, Unit::Requests),
                Figure::new(
                    "max_running_requests",
                    c.max_running_requests as f64,
                    Unit::Requests,
                ),
            ],
            evidence: vec![],
            confidence: Confidence::Medium,
            levers: vec![Lever::CudaGraphMaxBs, Lever::MaxRunningRequests],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const L40: &str = "real-2/120-i33483-l40-startup-cuda-graph-max-bs32-vs-max-running-4096.log";

    #[test]
    fn graphs_up_to_32_for_a_cap_of_4096() {
        crate::rules::testing::with_input(&crate::rules::testing::whole(L40), |i| {
            let c = startup_coverage(i).expect("coverage");
            assert_eq!(
                (c.graph_max_bs, c.max_running_requests, c.pool_tokens),
                (32, 4096, Some(2_980_168))
            );
        });
    }

    #[test]
    fn graphs_for_a_third_of_the_cap_are_enough() {
        let text = crate::rules::testing::edit(
            &crate::rules::testing::whole(L40),
            "max_running_requests=4096",
            "max_running_requests=96",
        );
        crate::rules::testing::with_input(&text, |i| assert_eq!(startup_coverage(i), None));
    }
    use crate::rules::testing::{edit, only, whole, with_input};

    const NPU: &str = "real/058-pr29853-npu-grok2-128running-14tps-no-graph.log";
    const RDNA: &str = "real-long/rdna4-2xr9700-qwen3coder-tp2-single-stream.log";

    #[test]
    fn every_decode_batch_ran_eagerly() {
        with_input(&whole(NPU), |i| {
            let f = check(i).expect("no graph");
            assert_eq!(
                (f.share, f.largest_with_graph, f.disabled),
                (1.0, None, false)
            );
        });
    }

    #[test]
    fn one_request_at_a_time_without_a_graph_means_graphs_are_off() {
        // real-4/105: a single stream on two R9700s, every decode line `cuda graph: False`
        // at 1 running request: no max-bs to raise
        with_input(
            &whole("real-4/105-amd-2x-r9700-rdna4-tp2-coder30b-awq-no-graph-23tps.log"),
            |i| {
                let f = check(i).expect("no graph");
                assert_eq!(f.pattern, Pattern::NeverRan { smallest: 1 });
            },
        );
    }

    #[test]
    fn graphs_dropped_at_sizes_that_ran_as_graphs_are_mixed_steps() {
        // real-4/121: 24 running ran both with and without a graph (DP attention: another
        // rank prefilling), and 24 is in --cuda-graph-bs 16 20 24
        with_input(
            &whole(
                "real-4/121-npu-2node-qwen3-480b-dp-attn-chunk256-prefill-bound-cap24-graph-off.log",
            ),
            |i| {
                let f = check(i).expect("some steps without a graph");
                assert_eq!(f.pattern, Pattern::MixedSteps);
                assert_eq!(f.largest_with_graph, Some(24));
            },
        );
    }

    #[test]
    fn graphs_dropped_only_above_the_largest_graph() {
        // real-3/006: False at 46 and 36 running, True from 28 down
        with_input(
            &whole("real-3/006-pr13023-trailing-comma-cuda-graph-false.log"),
            |i| {
                let f = check(i).expect("large batches without a graph");
                assert_eq!(f.pattern, Pattern::AboveLargest);
                assert_eq!(f.largest_with_graph, Some(28));
            },
        );
        // boundary: one eager step at the largest graph's own size is a mixed step
        with_input(
            &edit(
                &whole("real-3/006-pr13023-trailing-comma-cuda-graph-false.log"),
                "#running-req: 46,",
                "#running-req: 28,",
            ),
            |i| assert_eq!(check(i).map(|f| f.pattern), Some(Pattern::MixedSteps)),
        );
    }

    #[test]
    fn no_graph_at_a_large_batch_is_not_told_apart_without_the_captured_sizes() {
        // real/058: its one decode line runs 128 requests eagerly, and the start-up lines are
        // not in the excerpt
        with_input(&whole(NPU), |i| {
            assert_eq!(
                check(i).map(|f| f.pattern),
                Some(Pattern::NeverRanLarge { smallest: 128 })
            );
        });
        // with a capture line listing sizes up to 64, 128 is above them
        let text = format!(
            "[2026-07-01 15:19:00 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=20.00 GB, bs=[1, 2, 4, 8, 16, 32, 64]\n{}",
            whole(NPU)
        );
        with_input(&text, |i| {
            assert_eq!(check(i).map(|f| f.pattern), Some(Pattern::AboveLargest));
        });
    }

    #[test]
    fn graphs_that_ran_are_no_finding() {
        with_input(
            &edit(&whole(NPU), "npu graph: False", "npu graph: True"),
            |i| assert_eq!(check(i), None),
        );
    }

    #[test]
    fn disabled_graphs_are_told_apart() {
        let lines = whole(RDNA);
        assert!(lines.contains("disable_cuda_graph=True"));
        with_input(&lines, |i| assert!(check(i).is_some_and(|f| f.disabled)));
        // Decode lines alone: the flag cannot be seen.
        with_input(&only(&lines, "Decode batch"), |i| {
            assert!(check(i).is_some_and(|f| !f.disabled))
        });
    }

    /// real-3/021 (an Ascend build: `npu graph: False`): its graphs are NPU graphs, and the
    /// finding says so; a CUDA log's say CUDA.
    #[test]
    fn an_ascend_build_runs_npu_graphs() {
        let npu =
            crate::rules::testing::whole("real-3/021-pr25960-npu-column-truncated-malformed.log");
        crate::rules::testing::with_input(&npu, |i| {
            let f = check(i).expect("no graph");
            assert!(f.npu);
            let w = CudaGraph::finding(&f, i);
            assert_eq!(w.title, "Decode runs without NPU graphs");
            assert!(w.detail.contains("ran as an NPU graph"), "{}", w.detail);
        });
        let cuda = npu.replace("npu graph", "cuda graph");
        crate::rules::testing::with_input(&cuda, |i| {
            let f = check(i).expect("no graph");
            assert!(!f.npu);
            assert_eq!(
                CudaGraph::finding(&f, i).title,
                "Decode runs without CUDA graphs"
            );
        });
    }

    /// real-long rtx4090 (v0.5.x): its timings line says the decode graphs took 0.91 s to
    /// capture and its decode lines ran as graphs up to 24 requests. With every decode line
    /// eager and the line saying 0.00 s, no decode graph was captured (`NotCaptured`); at
    /// 0.91 s the same eager lines are graphs off or not used (`NeverRan`).
    #[test]
    fn a_decode_capture_of_no_time_is_no_graph() {
        let log = "real-long/rtx4090-qwen3-4b-kv-retraction.log";
        let eager = edit(&whole(log), "cuda graph: True", "cuda graph: False");
        let none = edit(&eager, "decode=0.91,", "decode=0.00,");
        with_input(&none, |i| {
            assert_eq!(i.ev.startup.graph_decode_capture_s, Some(0.0));
            let f = check(i).expect("no graph");
            assert_eq!(f.pattern, Pattern::NotCaptured);
            let w = CudaGraph::finding(&f, i);
            assert!(w.detail.contains("took 0.00 s to capture"), "{}", w.detail);
            assert_eq!(w.levers, vec![Lever::DisableCudaGraph]);
        });
        with_input(&eager, |i| {
            assert_eq!(i.ev.startup.graph_decode_capture_s, Some(0.91));
            assert!(matches!(
                check(i).map(|f| f.pattern),
                Some(Pattern::NeverRan { .. })
            ));
        });
        // as logged: graphs up to 24 requests, larger batches eager
        with_input(&whole(log), |i| {
            assert_eq!(check(i).map(|f| f.pattern), Some(Pattern::AboveLargest))
        });
    }
}
