//! Findings of compute and graphs: slow decode and prefill steps, prefill interference, CUDA
//! graphs, speculative decoding, untuned MoE kernels and prefix-cache reuse.

use super::{count, failure, finding, with_levers};
use crate::report::{CapacitySummary, Confidence, Figure, Finding, FindingKind, Lever, Unit};
use crate::rules::prefill_interference::MixedChunk;
use crate::rules::{
    cuda_graph, decode_compute, prefill_compute, prefill_interference, speculative, watchdog,
};
use crate::thresholds as th;

/// The finding of [`crate::rules::decode_compute`].
pub fn decode_compute(f: &decode_compute::Facts) -> Finding {
    let per_req = f.tok_per_s_per_request;
    if f.lines == 1 {
        // one instant: its window may hold a prefill, a retraction or idle time
        return finding(
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
    finding(
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

/// The finding of [`crate::rules::prefill_compute`].
pub fn prefill_compute(f: &prefill_compute::Facts) -> Finding {
    let p = &f.slow;
    finding(
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

/// The finding of [`crate::rules::prefill_interference`].
pub fn prefill_interference(f: &prefill_interference::Facts, cap: &CapacitySummary) -> Finding {
    let mut figures = vec![
        Figure::new(
            "decode throughput lost to interleaved prefills",
            f.loss,
            Unit::Fraction,
        ),
        Figure::new(
            "share of decode wall time with a prefill in it",
            f.share_with_prefill,
            Unit::Fraction,
        ),
        Figure::new(
            "gen throughput without prefills",
            f.clean_tok_per_s,
            Unit::TokPerS,
        ),
        Figure::new(
            "gen throughput with prefills",
            f.mixed_tok_per_s,
            Unit::TokPerS,
        ),
    ];
    if let Some(cp) = cap.chunked_prefill_size {
        figures.push(Figure::new("chunked_prefill_size", cp as f64, Unit::Tokens));
    }
    let mixed_chunk = f.mixed_chunk;
    let f = finding(
        FindingKind::PrefillInterference,
        "Prefills interrupt decode",
        format!(
            "On {}, decode intervals that contain a prefill batch generate {:.0} tok/s against {:.0} tok/s without one; over the run that costs {:.0}% of decode throughput. \
             {}",
            f.scheduler,
            f.mixed_tok_per_s,
            f.clean_tok_per_s,
            f.loss * 100.0,
            if cap.chunked_prefill_off {
                format!(
                    "Prefill passes stop decode while they run, and chunked prefill is off (chunked_prefill_size=-1): each prompt prefills whole in one pass. A --chunked-prefill-size {} spreads prefill over shorter passes{}; PD disaggregation removes the interference.",
                    match f.largest_prefill_tokens {
                        // a chunk splits only what is larger than it
                        Some(n) => format!(
                            "below the largest prefill pass here ({n} tokens; e.g. {})",
                            (n.next_power_of_two() / 4).clamp(256, 8192)
                        ),
                        None => "(e.g. 8192)".to_string(),
                    },
                    match mixed_chunk {
                        MixedChunk::Available => {
                            ", after which --enable-mixed-chunk can run them with decode"
                        }
                        MixedChunk::AlreadyOn =>
                            ", which --enable-mixed-chunk (on) then runs with decode",
                        MixedChunk::OffWithSpeculative => {
                            " (--enable-mixed-chunk is no lever: SGLang turns it off with speculative decoding)"
                        }
                    }
                )
            } else {
                match f.mixed_chunk {
                    MixedChunk::Available => "Prefill passes stop decode while they run (unless --enable-mixed-chunk). A smaller --chunked-prefill-size spreads long prompts thinner; PD disaggregation removes the interference.",
                    MixedChunk::AlreadyOn => "Prefill chunks already run with the decode batch (--enable-mixed-chunk is on), and the steps that carry one are still slower. A smaller --chunked-prefill-size spreads long prompts thinner; PD disaggregation removes the interference.",
                    MixedChunk::OffWithSpeculative => "Prefill passes stop decode while they run: with speculative decoding SGLang turns --enable-mixed-chunk off, so it is no lever here. A smaller --chunked-prefill-size spreads long prompts thinner; PD disaggregation removes the interference.",
                }
                .to_string()
            }
        ),
        figures,
        f.evidence.clone().into_iter().collect(),
        Confidence::Medium,
    );
    // mixed chunks need chunked prefill: with it off, the lever is turning it on
    let levers: &[Lever] = if cap.chunked_prefill_off || mixed_chunk != MixedChunk::Available {
        &[Lever::ChunkedPrefillSize]
    } else {
        &[Lever::EnableMixedChunk, Lever::ChunkedPrefillSize]
    };
    with_levers(f, levers)
}

/// [`crate::rules::prefix_reuse`].
pub fn prefix_reuse(f: &crate::rules::prefix_reuse::Facts) -> Finding {
    finding(
        FindingKind::PrefixReuse,
        "Most prompt tokens come from the prefix cache",
        format!(
            "{:.0}% of the {} prompt tokens the prefill lines admitted were served from the radix (prefix) cache (#cached-token): only {} were computed. Repeated prefixes (a system prompt, earlier turns, an agent's context) cost no prefill and no new KV slots; keep the radix cache on, and route a conversation's turns to the same replica.",
            f.share() * 100.0,
            f.new_tokens + f.cached_tokens,
            f.new_tokens
        ),
        vec![
            Figure::new(
                "prompt tokens from the prefix cache",
                f.cached_tokens as f64,
                Unit::Tokens,
            ),
            Figure::new("prompt tokens computed", f.new_tokens as f64, Unit::Tokens),
            Figure::new("share from the prefix cache", f.share(), Unit::Fraction),
        ],
        Vec::new(),
        Confidence::High,
    )
}

/// [`crate::rules::moe_config`].
pub fn moe_config(f: &watchdog::Facts) -> Finding {
    let mut out = failure(
        f,
        FindingKind::MoeConfigUntuned,
        "MoE kernels run with default configs, not tuned for this GPU",
        "SGLang found no tuned fused-MoE kernel config for this GPU, expert shape and dtype, and runs every MoE layer with a generic default, which can be several times slower. Tune the kernels for this GPU (SGLang's tuning_fused_moe_triton.py writes the file the warning names).",
    );
    out.confidence = Confidence::Medium;
    with_levers(out, &[Lever::MoeKernelConfig])
}

/// The finding of [`crate::rules::cuda_graph`].
pub fn cuda_graph(f: &cuda_graph::Facts) -> Finding {
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
    use cuda_graph::Pattern;
    let detail = match f.pattern {
        Pattern::Disabled => format!(
            "{:.0}% of decode batches of {} ran without a captured graph: the server was started with disable_cuda_graph=True, so every decode step runs eagerly. \
             Remove --disable-cuda-graph (graphs cost some memory and start-up time) unless it was set to work around a bug.",
            f.share * 100.0,
            f.scheduler
        ),
        Pattern::NeverRan { smallest } => format!(
            "No decode batch of {} ran as a CUDA graph, not even of {smallest} request{}: graphs are off (--disable-cuda-graph, or this backend or model did not capture them), so every step pays its kernel launches; --cuda-graph-max-bs changes nothing here. Turn graphs on (remove --disable-cuda-graph; check the start-up lines for why capture was skipped).",
            f.scheduler,
            if smallest == 1 { "" } else { "s" }
        ),
        Pattern::NeverRanLarge { smallest } => format!(
            "No decode batch of {} ran as a CUDA graph; the smallest ran {smallest} requests: either graphs are off (--disable-cuda-graph, or not captured on this backend), or every batch was larger than the captured sizes (the start-up's `Capture cuda graph begin` line lists them). Turn graphs on, or raise --cuda-graph-max-bs to the running batch size.",
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
            "Decode runs without CUDA graphs",
            detail,
            figures,
            f.evidence.clone().into_iter().collect(),
            Confidence::Medium,
        ),
        match f.pattern {
            cuda_graph::Pattern::Disabled | cuda_graph::Pattern::NeverRan { .. } => {
                &[Lever::DisableCudaGraph]
            }
            cuda_graph::Pattern::NeverRanLarge { .. } => {
                &[Lever::DisableCudaGraph, Lever::CudaGraphMaxBs]
            }
            cuda_graph::Pattern::MixedSteps => &[],
            cuda_graph::Pattern::AboveLargest => &[Lever::CudaGraphMaxBs],
        },
    )
}

/// The finding of [`crate::rules::speculative`].
pub fn speculative(f: &speculative::Facts) -> Finding {
    let a = f.accept_len;
    let over = if f.lines == 1 {
        "one decode line (one sample)".to_string()
    } else {
        format!(
            "{} decode lines (range {:.2}-{:.2})",
            count(f.lines as u64),
            a.lowest,
            a.highest
        )
    };
    let mut extra = Vec::new();
    if let Some(r) = f.accept_rate {
        extra.push(format!("accept rate {:.2}", r.median));
    }
    if let Some(c) = f.cap_len {
        extra.push(format!("cap len {:.2}", c.median));
    }
    let extra = if extra.is_empty() {
        String::new()
    } else {
        format!("; {}", extra.join(", "))
    };
    let cost = match (f.num_steps, f.draft_steps_per_token) {
        (Some(steps), Some(per_token)) => format!(
            ", for {steps} draft-model forward{} per verify step: {per_token:.2} draft forwards per output token",
            if steps == 1 { "" } else { "s" }
        ),
        _ => String::new(),
    };
    let (title, verdict, confidence) = if f.no_gain {
        (
            format!(
                "Speculative decoding gains nothing: accept length ~{:.2}",
                a.median
            ),
            "Almost every draft token is rejected, so the draft forwards and the wider verify batch are pure cost: decoding without speculation would be at least as fast. Use a draft model trained for this target (and its quantisation), lower --speculative-num-steps, or drop --speculative-algorithm.",
            Confidence::Medium,
        )
    } else if f.low_accept_rate {
        (
            format!(
                "Speculative decoding gains little: accept length ~{:.2}, accept rate {:.2}",
                a.median,
                f.accept_rate.map_or(0.0, |r| r.median)
            ),
            "Most drafted tokens are thrown away (low accept rate), so each kept token costs several draft tokens and a wider verify batch: the gain is small. Fewer draft tokens (--speculative-num-steps, --speculative-num-draft-tokens) may decode as fast for less work; a draft model trained for this target would accept more.",
            Confidence::Medium,
        )
    } else {
        (
            format!(
                "Speculative decoding yields ~{:.2} tokens per target forward",
                a.median
            ),
            "The target model runs about once per that many output tokens, which is the gain before the draft forwards' cost; more draft steps help only while the accept length keeps rising with them.",
            Confidence::High,
        )
    };
    let mut figures = vec![
        Figure::new("median accept length", a.median, Unit::Tokens),
        Figure::new("lowest accept length", a.lowest, Unit::Tokens),
        Figure::new("highest accept length", a.highest, Unit::Tokens),
        Figure::new(
            "decode lines with accept length",
            f.lines as f64,
            Unit::Lines,
        ),
    ];
    if let Some(r) = f.accept_rate {
        figures.push(Figure::new("median accept rate", r.median, Unit::Fraction));
    }
    if let Some(c) = f.cap_len {
        figures.push(Figure::new("median cap length", c.median, Unit::Tokens));
    }
    if let Some(d) = f.draft_steps_per_token {
        figures.push(Figure::new(
            "draft forwards per output token",
            d,
            Unit::Ratio,
        ));
    }
    let levers: &[Lever] = if f.no_gain || f.low_accept_rate {
        &[Lever::SpeculativeDecoding]
    } else {
        &[]
    };
    let falls = match f.falls {
        Some(t) => {
            figures.push(Figure::new(
                "median accept length, earlier half",
                t.earlier,
                Unit::Tokens,
            ));
            figures.push(Figure::new(
                "median accept length, later half",
                t.later,
                Unit::Tokens,
            ));
            let context = match (t.earlier_tokens_per_req, t.later_tokens_per_req) {
                (Some(x), Some(y)) => format!(
                    ", while the KV tokens per running request went from {} to {}",
                    count(x.round() as u64),
                    count(y.round() as u64)
                ),
                _ => String::new(),
            };
            format!(
                " The accept length falls over the log: a median of {:.2} on the earlier {} decode lines, {:.2} on the later {} ({:+.0}%){context}. \
                 The draft predicts the later text worse (a longer context, another kind of output), so each target forward yields fewer tokens and decode slows with it.",
                t.earlier,
                t.lines_per_half,
                t.later,
                t.lines_per_half,
                (t.later / t.earlier - 1.0) * 100.0
            )
        }
        None => String::new(),
    };
    let out = finding(
        FindingKind::SpeculativeDecoding,
        title,
        format!(
            "Accept length (SGLang's accept len: tokens kept per request per verify step, the bonus token included) has a median of {:.2} over {over}{extra}. Each target-model forward yields ~{:.2} tokens per running request instead of 1{cost}. {verdict}{falls}",
            a.median, a.median
        ),
        figures,
        vec![f.evidence.clone()],
        if f.lines == 1 {
            Confidence::Low
        } else {
            confidence
        },
    );
    with_levers(out, levers)
}
