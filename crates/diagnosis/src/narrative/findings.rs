//! Findings in words: one function per rule, from its facts.

use super::{bottleneck_label, confidence_pct, count, interval};
use crate::evidence::pools::{PoolKind, PoolRoom};
use crate::evidence::view::SchedulerView;
use crate::report::{
    BenchmarkRun, Bottleneck, CapacityModel, CapacitySummary, ClientSummary, Confidence, Figure,
    Finding, FindingKind, Lever, RetractionSummary, SampleAdequacy, SourceRange, Unit,
};
use crate::rules::{
    bench_concurrency_limit, bench_failures, bench_queueing, client_gap, cuda_graph,
    decode_compute, dp_imbalance, held_admission, idle_window, kv_cache_bound, littles_law,
    prefill_compute, prefill_interference, prefill_limit, ramp_only, retraction, running_cap,
    speculative, stall, tiny_pool, watchdog,
};
use crate::thresholds as th;
use crate::verdict::Reason;

/// `f` with the settings it says to change.
fn with_levers(mut f: Finding, levers: &[Lever]) -> Finding {
    f.levers = levers.to_vec();
    f
}

fn finding(
    kind: FindingKind,
    title: impl Into<String>,
    detail: impl Into<String>,
    figures: Vec<Figure>,
    evidence: Vec<SourceRange>,
    confidence: Confidence,
) -> Finding {
    Finding {
        kind,
        title: title.into(),
        detail: detail.into(),
        figures,
        evidence,
        confidence,
        levers: Vec::new(),
    }
}

/// The finding that names a scheduler's bottleneck, from the reason its verdict rests on.
/// `None` for verdicts without one of their own (stall, compute, inconclusive).
pub fn bottleneck(
    v: &SchedulerView<'_>,
    reason: &Reason,
    cap: &CapacitySummary,
    retr: &RetractionSummary,
    evidence: Option<SourceRange>,
) -> Option<Finding> {
    let mut figures = Vec::new();
    // with DP ranks, the figures are the rank's behind the verdict: say which
    let of = |name: &str| match v.key.dp {
        Some(_) => format!("{name} on {}", v.key),
        None => name.to_string(),
    };
    if let Some(s) = v.queued_share {
        figures.push(Figure::new(
            of(if v.queue_from_decode {
                "share of decode lines with a queue"
            } else {
                "share of prefill lines with a queue"
            }),
            s,
            Unit::Fraction,
        ));
    }
    if let Some(u) = v.median_usage() {
        figures.push(Figure::new(of("median token usage"), u, Unit::Fraction));
    }
    match reason {
        Reason::PdTransfer(f) => {
            figures.push(Figure::new(
                of("median #prealloc-req"),
                f.prealloc_median as f64,
                Unit::Requests,
            ));
            figures.push(Figure::new(
                of("largest #prealloc-req"),
                f.prealloc_max as f64,
                Unit::Requests,
            ));
        }
        Reason::RunningCap(running_cap::Limit::Configured { cap, share }) => {
            figures.push(Figure::new(
                "max_running_requests",
                *cap as f64,
                Unit::Requests,
            ));
            figures.push(Figure::new(
                of("share of batch lines at the cap"),
                *share,
                Unit::Fraction,
            ));
        }
        Reason::RunningCap(running_cap::Limit::MambaSlots { share }) => figures.push(Figure::new(
            of(&format!(
                "share of decode lines with mamba usage >= {}",
                th::MAMBA_FULL_USAGE
            )),
            *share,
            Unit::Fraction,
        )),
        Reason::RunningCap(running_cap::Limit::Plateau { share, .. }) => figures.push(Figure::new(
            of("share of lines at the running plateau"),
            *share,
            Unit::Fraction,
        )),
        Reason::PrefillLimit(f) => figures.push(Figure::new(
            of("share of prefill batches at the size limit"),
            f.share_at_limit,
            Unit::Fraction,
        )),
        _ => {}
    }
    if let Some(x) = v.running.median {
        figures.push(Figure::new(
            of("median running requests"),
            x,
            Unit::Requests,
        ));
    }
    if let Some(x) = v.queued.median {
        figures.push(Figure::new(of("median queued requests"), x, Unit::Requests));
    }
    if let Some(x) = v.usage.p90 {
        figures.push(Figure::new(of("p90 token usage"), x, Unit::Fraction));
    }
    if let Some(x) = v.gen_tps.mean {
        figures.push(Figure::new(
            format!("mean gen throughput of {}", v.key),
            x,
            Unit::TokPerS,
        ));
    }
    let waits = v.queued.median.is_some_and(|q| q >= 1.0);
    let pd_decode = v.is_pd_decode();
    let mamba_full = matches!(
        reason,
        Reason::RunningCap(running_cap::Limit::MambaSlots { .. })
    ) || v
        .tl
        .agg
        .max_mamba_usage
        .is_some_and(|m| m >= th::MAMBA_FULL_USAGE);
    let levers: Vec<Lever> = match reason {
        Reason::KvCache(kv_cache_bound::Pattern::FewLongRequests(_)) => vec![Lever::MaxTokens],
        Reason::KvCache(_) => vec![
            Lever::MemFractionStatic,
            Lever::KvCacheDtype,
            Lever::MaxTokens,
        ],
        Reason::RunningCap(_) => {
            let mut l = vec![Lever::MaxRunningRequests];
            if mamba_full {
                l.push(Lever::MaxMambaCacheSize);
            }
            if running_cap::pool_near_full(v) {
                l.extend([Lever::MemFractionStatic, Lever::KvCacheDtype]);
            }
            l
        }
        Reason::PrefillLimit(f) if f.budget_below_prompt.is_some() => vec![Lever::MaxPrefillTokens],
        // the budget is not what caps a pass at one request
        Reason::PrefillLimit(f) if f.one_per_pass.is_some() => Vec::new(),
        Reason::PrefillLimit(_) => vec![Lever::ChunkedPrefillSize, Lever::MaxPrefillTokens],
        Reason::Conservative(_) => vec![Lever::ScheduleConservativeness, Lever::MaxTokens],
        // a PD decode node's load comes from the prefill side, not from a client setting
        Reason::ClientBound if pd_decode => Vec::new(),
        Reason::ClientBound => vec![Lever::ClientConcurrency],
        _ => Vec::new(),
    };
    let (kind, title, detail, confidence) = match reason {
        Reason::KvCache(kv_cache_bound::Pattern::FillsAsAdmitted(f)) => {
            figures.push(Figure::new("requests holding the pool at the last line", f.holding as f64, Unit::Requests));
            figures.push(Figure::new("requests still to come at the last line", f.to_come as f64, Unit::Requests));
            figures.push(Figure::new("token usage all of them would need", f.projected_usage, Unit::Fraction));
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
        Reason::KvCache(kv_cache_bound::Pattern::FewLongRequests(l)) => {
            figures.push(Figure::new("KV tokens held per running request", l.tokens_per_request, Unit::Tokens));
            (
                FindingKind::KvCacheBound,
                "KV-cache bound: a few long requests hold the pool".to_string(),
                format!(
                    "Token usage reaches {:.2} with only ~{:.0} requests running and nothing waiting: each holds ~{} tokens of KV (prompt plus output so far). \
                     The pool is full because these requests are long, not because many run, so more KV slots add no throughput while nothing waits; they only let the same requests grow longer before a retraction. \
                     If these are generations that run away (no stop token), cap max_tokens near the real completion lengths; if the prompts are this long, only more KV memory or more GPUs run more of them at once.",
                    v.usage.p90.or(v.usage.max).unwrap_or(th::KV_FULL_USAGE),
                    l.running,
                    super::count(l.tokens_per_request.round() as u64),
                ),
                Confidence::Medium,
            )
        }
        Reason::KvCache(_pattern) => {
            let _: &kv_cache_bound::Pattern = _pattern;
            let pool = cap.max_total_num_tokens;
            if let (Some(u), Some(p), Some(r)) = (v.usage.median, pool, v.running.median)
                && r > 0.0
            {
                figures.push(Figure::new("KV tokens held per running request", u * p as f64 / r, Unit::Tokens));
            }
            let usage_s = match (v.usage.p90, v.usage.median) {
                (Some(p), Some(m)) => format!("Token usage reaches {p:.2} (90th percentile; median {m:.2})"),
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
                if retr.events > 0 { format!(", and the pool ran out {} times (retractions)", retr.events) } else { String::new() },
                match (pool, cap.swa_pool_tokens) {
                    (Some(p), Some(s)) => format!(" The full-attention pool holds {p} tokens and the sliding-window pool {s} per DP rank."),
                    (Some(p), None) => format!(" The pool holds {p} tokens per DP rank."),
                    _ => String::new(),
                }
            );
            let sure = retr.events > 0 || (waits && v.usage.median.is_some_and(|u| u >= th::CONSERVATIVE_USAGE));
            (
                FindingKind::KvCacheBound,
                "KV-cache bound".to_string(),
                detail,
                if sure { Confidence::High } else { Confidence::Medium },
            )
        }
        Reason::RunningCap(_) => (
            FindingKind::RunningCapBound,
            "Running-request cap bound".to_string(),
            format!(
                "The running batch {} its ceiling{}{}{}{}.{} {}",
                match reason {
                    Reason::RunningCap(l) if l.share() < th::AT_CAP_SHARE => format!("reaches (on {:.0}% of the lines, with running plus waiting requests filling it)", l.share() * 100.0),
                    _ => "stays at".to_string(),
                },
                match (cap.max_running_requests, v.pinned_across_ranks) {
                    (Some(c), _) => format!(" (max_running_requests={c} per DP rank)"),
                    (None, Some(p)) => format!(
                        " of {p} requests on every decode line of every rank (a cap of {p} per DP rank: max_running_requests, which the log does not print, or a router's limit)"
                    ),
                    _ => String::new(),
                },
                if waits { " while requests queue" } else { "" },
                // a PD decode node reserves KV for requests still in transfer
                throughput_stats::median_f64(
                    &v.steady_decode
                        .iter()
                        .filter_map(|d| d.pre_allocated_usage)
                        .collect::<Vec<_>>()
                )
                .filter(|p| *p > 0.0)
                .map(|p| format!(
                    "; of the pool, ~{p:.2} is pre-allocated for requests whose KV is still in transfer (a PD decode node reserves it before the transfer)"
                ))
                .unwrap_or_default(),
                if running_cap::pool_near_full(v) {
                    format!(
                        ", and the KV pool is nearly full too (token usage ~{:.2}): both limits bind, so raising the cap alone would run the pool out and retract requests",
                        v.median_usage().unwrap_or(0.0)
                    )
                } else {
                    pool_room_clause(&v.pool_room)
                },
                if mamba_full {
                    " Mamba usage reaches 1.00: the mamba state slots of this hybrid model are full, so they cap the batch as much as max_running_requests: raise --max-mamba-cache-size with it (SGLang caps max_running_requests by the mamba cache)."
                } else {
                    ""
                },
                if running_cap::pool_near_full(v) {
                    "Raise it together with the KV pool (mem_fraction_static, fp8 KV cache), or leave it."
                } else {
                    "Raise it if memory allows; if the client's concurrency equals this cap, raise both together, since either alone changes nothing."
                }
            ),
            Confidence::Medium,
        ),
        Reason::PrefillLimit(f) => {
            let f: &prefill_limit::Facts = f;
            if let Some(c) = cap.chunked_prefill_size {
                figures.push(Figure::new("chunked_prefill_size", c as f64, Unit::Tokens));
            }
            if let Some(m) = cap.max_prefill_tokens {
                figures.push(Figure::new("max_prefill_tokens", m as f64, Unit::Tokens));
            }
            if let Some(m) = v.tl.agg.max_prefill_new_tokens {
                figures.push(Figure::new("largest prefill batch", m as f64, Unit::Tokens));
            }
            let detail = match (f.budget_below_prompt, f.one_per_pass) {
                (None, Some(o)) if f.source == prefill_limit::LimitSource::Configured => format!(
                    "Each of {} prefill passes admitted one request (prompts of ~{} tokens, a small part of the configured {}-token prefill budget) while requests waited: requests leave the queue one per pass. \
                     SGLang's PrefillAdder admits as many waiting requests as the budget and the pool hold, so something else caps each pass at one: a build without batched prefill (older speculative decoding), requests that reach the scheduler one at a time (tokenization, a client or router sending serially), or a per-pass admission setting of this build. \
                     Check which: the budget is not it, so raising --chunked-prefill-size or --max-prefill-tokens changes nothing.",
                    o.passes, o.median_prompt, f.limit_tokens
                ),
                (None, Some(o)) => format!(
                    "Each of {} prefill passes admitted one request (prompts of ~{} tokens) while requests waited: requests leave the queue one per pass. \
                     SGLang's PrefillAdder admits as many waiting requests as the budget and the pool hold, and this log prints no budget (SGLang's default max_prefill_tokens is {}, its default chunk size depends on the GPU): \
                     either the budget (chunked_prefill_size or max_prefill_tokens) is below two of these prompts, or something else caps each pass at one: a build without batched prefill (older speculative decoding), requests that reach the scheduler one at a time (tokenization, a client or router sending serially). \
                     The start-up's capacity line (chunked_prefill_size, max_prefill_tokens) tells which.",
                    o.passes, o.median_prompt, prefill_limit::DEFAULT_MAX_PREFILL_TOKENS
                ),
                _ => match f.budget_below_prompt {
                Some((budget, p)) => format!(
                    "max_prefill_tokens ({budget}) is below one prompt (~{p} tokens): SGLang admits the first request of a prefill batch whatever its size, \
                     so every prefill batch holds exactly one request and requests are admitted one per prefill pass while the queue waits. \
                     Raise --max-prefill-tokens to a few prompts (e.g. {}) so that one pass admits several; it costs activation memory and longer decode pauses.",
                    p * 4
                ),
                None => format!(
                    "Prefill batches run at their token limit ({} tokens: {}) while the queue waits{}: requests are admitted only as fast as prompts are prefilled. \
                 A larger --chunked-prefill-size and --max-prefill-tokens admit more per batch (more activation memory; longer decode pauses), or PD disaggregation separates prefill from decode.",
                    f.limit_tokens,
                    match f.source {
                        prefill_limit::LimitSource::Configured => "the configured chunked_prefill_size / max_prefill_tokens",
                        prefill_limit::LimitSource::RepeatedChunk => "batch after batch filled to exactly this size, SGLang's chunked prefill at work; the log does not print chunked_prefill_size",
                        prefill_limit::LimitSource::DefaultBudget => "SGLang's default max_prefill_tokens; the log does not print the configured one",
                    },
                    pool_room_clause(&v.pool_room),
                ),
                },
            };
            (
                FindingKind::PrefillBound,
                if f.one_per_pass.is_some() {
                    "Prefill bound: one request admitted per prefill pass".to_string()
                } else {
                    "Prefill bound: admission is limited by the prefill batch size".to_string()
                },
                detail,
                Confidence::Medium,
            )
        }
        Reason::Conservative(_) => (
            FindingKind::SchedulerConservative,
            "Scheduler too conservative".to_string(),
            format!(
                "Requests queue while token usage stays below {}-{}. SGLang reserves KV for each request's remaining max_new_tokens (x new_token_ratio) before admitting more; \
                 large max_tokens make it hold back. Lower --schedule-conservativeness (e.g. 0.5-0.8) or send realistic max_tokens; watch for retractions afterwards.",
                th::CONSERVATIVE_USAGE,
                th::KV_FULL_USAGE
            ),
            Confidence::Medium,
        ),
        Reason::PdTransfer(_) => (
            FindingKind::PdTransferBound,
            "PD transfer / pre-allocation bound".to_string(),
            "On this prefill server requests stand in the bootstrap/pre-allocation queue (#prealloc-req) while none waits for prefill itself: they wait for the decode side to hand-shake and pre-allocate their KV, so this server prefills only as fast as the decode side accepts. Check the decode server's KV usage, running cap and the transfer backend."
                .to_string(),
            Confidence::Medium,
        ),
        Reason::ClientBound if pd_decode => (
            FindingKind::ClientBound,
            "PD decode node fed by the prefill side".to_string(),
            format!(
                "Nearly nothing waits on this PD decode node (its #queue-req and #prealloc-req stay near 0){}: it decodes what the prefill side hands over. \
                 If the prefill nodes show a standing bootstrap queue, the handoff is the slow part (the bootstrap handshake, the KV transfer backend), not this node's capacity; \
                 otherwise the prefill nodes or the router receive too little load.",
                pool_room_clause(&v.pool_room),
            ),
            Confidence::Medium,
        ),
        Reason::Drain(f) => (
            FindingKind::Drain,
            "Only the drain of a run".to_string(),
            format!(
                "Over {} decode lines the batch only shrinks, from {} to {} running requests, while nothing waits and no prefill admits a request: requests finish and none replace them, so the client had stopped sending (the end of a benchmark or a job). \
                 The batch size here describes no state the server was held in, and a step-time fit over it mixes batch, context length and graph mode changing together: no verdict on the server, the client's concurrency or a ceiling can come from these lines. Give a log of the run while the client was sending.",
                f.lines, f.from, f.to
            ),
            Confidence::Medium,
        ),
        Reason::ClientBound => (
            FindingKind::ClientBound,
            "Client too slow / not enough load".to_string(),
            format!(
                "Nearly nothing waits in the queue{}: the server runs what it is given. More throughput needs more concurrent requests from the client (raise its concurrency), not server tuning{}.",
                pool_room_clause(&v.pool_room),
                if v.pool_room.has_room() { "" } else { ", and more requests at once need more room in the fullest pool" }
            ),
            Confidence::Medium,
        ),
        // worded by `held_admission` below
        Reason::NoLines
        | Reason::HeldAdmission(_)
        | Reason::LoneReading
        | Reason::QueuedUnexplained
        | Reason::Unexplained => return None,
    };
    // A handful of lines is an excerpt, not a run: never high confidence, and a few seconds of
    // lines are a snapshot that the next minute can contradict.
    let confidence = if v.steady.len() < th::MIN_LINES_FOR_HIGH_CONFIDENCE {
        confidence.min(Confidence::Medium)
    } else {
        confidence
    };
    let snapshot = v.steady.len() < th::MIN_LINES_FOR_HIGH_CONFIDENCE
        && v.span
            .as_ref()
            .is_none_or(|s| s.end_s - s.start_s < th::MIN_SPAN_FOR_MEDIUM_CONFIDENCE_S);
    let confidence = if snapshot {
        confidence.min(Confidence::Low)
    } else {
        confidence
    };
    Some(with_levers(
        finding(
            kind,
            title,
            detail,
            figures,
            evidence.into_iter().collect(),
            confidence,
        ),
        &levers,
    ))
}

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
                    "Prefill passes stop decode while they run, and chunked prefill is off (chunked_prefill_size=-1): each prompt prefills whole in one pass. A --chunked-prefill-size {} spreads prefill over shorter passes, after which --enable-mixed-chunk can run them with decode; PD disaggregation removes the interference.",
                    match f.largest_prefill_tokens {
                        // a chunk splits only what is larger than it
                        Some(n) => format!(
                            "below the largest prefill pass here ({n} tokens; e.g. {})",
                            (n.next_power_of_two() / 4).clamp(256, 8192)
                        ),
                        None => "(e.g. 8192)".to_string(),
                    }
                )
            } else {
                "Prefill passes stop decode while they run (unless --enable-mixed-chunk). A smaller --chunked-prefill-size spreads long prompts thinner; PD disaggregation removes the interference.".to_string()
            }
        ),
        figures,
        f.evidence.clone().into_iter().collect(),
        Confidence::Medium,
    );
    // mixed chunks need chunked prefill: with it off, the lever is turning it on
    let levers: &[Lever] = if cap.chunked_prefill_off {
        &[Lever::ChunkedPrefillSize]
    } else {
        &[Lever::EnableMixedChunk, Lever::ChunkedPrefillSize]
    };
    with_levers(f, levers)
}

/// The finding of [`crate::rules::stall`].
pub fn stall(f: &stall::Facts) -> Finding {
    let r = f;
    let long = r.is_long();
    let mut figures = vec![
        Figure::new(
            "decode lines with #token unchanged",
            f.lines as f64,
            Unit::Lines,
        ),
        Figure::new("#token", r.tokens as f64, Unit::Tokens),
        Figure::new("running requests", r.running as f64, Unit::Requests),
    ];
    if let Some(x) = r.duration_s {
        figures.push(Figure::new("duration", x, Unit::Seconds));
    }
    finding(
        FindingKind::Stall,
        if long {
            "Stall: tokens stopped moving"
        } else {
            "#token frozen while requests run"
        },
        format!(
            "{} consecutive decode lines of {} report {} running request(s) but the same #token ({}){}: decode steps run without adding KV tokens. \
             A hung step or collective, broken output (the model emitting nothing new), or a logging bug; look at what the server printed around these lines.",
            f.lines,
            f.scheduler,
            r.running,
            r.tokens,
            r.duration_s
                .map(|x| format!(" for {x:.0} s"))
                .unwrap_or_default()
        ),
        figures,
        vec![f.evidence.clone()],
        if long {
            Confidence::High
        } else {
            Confidence::Low
        },
    )
}

/// The finding of [`crate::rules::retraction`].
pub fn retraction(f: &retraction::Facts, r: &RetractionSummary) -> Finding {
    let nothing_waited = f.nothing_waited;
    let material = f.material();
    let mut figures = vec![
        Figure::new("retraction events", r.events as f64, Unit::Events),
        Figure::new("retraction lines (all ranks)", r.lines as f64, Unit::Lines),
        Figure::new(
            "requests retracted",
            r.retracted_requests as f64,
            Unit::Requests,
        ),
    ];
    if let Some(x) = r.per_hour {
        figures.push(Figure::new("retractions per hour", x, Unit::EventsPerHour));
    }
    if let Some(x) = r.tokens_freed {
        figures.push(Figure::new(
            "KV slots freed by retraction",
            x as f64,
            Unit::Tokens,
        ));
    }
    if let Some(c) = f.reprefill {
        figures.push(Figure::new(
            "median prefill rate of the prefill lines",
            c.rate_tps,
            Unit::TokPerS,
        ));
        figures.push(Figure::new(
            "share of the logged time re-prefilling retracted requests, about",
            c.share(),
            Unit::Fraction,
        ));
    }
    if let Some(x) = r.max_ratio_after {
        figures.push(Figure::new(
            "highest new_token_ratio after a retraction",
            x,
            Unit::Ratio,
        ));
    }
    let f = finding(
        FindingKind::Retraction,
        if f.thrash {
            "Retraction thrash"
        } else {
            "KV cache ran out during decode (retraction)"
        },
        format!(
            "The KV pool could not hold the next decode token of every running request, so SGLang retracted requests back to the queue; \
             each keeps the tokens it generated and is prefilled again (prompt plus those tokens) when readmitted, so a retraction costs a prefill, not the decode work twice. {}",
            if nothing_waited {
                "No request waited on the batch lines, so admission (and --schedule-conservativeness) played no part: the requests already running grew past the pool. Cap max_tokens, or give the KV cache more memory.".to_string()
            } else {
                let cost = match f.reprefill {
                    Some(c) if c.material() => format!(
                        " Re-prefilling the {} freed tokens took about {:.1}% of the logged time (at the median prefill line's {:.0} tok/s): worth fewer retractions, though a higher --schedule-conservativeness admits fewer requests at once, which costs decode throughput on a full pool.",
                        c.tokens, c.share() * 100.0, c.rate_tps
                    ),
                    Some(c) => format!(
                        " Re-prefilling the {} freed tokens took about {:.2}% of the logged time (at the median prefill line's {:.0} tok/s, a figure that errs high): not worth admitting fewer requests for; the retractions are a symptom of the full pool, which more KV memory treats.",
                        c.tokens, c.share() * 100.0, c.rate_tps
                    ),
                    None => " What re-prefilling cost is not measured (no freed-token count or no prefill rate in the log), so no setting is advised for retraction alone; the pool is the limit.".to_string(),
                };
                format!(
                    "It means admission was too optimistic for this pool (new_token_ratio decayed) and the pool is the limit.{cost}"
                )
            }
        ),
        figures,
        f.evidence.clone().into_iter().collect(),
        Confidence::High,
    );
    // with nothing waiting no admission took place: the requests that run grew past the pool
    // only a material cost is worth admitting fewer requests (or cutting outputs) for
    let levers: &[Lever] = if nothing_waited {
        &[Lever::MaxTokens]
    } else if material {
        &[
            Lever::MemFractionStatic,
            Lever::ScheduleConservativeness,
            Lever::MaxTokens,
        ]
    } else {
        &[Lever::MemFractionStatic]
    };
    with_levers(f, levers)
}

/// The finding of [`crate::rules::watchdog`].
pub fn watchdog(f: &watchdog::Facts) -> Finding {
    let mut out = failure(
        f,
        FindingKind::WatchdogTimeout,
        "Watchdog timeout: the scheduler hung",
        "A forward pass or collective took longer than --watchdog-timeout; the server aborts. Look at the lines just before it (NCCL, OOM, a stuck rank).",
    );
    if let Some(h) = f.hang.as_ref().filter(|h| h.waits_on_children) {
        out.detail.push_str(&format!(
            " The py-spy dump in the log is {}'s, idle while it waits for its child processes (multiprocessing join): a parent by design, not where the hang is; the hung scheduler's stack is not in the log (py-spy dumps every scheduler process: look for the dump of one that is not idle).",
            h.process.as_deref().unwrap_or("a parent process")
        ));
    } else if let Some(h) = &f.hang {
        let frames: Vec<String> = h.frames.iter().map(super::frame_words).collect();
        out.title = format!(
            "Watchdog timeout: {} hung in {}",
            h.process.as_deref().unwrap_or("the process"),
            frames.first().map_or("an unknown frame", String::as_str)
        );
        out.detail.push_str(&format!(
            " The py-spy dump shows {}{}: {}.",
            h.process.as_deref().unwrap_or("the process"),
            h.thread
                .as_ref()
                .map(|(t, idle)| format!(
                    "'s thread {t}{}",
                    if *idle {
                        " (idle: waiting, not computing)"
                    } else {
                        ""
                    }
                ))
                .unwrap_or_default(),
            frames.join(" ← ")
        ));
        out.evidence.push(h.evidence.clone());
    } else if f.pyspy_missing {
        out.detail.push_str(
            " Where it hung is not in the log: py-spy is not installed where the server runs (`Pyspy failed to dump`); install it for the next time.",
        );
    }
    out
}

/// [`crate::rules::kv_transfer`].
pub fn kv_transfer(f: &watchdog::Facts) -> Finding {
    failure(
        f,
        FindingKind::KvTransferFailure,
        "KV transfers failed",
        "PD disaggregation could not move KV from prefill to decode servers; SGLang's decode side aborts a request whose transfer failed (every TP rank of the decode server logs the same request). Check the transfer backend and network; the first failure's cause is logged where it happened (the prefill server or another rank).",
    )
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

fn failure(f: &watchdog::Facts, kind: FindingKind, title: &str, detail: &str) -> Finding {
    finding(
        kind,
        title,
        format!("{detail} First: {}", f.first_text),
        vec![Figure::new(
            "failure lines (all ranks)",
            f.count as f64,
            Unit::Lines,
        )],
        f.evidence.clone().into_iter().collect(),
        Confidence::High,
    )
}

/// The finding of [`crate::rules::idle_window`].
pub fn idle_window(f: &idle_window::Facts) -> Finding {
    finding(
        FindingKind::IdleWindowArtifact,
        "Low gen throughput after idle is a measurement artifact",
        format!(
            "SGLang's gen throughput divides the tokens since the previous decode line by the wall time since then, idle time included, so the first line after an idle gap reads low ({:.2} tok/s vs a median of {:.1} tok/s). It is not slowness; ignore it.",
            f.first_reading, f.median
        ),
        vec![
            Figure::new(
                "low readings after idle",
                f.low_readings as f64,
                Unit::Lines,
            ),
            Figure::new("median gen throughput", f.median, Unit::TokPerS),
        ],
        vec![f.evidence.clone()],
        Confidence::Medium,
    )
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

/// The finding of [`crate::rules::dp_imbalance`].
pub fn dp_imbalance(f: &dp_imbalance::Facts) -> Finding {
    let out = finding(
        FindingKind::DpImbalance,
        "Load is uneven across DP ranks",
        format!(
            "Mean running requests range from {:.1} to {:.1} across {} DP ranks: the busiest rank sets the pace. Check the router's load-balance method (e.g. --load-balance-method round_robin / shortest_queue).",
            f.min, f.max, f.ranks
        ),
        vec![
            Figure::new(
                "lowest mean running requests on a DP rank",
                f.min,
                Unit::Requests,
            ),
            Figure::new(
                "highest mean running requests on a DP rank",
                f.max,
                Unit::Requests,
            ),
        ],
        Vec::new(),
        Confidence::Low,
    );
    with_levers(out, &[Lever::LoadBalanceMethod])
}

/// The finding of [`crate::rules::ramp_only`].
pub fn ramp_only(f: &ramp_only::Facts) -> Finding {
    let r = &f.ramp;
    finding(
        FindingKind::RampOnly,
        "The log shows only the ramp-up",
        format!(
            "On {}, running requests climb from {} to {} while the queue drains from {} to {}: this excerpt is the start of a burst, not a steady state. Rates measured here understate the steady rate; capture a longer log.",
            f.scheduler, r.running_start, r.running_end, r.queued_start, r.queued_end
        ),
        vec![
            Figure::new(
                "running requests at start",
                r.running_start as f64,
                Unit::Requests,
            ),
            Figure::new(
                "running requests at end",
                r.running_end as f64,
                Unit::Requests,
            ),
            Figure::new(
                "queued requests at start",
                r.queued_start as f64,
                Unit::Requests,
            ),
            Figure::new(
                "queued requests at end",
                r.queued_end as f64,
                Unit::Requests,
            ),
        ],
        f.evidence.clone().into_iter().collect(),
        Confidence::Medium,
    )
}

/// The finding of [`crate::rules::tiny_pool`].
pub fn tiny_pool(f: &tiny_pool::Facts) -> Finding {
    let out = finding(
        FindingKind::TinyKvPool,
        "The KV pool is tiny",
        format!(
            "The pool holds only ~{:.0} tokens ({}), far below what a GPU normally gives: --max-total-tokens or a very low mem_fraction_static is set, or the run is a reproduction with an artificial cap. Any real load will be KV-bound.",
            f.pool_tokens,
            if f.inferred {
                "from #token / token usage"
            } else {
                "max_total_num_tokens"
            }
        ),
        vec![Figure::new("KV pool size", f.pool_tokens, Unit::Tokens)],
        f.evidence.clone().into_iter().collect(),
        Confidence::Medium,
    );
    with_levers(out, &[Lever::MemFractionStatic])
}

/// The finding of [`crate::rules::held_admission`].
pub fn held_admission(f: &held_admission::Facts, evidence: Option<SourceRange>) -> Finding {
    let gap = match (f.prefill_gap_iters, f.prefill_gap_s) {
        (Some(n), _) => format!(
            " Prefill batches ran up to {n} forward iterations apart while requests waited."
        ),
        (None, Some(s)) if s > 0.0 => format!(
            " Prefill batches ran up to {} apart while requests waited.",
            super::fmt_duration(s)
        ),
        _ => String::new(),
    };
    let mut figures = vec![
        Figure::new("median token usage", f.usage, Unit::Fraction),
        Figure::new(
            "most requests running",
            f.running_max as f64,
            Unit::Requests,
        ),
    ];
    if let Some(n) = f.prefill_gap_iters {
        figures.push(Figure::new(
            "largest gap between prefill batches",
            n as f64,
            Unit::Iterations,
        ));
    }
    let f_out = finding(
        FindingKind::HeldAdmission,
        "Requests wait while the KV pool is nearly empty",
        format!(
            "Requests queue at token usage ~{:.2} with at most {} running: even the largest reservation those requests could hold (4096 tokens each, SGLang's clip) leaves most of the pool free, so neither the KV cache nor --schedule-conservativeness holds them back.{gap} \
             Admission waits for a prefill pass: look at how often the server schedules prefill (an interval between prefill passes, the schedule policy) or at what the requests wait for outside the scheduler (a PD handshake, grammar compilation, a LoRA load).",
            f.usage, f.running_max
        ),
        figures,
        evidence.into_iter().collect(),
        Confidence::Medium,
    );
    // prefill passes many forward iterations apart: the scheduler's prefill interval
    let spaced = f
        .prefill_gap_iters
        .is_some_and(|n| n >= th::HELD_PREFILL_GAP_ITERS);
    with_levers(
        f_out,
        if spaced {
            &[Lever::PrefillInterval]
        } else {
            &[]
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

/// The finding of [`crate::rules::bench_failures`].
pub fn bench_failures(run: &BenchmarkRun, f: &bench_failures::Facts) -> Finding {
    let from = if f.printed {
        "the block's `Failed requests`".to_string()
    } else {
        format!(
            "`--num-prompts {}` less the {} successful",
            f.requested,
            count(f.successful.unwrap_or(0))
        )
    };
    finding(
        FindingKind::BenchmarkFailures,
        format!(
            "{} of {} benchmark requests failed ({:.0}%)",
            count(f.failed),
            count(f.requested),
            f.share * 100.0
        ),
        format!(
            "Counted from {from}. The benchmark's throughput and latencies cover only the successful requests, so they describe a different, lighter run than the one asked for{}. \
             Find why requests failed before tuning throughput: the benchmark's error output (timeouts, connection resets), and the server log for aborted requests \
             (a full waiting queue with --max-queued-requests, prompts over the context length, out-of-memory).",
            if f.dominate {
                ", and failures are the first thing to fix"
            } else {
                ""
            }
        ),
        vec![
            Figure::new("failed requests", f.failed as f64, Unit::Requests),
            Figure::new("requested", f.requested as f64, Unit::Requests),
            Figure::new("failed share", f.share, Unit::Fraction),
        ],
        vec![run.source.clone()],
        if f.dominate {
            Confidence::High
        } else {
            Confidence::Medium
        },
    )
}

/// The finding of [`crate::rules::bench_queueing`]; `bottleneck` is the server-side verdict from the logs.
pub fn bench_queueing(
    run: &BenchmarkRun,
    f: &bench_queueing::Facts,
    bottleneck: Bottleneck,
) -> Finding {
    let b = &run.summary;
    let inf = b.request_rate.as_deref() == Some("inf");
    let submitted = match (b.request_rate_per_s(), b.max_concurrency) {
        (None, None) if inf => {
            "The benchmark sent every request at once (request rate inf, no concurrency limit)"
                .to_string()
        }
        (None, None) => {
            "The benchmark's request rate and concurrency limit are not in its summary".to_string()
        }
        (None, Some(m)) if inf => {
            format!("The benchmark kept up to {m} requests in flight (request rate inf)")
        }
        (None, Some(m)) => format!("The benchmark kept up to {m} requests in flight"),
        (Some(r), None) => {
            format!("The benchmark sent {r} requests per second with no concurrency limit")
        }
        (Some(r), Some(m)) => {
            format!("The benchmark sent {r} requests per second, at most {m} in flight")
        }
    };
    let e2e_from = if f.e2e_estimated {
        " (end to end estimated as TTFT + TPOT × (mean output tokens − 1): the summary prints no E2E latency)"
    } else {
        ""
    };
    let prompt = match b.mean_prompt_tokens() {
        Some(p) if p >= th::LONG_PROMPT_TOKENS => {
            format!(" Prompts average {p:.0} tokens: prefill itself takes a real share of it.")
        }
        Some(p) => format!(" Prompts average {p:.0} tokens."),
        None => String::new(),
    };
    let server = match bottleneck {
        Bottleneck::NoSchedulerLines => {
            " Which part is queueing and which is prefill (or time before the server: tokenizing, a chat template, the network) a client summary cannot tell; \
             the server log (its #queue-req and Prefill batch lines) tells: give it to this tool."
                .to_string()
        }
        other => format!(" The server log says: {}.", bottleneck_label(other)),
    };
    let output = match b.mean_completion_tokens() {
        Some(o) if f.prefill_only => format!(
            " Completions average {o:.1} tokens: a request is almost all prefill, so its TTFT is most of its latency by construction, and the output rate ({} tok/s) \
             does not measure decode; the run's throughput is its total {} tok/s, nearly all prompt tokens.",
            super::num(b.output_tok_per_s, 0),
            super::num(b.total_tok_per_s, 0)
        ),
        _ => format!(
            " Output throughput ({} tok/s over the whole run) is what the admitted requests achieve; if the server queues, more requests in flight only lengthen the wait.",
            super::num(b.output_tok_per_s, 0)
        ),
    };
    finding(
        FindingKind::BenchmarkQueueing,
        format!(
            "Requests spent {:.0}% of their latency before the first token (mean TTFT {:.1} s of {:.1} s end to end)",
            f.share * 100.0,
            f.ttft_s,
            f.e2e_s
        ),
        format!(
            "{submitted}{e2e_from}. A request's time to first token is its wait in the server's queue (the server admits only as many requests as its KV cache \
             and max_running_requests allow) plus its prefill.{prompt}{server}{output}"
        ),
        vec![
            Figure::new("mean TTFT", f.ttft_s, Unit::Seconds),
            Figure::new("mean end-to-end latency", f.e2e_s, Unit::Seconds),
            Figure::new("TTFT share of latency", f.share, Unit::Fraction),
        ],
        vec![run.source.clone()],
        if f.sure {
            Confidence::High
        } else {
            Confidence::Medium
        },
    )
}

/// The finding of [`crate::rules::bench_concurrency_limit`].
pub fn bench_concurrency_limit(run: &BenchmarkRun, f: &bench_concurrency_limit::Facts) -> Finding {
    use bench_concurrency_limit::Meaning;
    let limit = f.limit;
    let (meaning, confidence) = match f.meaning {
        Meaning::ServerHasHeadroom => (
            format!(
                "The server log shows headroom (little waits): the benchmark's limit sets the load. Raise --max-concurrency above {limit} to measure the server."
            ),
            Confidence::High,
        ),
        Meaning::ServerCapAtOrBelow { cap } => (
            format!(
                "The server's max_running_requests is {}, {}: raising the benchmark's limit alone would only queue requests in the server; raise both together to run more at once.",
                super::incidents::server_cap_words(cap),
                if cap.total() == limit {
                    "the same as the limit"
                } else {
                    "below the limit"
                }
            ),
            Confidence::Medium,
        ),
        Meaning::Unknown => (
            format!(
                "Whether the server could run more than {limit} at once is not in this input: its log (#running-req, #queue-req, token usage) tells."
            ),
            Confidence::Low,
        ),
        Meaning::ServerBound(other) => (
            format!(
                "The server log says {}: raising the limit would lengthen the server's queue, not raise throughput.",
                bottleneck_label(other)
            ),
            Confidence::Medium,
        ),
    };
    let (title, how) = match f.peak {
        Some(peak) if !f.held_full => (
            format!(
                "The benchmark reached its concurrency limit: up to {peak:.0} requests active at once against --max-concurrency {limit}, though {:.1} on average",
                f.concurrency
            ),
            format!(
                "Peak concurrent requests counts the requests active in a 1-second bucket (a few more than the limit when some end and others begin within that second); \
                 Concurrency is the sum of end-to-end latencies over the run's duration, a whole-run average that the ramp-up and the drain pull down{}. \
                 Do not read {:.0} as the load the server held. {meaning}",
                match (f.send_window_s, f.duration_s) {
                    (Some(w), Some(d)) if w < d => format!(
                        " (requests were sent for ~{w:.0} s of the {d:.0} s run; the rest is the drain)"
                    ),
                    _ => String::new(),
                },
                f.concurrency
            ),
        ),
        _ => (
            format!(
                "The benchmark held its concurrency limit full: {:.1} requests in flight on average of --max-concurrency {limit}",
                f.concurrency
            ),
            format!(
                "bench_serving's Concurrency is the sum of end-to-end latencies over the run's duration, the mean number of requests in flight (Little's law). {meaning}"
            ),
        ),
    };
    let mut figures = vec![
        Figure::new("mean requests in flight", f.concurrency, Unit::Requests),
        Figure::new("max concurrency", limit as f64, Unit::Requests),
    ];
    if let Some(p) = f.peak {
        figures.push(Figure::new("peak concurrent requests", p, Unit::Requests));
    }
    let out = finding(
        FindingKind::BenchmarkConcurrencyLimit,
        title,
        how,
        figures,
        vec![run.source.clone()],
        confidence,
    );
    let levers: &[Lever] = match f.meaning {
        Meaning::ServerHasHeadroom => &[Lever::ClientConcurrency],
        Meaning::ServerCapAtOrBelow { .. } => {
            &[Lever::ClientConcurrency, Lever::MaxRunningRequests]
        }
        Meaning::Unknown | Meaning::ServerBound(_) => &[],
    };
    with_levers(out, levers)
}

/// Prefix a benchmark finding's title with its run's number when there are several.
pub fn numbered(mut f: Finding, run: usize, runs: usize) -> Finding {
    if runs > 1 {
        f.title = format!("Benchmark run {run} of {runs}: {}", f.title);
    }
    f
}

/// The finding of [`crate::rules::client_gap`].
pub fn client_gap(s: &ClientSummary, f: &client_gap::Facts) -> Option<Finding> {
    let (life, win) = (
        s.lifetime_req_per_s.as_ref()?,
        s.windowed_req_per_s.as_ref()?,
    );
    let mut figures = vec![
        Figure::new("client lifetime average", life.value, Unit::ReqPerS),
        Figure::new(
            "client rate over the steady window",
            win.value,
            Unit::ReqPerS,
        ),
        Figure::new("steady window", win.window_s, Unit::Seconds),
    ];
    if let Some(p) = s.printed_req_per_s {
        figures.insert(0, Figure::new("rate the client printed", p, Unit::ReqPerS));
    }
    if let Some(x) = s.first_completion_after_s {
        figures.push(Figure::new(
            "time to the first completion",
            x,
            Unit::Seconds,
        ));
    }
    let g = match f {
        client_gap::Facts::Agrees => {
            return Some(finding(
                FindingKind::ClientGap,
                "The client's lifetime rate agrees with its steady rate",
                format!(
                    "Its lifetime average ({:.3} req/s) lies within the steady window's {} and within {:.0}% of it: \
                     the client's number is not distorted by a ramp here{}.",
                    life.value,
                    interval(win, 3),
                    th::LIFETIME_AGREES * 100.0,
                    match s.printed_req_per_s {
                        Some(p) if (p - life.value).abs() > 0.05 * life.value => format!(
                            "; the {p} req/s it prints is that average rounded ({:+.0}%)",
                            (p / life.value - 1.0) * 100.0
                        ),
                        _ => String::new(),
                    }
                ),
                figures,
                Vec::new(),
                Confidence::Medium,
            ));
        }
        client_gap::Facts::Gap(g) => g,
    };
    let mut detail = if g.printed_misleads {
        format!(
            "The client's figure is a lifetime average: completions since its start divided by the time since then ({:.3} req/s). \
             Over the steady window the same client completes {:.3} req/s ({}).",
            life.value,
            win.value,
            interval(win, 3)
        )
    } else {
        format!(
            "Over the steady window the client completed {:.3} req/s ({}); its lifetime average is {:.3} req/s.",
            win.value,
            interval(win, 3),
            life.value
        )
    };
    if let Some((p, l)) = g.rounding {
        detail.push_str(&format!(
            " It prints {p} req/s: one decimal place turns {l:.3} into {p}, a {:.0}% error on its own.",
            (p / l - 1.0).abs() * 100.0
        ));
    }
    if let Some(x) = s.first_completion_after_s {
        detail.push_str(&format!(
            " Its denominator includes the first {x:.0} s, when requests fired at once had not finished yet and nothing completed."
        ));
    }
    if let Some((imp, above)) = &g.implied {
        figures.push(Figure::new(
            "request rate implied by the server's tokens",
            imp.value,
            Unit::ReqPerS,
        ));
        detail.push_str(&format!(
            " The server's steady token rate implies {:.3} req/s ({}) at the mean completion of {} tokens.",
            imp.value,
            interval(imp, 3),
            super::num(s.mean_completion_tokens, 0)
        ));
        if *above {
            detail.push_str(" The server generates more tokens than the client receives in completed requests: tokens of requests still running, or of requests the client dropped or never recorded.");
        }
    }
    if let Some((run, uncounted)) = g.uncounted {
        figures.push(Figure::new(
            "generated tokens in flight, not yet counted by the client",
            uncounted,
            Unit::Tokens,
        ));
        detail.push_str(&format!(
            " A client counts tokens only at completion: ~{run:.0} running requests hold ~{uncounted:.0} generated tokens it has not counted yet, \
             which shifts a 60 s window's token rate by up to {:.0} tok/s but a {:.0} s window's by only {:.1} tok/s.",
            uncounted / 60.0,
            win.window_s,
            uncounted / win.window_s.max(1.0)
        ));
    }
    let words = |p: &client_gap::Part| match *p {
        client_gap::Part::Rounding(x) => format!("rounding of the printed figure {x:+.3}"),
        client_gap::Part::LifetimeRamp(x) => format!("the lifetime average's ramp {x:+.3}"),
        client_gap::Part::TokensInFlight(x) => {
            format!("tokens of running requests not yet counted {x:+.3}")
        }
        client_gap::Part::ClientFailures(x) => format!(
            "requests the client recorded as failed (work the server did and the client dropped) {x:+.3}"
        ),
        client_gap::Part::Unexplained(x) => format!(
            "not explained by these {x:+.3} (another client on this server, aborted requests, or ranks missing from the log)"
        ),
    };
    if !g.parts.is_empty() {
        detail.push_str(&format!(
            " The gap{} in parts (req/s): {}.",
            if g.implied.is_some() {
                " up to the rate the server's tokens imply,"
            } else {
                ","
            },
            g.parts.iter().map(words).collect::<Vec<_>>().join("; ")
        ));
    }
    if let Some(mean) = g.mean_slot_wait_s {
        figures.push(Figure::new(
            "mean wait for a client concurrency slot",
            mean,
            Unit::Seconds,
        ));
        if mean > th::CLIENT_SLOT_WAIT_S {
            detail.push_str(&format!(
                " Requests waited {mean:.1} s on average for a slot in the client before being sent: that time is in the client's latency but not the server's."
            ));
        }
    }
    Some(finding(
        FindingKind::ClientGap,
        if g.printed_misleads {
            "The client's req/s is a lifetime average, not the server's rate"
        } else {
            "The client's completions against the server's tokens"
        },
        detail,
        figures,
        Vec::new(),
        Confidence::High,
    ))
}

/// A short sample's adequacy.
pub fn sample_adequacy(a: &SampleAdequacy) -> Finding {
    finding(
        FindingKind::SampleAdequacy,
        "A short sample cannot settle the rate",
        format!(
            "{}. Measure over the steady span (or at least the window above), not a one-minute sample.",
            a.text
        ),
        vec![Figure::new(
            format!("window needed for ±10% at {}", confidence_pct()),
            a.window_needed_s,
            Unit::Seconds,
        )],
        Vec::new(),
        Confidence::High,
    )
}

/// The finding of [`crate::rules::littles_law`].
pub fn littles_law(f: &littles_law::Facts, window_rate: f64) -> Finding {
    let l = &f.check;
    let (observed, mean) = (f.observed, f.mean_latency_s);
    let detail = if l.relative_mismatch < 0.0 {
        format!(
            "The client's completion rate ({window_rate:.3} req/s) × its mean latency ({mean:.1} s) says ~{:.0} requests should be in flight \
             ({} interval {:.0}-{:.0}), but the server holds only ~{observed:.0} (running + queued): requests spend about {:.0}% of their \
             latency outside the server's batch and queue, in the client's own queue, the HTTP/tokenizer layer, or retries.",
            l.expected_in_flight,
            confidence_pct(),
            l.expected_low,
            l.expected_high,
            (1.0 - observed / l.expected_in_flight) * 100.0
        )
    } else {
        format!(
            "The server holds ~{observed:.0} requests (running + queued) but the client's rate × latency accounts for only ~{:.0} \
             ({} interval {:.0}-{:.0}): the server is also serving requests this client did not record (another client, or aborted requests).",
            l.expected_in_flight,
            confidence_pct(),
            l.expected_low,
            l.expected_high
        )
    };
    finding(
        FindingKind::LittlesLaw,
        "Little's law does not add up between client and server",
        detail,
        vec![
            Figure::new(
                "requests in the server (running + queued), mean",
                observed,
                Unit::Requests,
            ),
            Figure::new(
                "completion rate × mean latency",
                l.expected_in_flight,
                Unit::Requests,
            ),
            Figure::new("client mean latency", mean, Unit::Seconds),
            Figure::new("relative mismatch", l.relative_mismatch, Unit::Fraction),
        ],
        Vec::new(),
        Confidence::Medium,
    )
}

/// The capacity findings: the what-if summary (today's pool, the largest fraction that fits,
/// the first that does not, fp8 KV) and the HiCache verdict.
pub fn capacity(cm: &CapacityModel) -> Vec<Finding> {
    use kv_capacity::{Change, Feasibility};
    let rows = &cm.what_if.rows;
    let mut figures = vec![
        Figure::new(
            "KV pool now",
            cm.what_if.current_tokens as f64,
            Unit::Tokens,
        ),
        Figure::new("bytes per token per GPU", cm.cell_bytes as f64, Unit::Bytes),
        Figure::new(
            "tokens per +0.01 mem_fraction_static",
            cm.tokens_per_hundredth,
            Unit::Tokens,
        ),
    ];
    if let Some(f) = cm.free_now_gib {
        figures.push(Figure::new("free GPU memory at run time", f, Unit::Gib));
    }
    let verdict = |w: &kv_capacity::WhatIfRow| w.feasibility.as_ref().map(|f| f.verdict);
    let current = rows
        .iter()
        .find(|w| w.change == Change::Current)
        .map(|w| w.mem_fraction_static);
    let above = |w: &&kv_capacity::WhatIfRow| matches!(w.change, Change::Fraction { to } if current.is_none_or(|c| to > c));
    // the band's edges: the largest change that likely fits, the largest uncertain one, and
    // the first likely out of memory
    let largest_fitting = rows
        .iter()
        .filter(above)
        .rfind(|w| verdict(w) == Some(Feasibility::Fits));
    let largest_uncertain = rows
        .iter()
        .filter(above)
        .rfind(|w| verdict(w) == Some(Feasibility::Uncertain));
    let first_oom = rows
        .iter()
        .filter(above)
        .find(|w| verdict(w) == Some(Feasibility::OomLikely));
    let dtype = rows
        .iter()
        .filter(|w| matches!(w.change, Change::KvDtype { .. }));
    for w in largest_fitting
        .into_iter()
        .chain(largest_uncertain)
        .chain(first_oom)
        .chain(dtype)
    {
        let feasible = match verdict(w) {
            Some(Feasibility::Fits) => " (fits)",
            Some(Feasibility::Uncertain) => " (uncertain: may run out of memory)",
            Some(Feasibility::OomLikely) => " (likely out of memory)",
            None => "",
        };
        figures.push(Figure::new(
            format!("pool at {}{feasible}", w.label),
            w.pool_tokens as f64,
            Unit::Tokens,
        ));
    }
    let mut out = vec![finding(
        FindingKind::CapacityWhatIf,
        "What a bigger KV pool would take",
        format!(
            "SGLang sizes the pool as rest = avail − pre × (1 − mem_fraction_static) (model_runner profile_max_num_token), so each +0.01 adds 1% of the GPU's {:.1} GiB ({:.0} tokens), not 1% of the pool — \
             but only as far as memory is free after activations and CUDA graphs{}. See the what-if table.",
            cm.pre_gib,
            cm.tokens_per_hundredth,
            cm.free_now_gib
                .map(|f| format!(" ({f:.2} GiB now)"))
                .unwrap_or_default()
        ),
        figures,
        Vec::new(),
        Confidence::High,
    )];
    if let Some(h) = &cm.hicache {
        out.push(finding(
            FindingKind::HiCache,
            "HiCache would not let more requests decode at once",
            h.summary.join("; "),
            vec![
                Figure::new(
                    "device KV pool (decode concurrency limit)",
                    h.decode_pool_tokens as f64,
                    Unit::Tokens,
                ),
                Figure::new(
                    "host pool per rank",
                    h.host_tokens_per_rank as f64,
                    Unit::Tokens,
                ),
                Figure::new(
                    "host RAM for all ranks",
                    h.host_bytes_all_ranks as f64 / kv_capacity::GIB,
                    Unit::Gib,
                ),
            ],
            Vec::new(),
            Confidence::High,
        ));
    }
    out
}

/// How full the pools are, as a clause after a main one: " and every pool the log reports has
/// room (…)" only when [`PoolRoom::Room`]; otherwise the fullest pool and its usage, or that
/// the log prints no usage.
fn pool_room_clause(room: &PoolRoom) -> String {
    match room {
        PoolRoom::Room { fullest } => {
            format!(" and the KV cache has room (fullest pool at {fullest:.2}, 90th percentile)")
        }
        PoolRoom::Tight(p) => format!(
            ", with the {} at {:.2} (90th percentile; median {:.2})",
            pool_name(p.pool),
            p.p90,
            p.median
        ),
        PoolRoom::Unknown => {
            ", and the log prints no pool usage (whether the KV cache has room is unknown)"
                .to_string()
        }
    }
}

/// The name of a pool in prose.
fn pool_name(p: PoolKind) -> &'static str {
    match p {
        PoolKind::Kv => "KV pool (token usage)",
        PoolKind::Swa => "sliding-window (SWA) pool",
        PoolKind::Mamba => "mamba state slots",
    }
}
