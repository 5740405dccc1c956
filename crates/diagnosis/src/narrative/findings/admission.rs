//! Findings of load and admission: the finding that names a scheduler's bottleneck (KV cache,
//! running cap, prefill limit, conservative scheduler, PD transfer, client bound, drain) and
//! held admission.

use super::{finding, with_levers};
use crate::evidence::pools::{PoolKind, PoolRoom};
use crate::evidence::view::SchedulerView;
use crate::report::{
    CapacitySummary, Confidence, Figure, Finding, FindingKind, Lever, RetractionSummary,
    SourceRange, Unit,
};
use crate::rules::{
    admission, held_admission, kv_cache_bound, pd_transfer, prefill_limit, running_cap,
};
use crate::thresholds as th;
use crate::verdict::Reason;

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
    // the admission model: which limit held the waiting requests back, for how much of the time
    if let Some(a) = admission::model(v, cap) {
        for b in a.bindings.iter().filter(|b| b.share > 0.0) {
            figures.push(Figure::new(
                of(&format!(
                    "share of the queued request-time held back by {}",
                    constraint_words(b.constraint)
                )),
                b.share,
                Unit::Fraction,
            ));
        }
        figures.push(Figure::new(
            of("share of the queued request-time with room in every limit read"),
            a.room_everywhere,
            Unit::Fraction,
        ));
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
        Reason::RunningCap(_) | Reason::AtCapNothingWaits(_) => {
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
        // no budget in force is known: a larger one is no known gain
        Reason::PrefillLimit(f) if f.source == prefill_limit::LimitSource::SteadyPasses => {
            Vec::new()
        }
        Reason::PrefillLimit(_) => vec![Lever::ChunkedPrefillSize, Lever::MaxPrefillTokens],
        Reason::Conservative(_) => vec![Lever::ScheduleConservativeness, Lever::MaxTokens],
        // a PD decode node's load comes from the prefill side, not from a client setting
        Reason::ClientBound if pd_decode => Vec::new(),
        Reason::ClientBound => vec![Lever::ClientConcurrency],
        _ => Vec::new(),
    };
    let (kind, title, detail, confidence) = match reason {
        Reason::AssumedCapUnreadPool(l) => (
            FindingKind::RunningCapBound,
            "Running-request cap or KV pool: the log cannot tell".to_string(),
            format!(
                "~{:.0} requests wait while the running batch reaches {} (counting each prefill pass's new requests{}): SGLang's default max_running_requests with speculative decoding (server_args.py resets an unset cap to {}), which the log does not print, and no line reads the KV pool's token usage. Either that cap holds the queue, or the KV pool (with the reserve SGLang keeps for the running requests' remaining tokens) is full at about that many requests. The start-up lines (max_running_requests, max_total_num_tokens) or a batch line with token usage tell which: a higher --max-running-requests admits more only when the cap is {} and the pool has room; a full pool needs more KV memory instead.",
                v.queued.median.unwrap_or(0.0),
                cap.max_running_requests.unwrap_or(0),
                if l.share() < th::AT_CAP_SHARE {
                    format!(", on {:.0}% of the lines", l.share() * 100.0)
                } else {
                    String::new()
                },
                th::SPEC_DEFAULT_MAX_RUNNING,
                cap.max_running_requests.unwrap_or(0),
            ),
            Confidence::Low,
        ),
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
        Reason::RunningCap(_) | Reason::AtCapNothingWaits(_) => (
            FindingKind::RunningCapBound,
            match reason {
                Reason::AtCapNothingWaits(_) => {
                    "At the running-request cap, with nothing waiting".to_string()
                }
                _ => "Running-request cap bound".to_string(),
            },
            format!(
                "The running batch {} its ceiling{}{}{}{}.{} {}",
                match reason {
                    Reason::RunningCap(l) | Reason::AtCapNothingWaits(l) if l.share() < th::AT_CAP_SHARE => format!("reaches (on {:.0}% of the lines, with running plus waiting requests filling it)", l.share() * 100.0),
                    _ => "stays at".to_string(),
                },
                match (cap.max_running_requests, v.pinned_across_ranks) {
                    (Some(c), _) if cap.max_running_inferred => format!(
                        " ({c} per DP rank: SGLang's default max_running_requests with speculative decoding, which the log does not print but every decode line reaches and none exceeds)"
                    ),
                    (Some(c), _) => format!(" (max_running_requests={c} per DP rank)"),
                    (None, Some(p)) => format!(
                        " of {p} requests on every decode line of every rank (a cap of {p} per DP rank: max_running_requests, which the log does not print; not a router's limit, since requests wait in the scheduler's own queue)"
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
                if matches!(reason, Reason::AtCapNothingWaits(_)) {
                    "Nothing waits, so the cap holds back no request the log shows: if the client has more to send than the cap, raise both together; if not, the client sets the load."
                } else if running_cap::pool_near_full(v) {
                    "Raise it together with the KV pool (mem_fraction_static, fp8 KV cache), or leave it."
                } else {
                    "Raise it if memory allows; if the client's concurrency equals this cap, raise both together, since either alone changes nothing."
                }
            ),
            match reason {
                Reason::AtCapNothingWaits(_) => Confidence::Low,
                _ => Confidence::Medium,
            },
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
                     SGLang's PrefillAdder admits as many waiting requests as the budget and the pool hold, so something else caps each pass at one: a build without batched prefill (older speculative decoding), a running-request cap the batch sits just below (each pass fills it), or a per-pass admission setting of this build (requests already waiting in the scheduler's queue did not arrive too late for the pass). \
                     Check which: the budget is not it, so raising --chunked-prefill-size or --max-prefill-tokens changes nothing.",
                    o.passes, o.median_prompt, f.limit_tokens
                ),
                (None, Some(o)) => format!(
                    "Each of {} prefill passes admitted one request (prompts of ~{} tokens) while requests waited: requests leave the queue one per pass. \
                     SGLang's PrefillAdder admits as many waiting requests as the budget and the pool hold, and this log prints no budget (SGLang's default max_prefill_tokens is {}, its default chunk size depends on the GPU): \
                     either the budget (chunked_prefill_size or max_prefill_tokens) is below two of these prompts, or something else caps each pass at one: a build without batched prefill (older speculative decoding), or a running-request cap the batch sits just below (each pass fills it); requests already waiting in the scheduler's queue did not arrive too late for the pass. \
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
                None if f.source == prefill_limit::LimitSource::SteadyPasses => format!(
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
                        prefill_limit::LimitSource::Configured => "the configured chunked_prefill_size / max_prefill_tokens",
                        prefill_limit::LimitSource::RepeatedChunk => "batch after batch filled to exactly this size, SGLang's chunked prefill at work; the log does not print chunked_prefill_size",
                        prefill_limit::LimitSource::DefaultBudget => "SGLang's default max_prefill_tokens; the log does not print the configured one",
                        prefill_limit::LimitSource::SteadyPasses => "the size the passes fill again and again",
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
        Reason::PdTransfer(pd_transfer::Facts {
            full_batches: Some(b),
            prealloc_max,
            ..
        }) => (
            FindingKind::PrefillBound,
            "Prefill bound: this PD prefill server runs full batches".to_string(),
            format!(
                "Up to {prealloc_max} requests stand in the bootstrap queue (#prealloc-req) while {:.0}% of the prefill passes made meanwhile carry {} requests, {}: this server prefills as fast as it can, and its queue is its own (SGLang admits from the bootstrap queue only while its metadata buffer, twice max_running_requests, has a free slot). The decode side is not what holds it. Add prefill capacity (more prefill instances) or raise this server's --max-running-requests if its memory allows.",
                b.share * 100.0,
                b.per_pass,
                if b.configured {
                    "its max_running_requests per DP rank"
                } else {
                    "the largest batch it ran (the log states no cap)"
                }
            ),
            Confidence::Medium,
        ),
        Reason::PdTransfer(_) => (
            FindingKind::PdTransferBound,
            "PD transfer / pre-allocation bound".to_string(),
            "On this prefill server requests stand in the bootstrap/pre-allocation queue (#prealloc-req) while none waits for prefill itself, and its prefill passes are not full: they wait for the decode side to hand-shake and pre-allocate their KV, so this server prefills only as fast as the decode side accepts. Check the decode server's KV usage, running cap and the transfer backend."
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
                "Nearly nothing waits in the queue{}: the server runs what it is given. More throughput needs more concurrent requests from the client (raise its concurrency){}; server settings can only make each step faster.",
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

/// How full the pools are, as a clause after a main one: " and every pool the log reports has
/// room (…)" only when [`PoolRoom::Room`]; otherwise the fullest pool and its usage, or that
/// the log prints no usage.
fn pool_room_clause(room: &PoolRoom) -> String {
    match room {
        PoolRoom::Room {
            fullest,
            pool: PoolKind::Kv,
        } => {
            format!(" and the KV cache has room (fullest pool at {fullest:.2}, 90th percentile)")
        }
        PoolRoom::Room { fullest, pool } => format!(
            " and every pool has room (the fullest, the {}, at {fullest:.2}, 90th percentile)",
            pool_name(*pool)
        ),
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

/// An admission constraint, as the figures name it.
fn constraint_words(c: admission::Constraint) -> &'static str {
    match c {
        admission::Constraint::RunningCap => "the running-request cap",
        admission::Constraint::KvPool => "the KV pool",
        admission::Constraint::KvReserve => {
            "the KV pool's reserve for the running requests (token usage high, below the full mark)"
        }
        admission::Constraint::SwaPool => "the SWA pool",
        admission::Constraint::MambaSlots => "the mamba state slots",
        admission::Constraint::PrefillBudget => "the prefill token budget",
        admission::Constraint::OnePerPass => "one request per prefill pass",
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
