//! Recommendations in words, from their plans.

use crate::recommend::{Fp8Kv, Limit, Plan, WhatIfMissing};
use crate::report::{FindingKind, Lever, Recommendation};

fn feasibility_words(f: Option<kv_capacity::Feasibility>) -> &'static str {
    match f {
        Some(kv_capacity::Feasibility::Fits) => "likely fits in the free memory",
        Some(kv_capacity::Feasibility::Uncertain) => "uncertain: may run out of memory",
        Some(kv_capacity::Feasibility::OomLikely) => "likely out of memory",
        None => "feasibility unknown",
    }
}

/// The limit a headroom figure stops at; `holds` words it as what the limit holds.
fn limit_words(l: Limit, holds: bool) -> &'static str {
    match (l, holds) {
        (Limit::RunningCap, _) => "the running-request cap",
        (Limit::SpeculativeDefaultCap, _) => {
            "the running-request cap (48, SGLang's default with speculative decoding, if --max-running-requests is not set)"
        }
        (Limit::KvCache, true) => "what the KV cache holds (at the longer requests' KV)",
        (Limit::KvCache, false) => "the KV cache (at the longer requests' KV)",
        (Limit::MambaSlots, true) => "what the mamba state slots hold",
        (Limit::MambaSlots, false) => "the mamba state slots",
    }
}

fn extrapolated(e: bool) -> &'static str {
    if e {
        " (extrapolated beyond the observed batch sizes)"
    } else {
        ""
    }
}

/// A gain in the user's units: the client's completion rate scaled by the gain, and the time to
/// finish the requests left (the same "now" as the client section's ETA).
/// A gain from a fit that explains little of the lines is a rough figure: said beside it.
fn rough(r2: f64) -> String {
    if r2 < crate::thresholds::MIN_CEILING_FIT_R2 {
        format!(", which explains little of the lines (R² {r2:.2}): a rough figure")
    } else {
        String::new()
    }
}

/// Without the client's figures, the gain in req/s is the same share at today's completion
/// lengths.
fn user_units(gain_pct: f64, user: Option<(f64, Option<u64>)>) -> String {
    let Some((now, remaining)) = user else {
        return format!(
            "; req/s {gain_pct:+.0}% too at today's completion lengths (the client's progress log, --client-log, puts it in req/s and time to finish)"
        );
    };
    let new = now * (1.0 + gain_pct / 100.0);
    let eta = remaining
        .filter(|_| new > 0.0)
        .map(|n| {
            format!(
                ", the remaining {} requests in ~{} instead of ~{}",
                super::count(n),
                super::fmt_duration(n as f64 / new),
                super::fmt_duration(n as f64 / now)
            )
        })
        .unwrap_or_default();
    format!("; for the client ~{new:.3} req/s instead of ~{now:.3}{eta}")
}

/// The band below a fraction that does not fit: "; 0.88 likely fits, 0.89-0.90 uncertain".
fn band(edge: Option<f64>, uncertain: Option<(f64, f64)>) -> String {
    let mut s = String::new();
    if let Some(e) = edge {
        s.push_str(&format!("; up to {e:.2} likely fits"));
    }
    match uncertain {
        Some((a, b)) if (a - b).abs() < 1e-9 => s.push_str(&format!("; {a:.2} is uncertain")),
        Some((a, b)) => s.push_str(&format!("; {a:.2}-{b:.2} are uncertain")),
        None => {}
    }
    s
}

/// A what-if row's change as the launch flags that make it, to copy into the server's command
/// (`--mem-fraction-static 0.88`, `--kv-cache-dtype fp8_e4m3`, `--tp-size 16`).
fn launch_flags(r: &crate::report::ProjectionRow) -> String {
    use kv_capacity::Change;
    match r.change {
        Change::Fraction { to } => format!("--mem-fraction-static {to:.2}"),
        Change::KvDtype { to } => format!(
            "--kv-cache-dtype {} (today's --mem-fraction-static kept)",
            to.sglang_name()
        ),
        Change::TpSize { to } => format!("--tp-size {to}"),
        Change::Current => r.label.clone(),
    }
}

/// A recommendation from its plan.
pub fn recommendation(p: &Plan) -> Recommendation {
    use kv_capacity::Change;
    let (action, expected_gain, risk) = match p {
        Plan::Apply(a) => {
            let r = &a.row;
            (
                format!("Set {}", launch_flags(r)),
                format!(
                    "pool {} tokens ({}%), {:.0}% more requests decoding at once, {}{}",
                    a.pool.map(|x| x.0.to_string()).unwrap_or_else(|| "?".into()),
                    a.pool.map(|x| format!("{:+.0}", x.1)).unwrap_or_else(|| "?".into()),
                    (r.concurrency / a.base.1 - 1.0) * 100.0,
                    match a.measured {
                        Some(m) => {
                            let new = m * (1.0 + r.gain_pct / 100.0);
                            format!(
                                "~{new:.0} tok/s against the measured {m:.0} ({:+.0}%, by the step-time fit{}){}",
                                r.gain_pct,
                                rough(a.fit_r2),
                                user_units(r.gain_pct, a.user)
                            )
                        }
                        None => format!(
                            "~{:.0} tok/s ({:+.0}% over the step-time fit's ~{:.0} tok/s for today's pool)",
                            r.tok_per_s, r.gain_pct, a.base.0
                        ),
                    },
                    extrapolated(r.extrapolated)
                ),
                match r.change {
                    Change::KvDtype { .. } => "fp8 KV changes numerics: outputs differ from the 16-bit cache's (for distillation or evaluation data that is output fidelity); check quality on a sample first; no extra memory".to_string(),
                    Change::TpSize { to } => format!("needs {to} GPUs per replica"),
                    _ => format!(
                        "{}: {}",
                        feasibility_words(r.feasibility),
                        a.free_after_gib.map(|f| format!("{f:.2} GiB free per GPU afterwards")).unwrap_or_default()
                    ),
                },
            )
        }
        Plan::DoNotRaise(d) => (
            format!("Do not raise --mem-fraction-static to {:.2} or beyond", d.to),
            match d.check {
                Some(c) => format!(
                    "none: {:.2} takes {:.2} GiB more per GPU, leaving {:.2} GiB of the {:.2} GiB free {} (below {:.1} GiB runs have run out of memory){}",
                    d.to,
                    c.extra_gib,
                    c.free_after_gib,
                    c.free_now_gib,
                    match c.source {
                        kv_capacity::FreeSource::AfterStartup => "after start-up",
                        kv_capacity::FreeSource::UnderLoad => "under load",
                    },
                    c.oom_below_gib,
                    band(d.edge, d.uncertain)
                ),
                None => format!(
                    "none: the pool would take {:.2} GiB more per GPU than is safe to give it",
                    d.extra_gib_per_gpu
                ),
            },
            "out of memory at start-up or under the first large prefill".to_string(),
        ),
        Plan::MoreKvSlots {
            for_cap,
            missing,
            fp8_kv,
        } => (
            match fp8_kv {
                Fp8Kv::Lever => "Give the KV cache more slots: raise mem_fraction_static as far as free memory allows, or use an fp8 KV cache, or cap max_tokens".into(),
                Fp8Kv::AlreadySet => "Give the KV cache more slots: raise mem_fraction_static as far as free memory allows, or cap max_tokens (the KV cache is already fp8)".into(),
                Fp8Kv::NotOnNpu => "Give the KV cache more slots: raise mem_fraction_static as far as free memory allows, or cap max_tokens (an fp8 KV cache is not available on Ascend NPU builds)".into(),
            },
            format!(
                "{}; {} the what-if table sizes each change against the free memory",
                if *for_cap {
                    "room for a higher --max-running-requests (the next recommendation): the cap holds the batch too, so more slots alone run no more requests, and a higher cap alone would run the pool out"
                } else {
                    "more requests decoding at once"
                },
                match missing {
                    Some(WhatIfMissing::ModelConfig) => "with --model-config (the model's config.json)",
                    Some(WhatIfMissing::MemFraction) => {
                        "with --server-info (a saved /server_info response, which states mem_fraction_static; this log prints no server_args line)"
                    }
                    Some(WhatIfMissing::PoolSize) => {
                        "with the server's start-up lines or --server-info (the KV pool's size)"
                    }
                    Some(WhatIfMissing::GpuMemory) => {
                        "with a GPU snapshot (--gpu-snapshot, a copied nvidia-smi) or the log's `Load weight end` line"
                    }
                    None => "with --model-config and a GPU snapshot (--gpu-snapshot)",
                }
            ),
            if *fp8_kv == Fp8Kv::Lever {
                "a larger pool leaves less memory for activations (out of memory under a large prefill); fp8 KV changes numerics".into()
            } else {
                "a larger pool leaves less memory for activations (out of memory under a large prefill)".into()
            },
        ),
        Plan::HiCacheNoGain => (
            "Do not expect host-RAM hierarchical cache (HiCache) to raise throughput here".into(),
            "none for decode concurrency: HiCache keeps evicted prefixes in host RAM; running requests' KV stays on the GPU".into(),
            "uses pinned host RAM per rank".into(),
        ),
        Plan::RaiseConservativeness(n) => (
            "Raise --schedule-conservativeness a little (e.g. 1.3)".into(),
            if *n == 1 {
                "fewer retractions like the one seen, and the re-prefill work they cause".to_string()
            } else {
                format!("fewer of the {n} retractions and the re-prefill work they cause")
            },
            "fewer requests admitted at once: on a full KV pool fewer decode together, which lowers tok/s".into(),
        ),
        Plan::LowerConservativeness(fill) => (
            "Lower --schedule-conservativeness (e.g. 0.7), or send max_tokens closer to the real completion lengths".into(),
            match fill {
                Some(f) => format!(
                    "the pool could hold ~{:.0} requests decoding at once instead of the ~{:.0} admitted: ~{:.0} tok/s ({:+.0}% over the step-time fit's ~{:.0} tok/s now){}",
                    f.concurrency, f.now.0, f.tok_per_s, f.gain_pct, f.now.1, extrapolated(f.extrapolated)
                ),
                None => "more requests admitted while the KV cache has room".into(),
            },
            "more retractions if completions run longer than reserved; watch for `KV cache pool is full. Retract requests.`".into(),
        ),
        Plan::RaiseMaxRunning(advice) => raise_max_running(advice),
        Plan::DpAttention(tp, None) => (
            format!("Try --enable-dp-attention (with --dp-size {tp}) on the same {tp} GPUs"),
            format!(
                "this MLA model's latent KV is not split by TP: each of the {tp} ranks holds every running request's KV, so the pool holds the same requests {tp} times over; with DP attention each rank holds only its own requests', up to {tp}x the requests decoding at once from the same KV memory, less what the attention weights then take: each rank holds all of them instead of 1/{tp}, out of the pool (not sized here: give the model's config.json with --model-config; not projected: the step time changes with the layout)"
            ),
            "a different parallel layout (per-rank attention batches, all-gathers or expert parallelism around the MoE layers) and the attention weights whole on every GPU (for a large model many GiB per GPU, possibly as much as the KV pool holds now: the pool shrinks by that, and the server may not start at the same --mem-fraction-static): measure throughput on a sample before the whole job; outputs are unchanged up to numerics".into(),
        ),
        Plan::DpAttention(tp, Some(s)) => {
            let o = s.best().copied().unwrap_or(s.options[0]);
            // without vocab_size the embedding DP attention holds whole is not counted: the
            // extra is a floor, the gain a ceiling
            let (about, more) = match s.embedding_gib {
                Some(_) => ("about", "more"),
                None => ("at most", "at least"),
            };
            let others: Vec<String> = s
                .options
                .iter()
                .filter(|x| x.dp != o.dp)
                .map(|x| {
                    if x.pool_after_gib > 0.0 {
                        format!("--dp-size {}: {about} {:.1}x", x.dp, x.requests_factor)
                    } else {
                        format!(
                            "--dp-size {}: does not fit ({more} {:.1} GiB more weights per GPU)",
                            x.dp, x.extra_gib
                        )
                    }
                })
                .collect();
            let weights = match s.embedding_gib {
                Some(e) => format!(
                    "the attention weights TP splits ({:.1} GiB in all) and the token embedding ({e:.1} GiB), which DP attention holds whole on every GPU",
                    s.split_attention_gib
                ),
                None => format!(
                    "the attention weights TP splits ({:.1} GiB in all), and the token embedding, which DP attention holds whole on every GPU and config.json (no vocab_size) does not size",
                    s.split_attention_gib
                ),
            };
            (
                format!(
                    "Try --enable-dp-attention --dp-size {} on the same {tp} GPUs",
                    o.dp
                ),
                format!(
                    "this MLA model's latent KV is not split by TP: each of the {tp} ranks holds every running request's KV; with --dp-size {dp} each of {dp} attention groups of {g} GPUs holds only its own requests', and each GPU holds {more} {extra:.1} GiB more weights, out of the pool ({after:.1} of today's {pool:.1} GiB left per GPU): {about} {f:.1}x the requests decoding at once{others}; the weights: {weights} (not projected in tok/s: the step time changes with the layout)",
                    dp = o.dp,
                    g = tp / o.dp.max(1),
                    extra = o.extra_gib,
                    after = o.pool_after_gib,
                    pool = s.pool_gib,
                    f = o.requests_factor,
                    others = if others.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", others.join("; "))
                    },
                ),
                "a different parallel layout (per-group attention batches, all-gathers around the MoE layers): measure throughput on a sample before the whole job; the weights are sized from config.json at the checkpoint's dtype (less if they are quantised); outputs are unchanged up to numerics".into(),
            )
        }
        Plan::DpAttentionNoRoom(s) => {
            let most = s.options.last();
            (
                "Do not turn on --enable-dp-attention on these GPUs as they are".to_string(),
                format!(
                    "none: it would let each attention group hold only its own requests' KV, but every GPU would hold more weights (of the {:.1} GiB of attention weights TP splits, and the token embedding whole){}, which leaves no KV pool of today's {:.1} GiB per GPU at the same --mem-fraction-static",
                    s.split_attention_gib,
                    most.map(|o| format!(", at least {:.1} GiB more at --dp-size {}", o.extra_gib, o.dp))
                        .unwrap_or_default(),
                    s.pool_gib
                ),
                "the server does not start, or starts with almost no KV pool".into(),
            )
        }
        Plan::RaiseClientConcurrency(load) => (
            "Send more requests at once from the client (raise its concurrency)".into(),
            match load.and_then(|l| Some((l, l.headroom()?))) {
                None if load.is_some_and(|l| l.too_short) => {
                    let bound = load.and_then(|l| l.cap_headroom());
                    let l = load.map_or(0.0, |l| l.running_median);
                    format!(
                        "little waits at ~{l:.0} running request{}, but the log is a ramp or too short for the requests' KV to say how many more would fit{}: throughput grows with the batch until the KV cache, the running cap or compute is the limit",
                        if l.round() == 1.0 { "" } else { "s" },
                        bound.map_or(String::new(), |(n, limit)| format!(
                            "; at most ~{n:.0} more before {} stops them (the KV cache or another pool may stop them sooner)",
                            limit_words(limit, false)
                        ))
                    )
                }
                Some((l, (extra, limit))) if extra < 1.0 => format!(
                    "little waits, but ~{:.0} running requests already reach {} (token usage ~{:.2}): more at once would wait there, so this gains only with room there too",
                    l.running_median,
                    limit_words(limit, true),
                    l.usage_median
                ),
                Some((l, (extra, limit))) => format!(
                    "little waits: ~{} at token usage ~{:.2}{}; about {extra:.0} more could run at once before {} stops them, \
                     and throughput grows with the batch until then",
                    if l.running_median.round() == 1.0 {
                        "1 request runs".to_string()
                    } else {
                        format!("{:.0} requests run", l.running_median)
                    },
                    l.usage_median,
                    l.usage_p90.map(|p| format!(" (p90 {p:.2})")).unwrap_or_default(),
                    limit_words(limit, false)
                ),
                None => "the server has KV room and little waits: throughput grows with the batch until the KV cache or compute is the limit".into(),
            },
            "higher per-request latency (ITL) as the batch grows".into(),
        ),
        Plan::CheckPrefillSide(load) => (
            "Diagnose the prefill nodes' and the router's logs: this PD decode node decodes what they hand over".into(),
            match load.and_then(|l| Some((l, l.headroom()?))) {
                Some((l, (extra, limit))) => format!(
                    "~{:.0} requests run per rank here; about {extra:.0} more could run before {} stops them, so more hand-over from the prefill side (or a faster handoff) raises throughput",
                    l.running_median,
                    limit_words(limit, false)
                ),
                None => "more hand-over from the prefill side (or a faster handoff) raises throughput".into(),
            },
            "none".into(),
        ),
        Plan::UseWindowedRate => (
            "Judge progress by the windowed rate (or throughput-doctor run-batch), not the client's lifetime average".into(),
            "a correct number to plan with; no throughput change".into(),
            "none".into(),
        ),
        Plan::Change { lever, finding } => change(*lever, *finding),
    };
    Recommendation {
        kind: p.kind(),
        action,
        expected_gain,
        gain_pct: p.gain_pct(),
        risk,
    }
}

/// The words of [`Plan::RaiseMaxRunning`]: with the benchmark client's limit when the log
/// gives it, and the CUDA graphs' largest batch.
fn raise_max_running(a: &crate::recommend::CapAdvice) -> (String, String, String) {
    let flag = "--max-running-requests";
    let whole = "the flag counts the whole server: with DP attention SGLang divides it over the DP ranks, and the log's max_running_requests is per rank";
    let action = match a.client {
        Some(c) if c.limit <= c.server_total => format!(
            "Raise {flag} together with the client's --max-concurrency, if the KV cache has room: the benchmark in the log sends at most {} requests at once, {} the server's cap of {}{}, so raising either alone changes nothing",
            c.limit,
            if c.limit == c.server_total {
                "exactly"
            } else {
                "below"
            },
            c.server_total,
            if c.dp_ranks > 1 {
                format!(
                    " ({} per DP rank × {} ranks; the flag counts the whole server and SGLang divides it over the DP ranks)",
                    c.per_rank, c.dp_ranks
                )
            } else {
                String::new()
            },
        ),
        Some(c) => format!(
            "Raise {flag}, if the KV cache has room: the benchmark in the log sends up to {} requests at once, above the server's cap of {} ({whole})",
            c.limit, c.server_total
        ),
        None if a.nothing_waits => format!(
            "If the client has more requests to send than the cap holds, raise {flag} with its concurrency, if the KV cache has room ({whole}): nothing waits in the log, so a client that sends exactly the cap looks the same"
        ),
        None => format!(
            "Raise {flag}, if the KV cache has room ({whole}); check the client is not capped at the same number"
        ),
    };
    let risk = match a.graph_max_bs {
        Some(g) => format!(
            "larger batches need more activation memory, and CUDA graphs are captured only up to {g} requests per rank: {} with the cap, or the larger batches run eagerly",
            if a.graph_sizes_listed {
                "add larger sizes to --cuda-graph-bs (the explicit list decides; --cuda-graph-max-bs is ignored with it)"
            } else {
                "raise --cuda-graph-max-bs"
            }
        ),
        None => "larger batches need more activation memory and may exceed the captured CUDA-graph batch size".into(),
    };
    let gain = match a.queued_peak {
        Some(q) if q > 0 && !a.nothing_waits => format!(
            "more requests decoding at once: at most {q}{} wait while the batch is at the cap, so up to that many more now if the KV pool holds them, and more only as the client (or the prefill side) sends more",
            if a.per_rank { " per rank" } else { "" }
        ),
        _ => "more requests decoding at once, up to what the KV pool holds".into(),
    };
    (action, gain, risk)
}

/// The words of a [`Plan::Change`]: the setting, in the direction its finding gives.
fn change(lever: Lever, finding: FindingKind) -> (String, String, String) {
    use FindingKind as F;
    let flag = lever.flag();
    let (action, gain, risk): (String, &str, &str) = match (lever, finding) {
        (Lever::MaxTokens, _) => (
            "Cap max_tokens near the real completion lengths".into(),
            "less KV reserved per request: more requests fit at once, and a runaway generation cannot hold the pool",
            "completions longer than the cap are cut",
        ),
        (Lever::MemFractionStatic, F::OutOfMemory) => (
            format!("Lower {flag} (e.g. by 0.05)"),
            "more memory for activations and CUDA graphs: the out-of-memory error goes away",
            "a smaller KV pool: fewer requests run at once",
        ),
        (Lever::MemFractionStatic, _) => (
            format!("Raise {flag} as far as the free memory allows"),
            "a larger KV pool: more requests decode at once",
            "less memory for activations (out of memory under a large prefill)",
        ),
        (Lever::KvCacheDtype, _) => (
            format!("Use an fp8 KV cache ({flag} fp8_e4m3)"),
            "about twice the KV slots in the same memory",
            "changes numerics slightly",
        ),
        (Lever::ScheduleConservativeness, _) => (
            format!("Raise {flag} a little (e.g. 1.3)"),
            "fewer retractions and the re-prefill work they cause",
            "fewer requests admitted at once: on a full KV pool fewer decode together, which lowers tok/s",
        ),
        (Lever::MaxRunningRequests, F::CudaGraphCoverage) => (
            format!("Or lower {flag} to the largest captured batch"),
            "every decode step runs as a captured graph",
            "fewer requests decode at once: less throughput where the KV pool holds more",
        ),
        (Lever::MaxRunningRequests, _) => (
            format!("Raise {flag} together with the client's concurrency (the flag counts the whole server; with DP attention SGLang divides it over the DP ranks)"),
            "more requests decoding at once, up to what the KV pool holds",
            "larger batches need more activation memory and may exceed the captured CUDA-graph batch size",
        ),
        (Lever::MaxMambaCacheSize, _) => (
            format!("Raise {flag} together with --max-running-requests"),
            "more mamba-state slots, so more requests of this hybrid model can run at once",
            "each slot takes its state's memory from the KV pool",
        ),
        (Lever::CudaGraphMaxBs, F::OutOfMemory) => (
            format!("Lower {flag}"),
            "less memory taken by captured graphs",
            "larger decode batches run eagerly (slower steps)",
        ),
        // from the start-up lines alone: no running batch is known yet
        (Lever::CudaGraphMaxBs, F::CudaGraphCoverage) => (
            format!("Raise {flag} to the decode batch you expect under load"),
            "decode steps of batches up to it run as captured graphs",
            "graphs for larger batches take memory and start-up time",
        ),
        (Lever::CudaGraphMaxBs, _) => (
            format!("Raise {flag} to the running batch size"),
            "every decode step runs as a captured graph (no per-kernel launch cost)",
            "graphs take some memory and start-up time",
        ),
        (Lever::DisableCudaGraph, _) => (
            format!("Turn CUDA graphs on: remove {flag} if it is set, else see the start-up lines for why capture was skipped"),
            "decode steps run as captured graphs, much faster for small batches",
            "some memory and start-up time; a bug it worked around may return",
        ),
        (Lever::ChunkedPrefillSize, F::PrefillBound) => (
            format!("Raise {flag} and --max-prefill-tokens"),
            "more prompt tokens admitted per prefill batch",
            "more activation memory; longer decode pauses",
        ),
        (Lever::ChunkedPrefillSize, _) => (
            format!("Set a smaller {flag} (a positive value: -1 turns chunking off, so a whole prompt prefills in one pass)"),
            "long prompts are spread over shorter prefill passes: shorter decode pauses, less activation memory",
            "more prefill passes per long prompt",
        ),
        (Lever::MaxPrefillTokens, _) => (
            format!("Raise {flag} to a few prompts"),
            "several requests admitted per prefill pass",
            "more activation memory; longer decode pauses",
        ),
        (Lever::EnableMixedChunk, _) => (
            format!("Try {flag}"),
            "prefill chunks run inside the decode batch, so decode does not stop for them",
            "slower decode steps while a chunk runs",
        ),
        (Lever::LoadBalanceMethod, _) => (
            format!("Set {flag} to total_requests or total_tokens (current SGLang; shortest_queue in older releases), or check the router's policy"),
            "requests spread evenly over the DP ranks",
            "none known",
        ),
        (Lever::SpeculativeDecoding, _) => (
            "Lower --speculative-num-steps / --speculative-num-draft-tokens, or use a draft model trained for this target (turn speculation off only where its accept length is near 1: above that each target forward still yields more than one token)".into(),
            "no draft forwards wasted on rejected tokens",
            "fewer tokens per target forward if the acceptance was worth it",
        ),
        (Lever::ContextLength, _) => (
            format!("Keep prompt plus max_tokens below the context length, or raise {flag} if the model supports it"),
            "the rejected requests run",
            "a longer context than the model was trained for degrades its output",
        ),
        (Lever::PrefillInterval, _) => (
            format!("Let the scheduler try a prefill pass at every step: set {flag} back to 1 (its default), and remove any interval between prefill passes the build offers (NPU builds: --prefill-decode-interval)"),
            "waiting requests are admitted at the next forward pass instead of hundreds of decode steps later",
            "decode steps are interrupted by prefill more often (higher inter-token latency for the running requests)",
        ),
        (Lever::MoeKernelConfig, _) => (
            "Tune the fused MoE kernels for this GPU (SGLang's benchmark/kernels/fused_moe_triton/tuning_fused_moe_triton.py writes the config file the start-up warning names), or use a build that ships one".into(),
            "every MoE layer runs with tile sizes chosen for this GPU instead of a generic default",
            "tuning takes a while per shape and dtype; outputs are unchanged",
        ),
        (Lever::ClientConcurrency, _) => (
            format!("Raise the client's concurrency ({flag} of a benchmark)"),
            "more requests in flight for the server to batch",
            "longer queues if the server is already full",
        ),
    };
    (action, gain.to_string(), risk.to_string())
}
