//! The headline's words, from its figures.

use super::{count, fmt_duration, interval};
use crate::report::{BenchmarkRun, Bottleneck, Headline, SentTooFast};
use crate::thresholds as th;

/// Clauses with their numbers, leaving out what is unknown (never `?` in a sentence).
fn clause(template: &str, v: Option<f64>, digits: usize) -> Option<String> {
    v.filter(|x| x.is_finite())
        .map(|x| template.replace("{}", &format!("{x:.digits$}")))
}

fn join_clauses(parts: Vec<Option<String>>) -> String {
    let parts: Vec<String> = parts.into_iter().flatten().collect();
    match parts.len() {
        0 => String::new(),
        1 => parts[0].clone(),
        _ => format!(
            "{} and {}",
            parts[..parts.len() - 1].join(", "),
            parts[parts.len() - 1]
        ),
    }
}

fn while_(parts: Vec<Option<String>>) -> String {
    let rest = join_clauses(parts);
    if rest.is_empty() {
        String::new()
    } else {
        format!(" while {rest}")
    }
}

/// The headline of a run without scheduler lines but with benchmark summaries: the last run's figures.
/// A benchmark-only headline whose client did not stream: only its request rate stands.
fn not_streamed_summary(runs: &[BenchmarkRun], sent: Option<SentTooFast>) -> Option<String> {
    let b = &runs.last()?.summary;
    let ok = b
        .successful_requests
        .map(|n| format!("{} requests succeeded", count(n)))
        .unwrap_or_else(|| "requests ran".into());
    let rate = b
        .request_throughput
        .map(|r| format!(" at {r:.2} req/s"))
        .unwrap_or_default();
    Some(match sent {
        Some(s) => format!(
            "only a benchmark summary, from a client that did not stream (TTFT equals end-to-end latency, ITL 0): its latency figures are invalid, and its rates do not hold together either — {ok}{rate}, above the {:.1} req/s it says it sent at ({} requests take ~{:.0} s to send at that rate; the run printed {:.0} s), so its rate line or its duration is not what the run did (a driver that replays a trace ignores the rate). A measurement artifact, not a server bottleneck.",
            s.sent_per_s,
            count(s.requests),
            s.send_s,
            s.duration_s
        ),
        None => format!(
            "only a benchmark summary, from a client that did not stream (TTFT equals end-to-end latency, ITL 0): its latency figures are invalid and only the request rate is usable — {ok}{rate}. A measurement artifact, not a server bottleneck."
        ),
    })
}

fn benchmark_summary(runs: &[BenchmarkRun]) -> Option<String> {
    let b = &runs.last()?.summary;
    let mut parts = Vec::new();
    match (b.successful_requests, b.requested(), b.failed()) {
        (Some(ok), Some(req), Some(f)) if f > 0 => parts.push(format!(
            "{} of {} requests succeeded",
            count(ok),
            count(req)
        )),
        (Some(ok), _, _) => parts.push(format!("{} requests succeeded", count(ok))),
        _ => {
            if let Some(n) = b.total_requests {
                parts.push(format!("{} requests", count(n)));
            }
        }
    }
    if let Some(o) = b.output_tok_per_s {
        parts.push(format!("{o:.0} output tok/s over the whole run"));
    }
    if let Some(c) = b.concurrency {
        parts.push(format!("{c:.1} in flight on average"));
    }
    if let Some(t) = b.ttft.mean_s {
        parts.push(format!("mean TTFT {t:.2} s"));
    }
    if let Some(t) = b.tpot.mean_s {
        parts.push(format!("mean TPOT {:.1} ms", t * 1e3));
    }
    if parts.is_empty() {
        return None;
    }
    let runs_s = if runs.len() > 1 {
        format!(" (last of {} runs)", runs.len())
    } else {
        String::new()
    };
    let of = super::bench_client_words(b.client)
        .map(|c| format!(" of {c}"))
        .unwrap_or_default();
    Some(format!(
        "only a benchmark summary{of}{runs_s} — {}.",
        parts.join(", ")
    ))
}

/// The label and summary of a headline from its figures. `long_stall`: a frozen run of a minute
/// or more was seen (else a stall verdict rests on the watchdog); `benchmarks`: the runs read,
/// for a log without scheduler lines.
pub fn headline(h: &Headline, long_stall: bool, benchmarks: &[BenchmarkRun]) -> (String, String) {
    let per_rank = if h.dp_ranks > 1 { " per DP rank" } else { "" };
    let run_s = match (h.running_median, h.running_total) {
        (Some(r), Some(t)) => Some(match h.dp_ranks_of {
            Some(of) => format!(
                "~{r:.0} requests run{per_rank} (~{t:.0} over the {} of {of} ranks in the log)",
                h.dp_ranks
            ),
            None => format!(
                "~{r:.0} requests run{per_rank} (~{t:.0} over {} ranks)",
                h.dp_ranks
            ),
        }),
        (Some(r), None) if r.round() == 1.0 => Some("~1 request runs".to_string()),
        (Some(r), None) => Some(format!("~{r:.0} requests run")),
        _ => None,
    };
    let wait_s = match (h.queued_median, h.queued_peak) {
        (Some(m), _) if m >= 1.0 => Some(format!("~{m:.0} wait")),
        (_, Some(p)) if p >= 1.0 => Some(format!("up to {p:.0} wait (none most of the time)")),
        (Some(_), _) => Some(match h.refill_queue_peak {
            Some(p) => format!(
                "nothing waits on the decode lines (requests queue only while the batch refills, up to {p:.0} on prefill lines)"
            ),
            None => "nothing waits".to_string(),
        }),
        _ => None,
    };
    let usage_s = clause("token usage ~{}", h.token_usage_median, 2);
    if let Some((label, body)) =
        super::incident_headline(h.verdict, h.incident.as_ref(), h.startup.as_ref())
    {
        return (label.to_string(), body);
    }
    let (label, body) = match h.verdict {
        Bottleneck::KvCacheBound => (
            "KV-cache bound",
            match (
                h.running_median,
                h.retraction_events,
                h.pool_fill,
                h.long_requests,
            ) {
                (None, Some(n), _, _) => {
                    format!("the KV pool ran out during decode ({n} retraction events).")
                }
                (Some(_), _, Some(f), _) => format!(
                    "the pool fills as the queue is admitted: token usage ~{:.2} held by {} requests, and with the {} still to come they would need ~{:.2} of it; prefill sets the pace of the ramp only, so larger prefill chunks reach this limit sooner.",
                    f.usage, f.holding, f.to_come, f.projected_usage
                ),
                (Some(_), _, _, Some(l)) => {
                    format!(
                        "{} held by ~{:.0} request{} of ~{} tokens each while nothing waits: long (or runaway) requests fill the pool, not many requests.",
                        usage_s.unwrap_or_else(|| "the pool is full".into()),
                        l.running,
                        if l.running.round() == 1.0 { "" } else { "s" },
                        super::count(l.tokens_per_request.round() as u64),
                    )
                }
                // no line prints `#queue-req`: say so rather than "nothing waits"
                (Some(_), _, _, _) if h.queued_median.is_none() => format!(
                    "{} (the log prints no #queue-req: whether requests wait is unknown).",
                    join_clauses(vec![usage_s, run_s])
                ),
                _ => format!("{}.", join_clauses(vec![usage_s, run_s, wait_s])),
            },
        ),
        Bottleneck::RunningCapBound => (
            "Running-request cap bound",
            format!(
                "the batch {} its ceiling of {}{}{}.",
                if h.at_cap_share.is_some_and(|s| s < th::AT_CAP_SHARE) {
                    "reaches"
                } else {
                    "stays at"
                },
                h.running_peak
                    .map(|m| format!("~{m:.0} requests{per_rank}"))
                    .unwrap_or_else(|| "its cap".into()),
                h.at_cap_share
                    .filter(|&s| s < th::AT_CAP_SHARE)
                    .map(|s| format!(
                        " on {:.0}% of the lines, and running plus waiting requests fill it",
                        s * 100.0
                    ))
                    .unwrap_or_default(),
                while_(vec![wait_s, usage_s])
            ) + if h.queued_median.is_some_and(|q| q < 0.5)
                && h.queued_peak.is_some_and(|q| q < 0.5)
            {
                " With no queue the log cannot tell whether more demand would run: a client holding as many requests as the cap over every rank looks the same; the client's own limit, or a log with a queue, tells."
            } else {
                ""
            },
        ),
        Bottleneck::PrefillBound if h.pd_prefill_full.is_some() => (
            "Prefill bound",
            h.pd_prefill_full
                .map(|f| format!(
                    "this PD prefill server runs full batches of {} requests on {:.0}% of its passes while up to {} wait in its bootstrap queue: it prefills as fast as it can, and the queue is its own (its metadata buffer, twice max_running_requests, admits no more until a slot frees), not the decode side's.",
                    f.per_pass,
                    f.share * 100.0,
                    f.waiting_max
                ))
                .unwrap_or_default(),
        ),
        Bottleneck::PrefillBound if h.one_per_pass => (
            "Prefill bound",
            format!(
                "each prefill pass admits one request{}, so requests leave the queue one per pass.",
                while_(vec![wait_s, usage_s])
            ),
        ),
        Bottleneck::PrefillBound => (
            "Prefill bound",
            format!(
                "prefill batches run at their size limit{}.",
                while_(vec![wait_s, usage_s])
            ),
        ),
        Bottleneck::SchedulerConservative => (
            "Scheduler too conservative",
            format!(
                "{} although {}.",
                wait_s.unwrap_or_else(|| "requests wait".into()),
                usage_s.unwrap_or_else(|| "the log prints no token usage".into())
            ),
        ),
        Bottleneck::AdmissionHeld => (
            "Admission held between prefill passes",
            held_summary(h.held_admission),
        ),
        Bottleneck::PdTransferBound => (
            "PD disaggregation",
            "requests pile up waiting for KV pre-allocation / bootstrap on the decode side."
                .to_string(),
        ),
        Bottleneck::Drain => (
            "Only the drain of a run",
            match h.drain {
                Some((from, to)) => format!(
                    "the batch only shrinks, from {from} to {to} running requests, with nothing waiting and nothing admitted: the client had stopped sending, so these lines are the tail of a run and say nothing of the server under load (nor of the client's concurrency)."
                ),
                None => {
                    "the batch only shrinks with nothing waiting: the tail of a run.".to_string()
                }
            },
        ),
        Bottleneck::ClientBound => (
            if h.pd_decode_transfer.is_some() {
                "PD decode fed by the prefill side"
            } else {
                "Client too slow / not enough load"
            },
            match h.pd_decode_transfer {
                // a PD decode node: its load is what the prefill side hands over
                Some(t) => format!(
                    "{}; this PD decode node runs what the prefill side hands it ({}, none waiting in its queue): look at the prefill nodes and the handoff to this one (bootstrap, KV transfer), not at this node.",
                    join_clauses(vec![run_s, usage_s]),
                    if t >= 0.05 {
                        format!("~{t:.1} requests in KV transfer per rank on average")
                    } else {
                        "hardly any request in KV transfer".to_string()
                    }
                ),
                None => format!(
                    "{}.",
                    join_clauses(vec![
                        wait_s.or(Some("nothing waits".into())),
                        run_s,
                        usage_s
                    ])
                ),
            },
        ),
        Bottleneck::Stall if !long_stall => (
            "Stall",
            "the scheduler watchdog fired: a scheduler hung (see the watchdog finding for where)."
                .to_string(),
        ),
        Bottleneck::Stall => (
            "Stall",
            "requests are running but tokens stopped moving (or the scheduler hung).".to_string(),
        ),
        Bottleneck::PrefillComputeBound => (
            "Prefill compute bound",
            format!(
                "{} with nothing queued{}.",
                h.slow_prefill.as_ref().map_or_else(
                    || "prefill crawls".to_string(),
                    |p| format!(
                        "{}-token prefill chunks take ~{:.0} s each (~{:.0} tok/s)",
                        p.chunk_tokens, p.seconds_per_chunk, p.tok_per_s
                    )
                ),
                while_(vec![run_s, usage_s])
            ),
        ),
        Bottleneck::DecodeComputeBound => (
            "Decode compute bound",
            format!(
                "decode is extremely slow per request{}.",
                while_(vec![run_s, usage_s])
            ),
        ),
        Bottleneck::Inconclusive => (
            "Inconclusive",
            match (h.queued_median, h.token_usage_median, h.running_median) {
                // the log ends in a JIT warm-up: nothing about load or speed yet
                _ if h.jit_compile.is_some() => format!(
                    "the log ends as the server enters DeepGEMM's JIT pre-compile (line {}), after its first requests: kernels compile for minutes (typically 10-20) on first use and requests wait meanwhile, so these lines are the warm-up and say nothing of load or speed. Run `python3 -m sglang.compile_deep_gemm` with the server's arguments before serving, and diagnose a log of the run after it.",
                    h.jit_compile.as_ref().map_or(0, |r| r.first_line)
                ),
                // requests wait at an empty pool: admission waits for a prefill pass
                _ if h.held_admission.is_some() => held_summary(h.held_admission),
                // a cap assumed, not stated, and the pool unread: either holds the queue
                _ if h.assumed_cap.is_some() => format!(
                    "~{:.0} requests wait while the running batch reaches {} (counting each prefill pass's new requests), SGLang's default running cap with speculative decoding, which this log does not print, and no line reads token usage: that cap{} holds them. The start-up lines (max_running_requests, {}max_total_num_tokens) or a batch line with token usage tell which.",
                    h.queued_median.unwrap_or(0.0),
                    h.assumed_cap.unwrap_or(0),
                    if h.one_per_pass {
                        ", the KV pool, or the one request each prefill pass admits (also below the cap: a prefill budget below two prompts, or the KV reserve)"
                    } else {
                        " or the KV pool"
                    },
                    if h.one_per_pass { "chunked_prefill_size, " } else { "" }
                ),
                // at the configured cap with nothing waiting: the cap holds nothing back
                _ if h.at_cap_share.is_some() => format!(
                    "the batch stays at its running-request cap ({}) and nothing waits{}, so the cap holds back no request the log shows; whether more demand would run is not in it: a client holding exactly as many requests as the cap looks the same. The client's own concurrency limit, or a log with a queue, tells.",
                    h.running_peak
                        .map(|m| format!("~{m:.0} requests{per_rank}"))
                        .unwrap_or_else(|| "max_running_requests".into()),
                    usage_s
                        .as_ref()
                        .map(|u| format!(" ({u})"))
                        .unwrap_or_default()
                ),
                // one line per scheduler: an instant
                (Some(q), Some(u), Some(r)) if h.lone_reading && q >= 0.5 => format!(
                    "one batch line per scheduler: ~{r:.0} requests run and ~{q:.0} wait at token usage ~{u:.2}, an instant; why they wait (the KV reserve SGLang holds for running requests' remaining tokens, a cap the log does not print, or a burst not admitted yet) needs a log of a minute or more."
                ),
                (Some(q), Some(u), Some(r)) if h.lone_reading => format!(
                    "one decode line per scheduler (~{r:.0} requests run, ~{q:.0} wait, token usage ~{u:.2}) at a crawl for its batch: an instant whose window either spans idle time (SGLang's rate divides the tokens since the previous decode line by the time since then) or holds steps that hang (a collective waiting on a peer, a stuck rank). Which one, and whether the client sends too little, needs a log of a minute or more; if the server stopped responding, a py-spy dump of each scheduler shows where it hangs."
                ),
                // the queue field is missing: whether the pool turns requests away is unknown
                (None, Some(u), Some(r)) => format!(
                    "~{r:.0} requests run at token usage ~{u:.2}, and the log prints no #queue-req, so whether requests wait (and for what) is unknown."
                ),
                _ => "the batch lines do not point to one bottleneck.".to_string(),
            },
        ),
        Bottleneck::RequestsRejected => ("Requests rejected", rejected_summary(h.rejected)),
        // worded by `incident_headline` (the stall above without a dump's frame)
        Bottleneck::OutOfMemory
        | Bottleneck::SchedulerCrashed
        | Bottleneck::StartupIncomplete
        | Bottleneck::StartupOnly
        | Bottleneck::KvTransferFailed
        | Bottleneck::NoSchedulerLines => (
            "No SGLang scheduler lines",
            if h.benchmark_not_streamed {
                not_streamed_summary(benchmarks, h.benchmark_sent_too_fast)
            } else {
                benchmark_summary(benchmarks)
            }
            .unwrap_or_else(|| {
                if h.no_server_log {
                    "no server log was given (give the SGLang server's log as LOG; without it GPU memory, a model config or a client's files say what they hold, not why the server is slow).".to_string()
                } else {
                    "none were found in the input.".to_string()
                }
            }),
        ),
    };
    let mut summary = body;
    // The logged gen throughput while busy vs the average over wall time (idle gaps included).
    if let Some(r) = &h.gen_throughput {
        let ci = interval(r, 0);
        let ci = if ci.is_empty() { ci } else { format!("{ci}, ") };
        let few = super::samples_note(r, h.dp_ranks);
        // a log of some of the server's DP ranks: the sum is theirs, not the server's
        let subject = match h.dp_ranks_of {
            Some(of) if h.dp_ranks >= 1 => format!(
                "The {} DP ranks in the log (of at least {of}) generate",
                h.dp_ranks
            ),
            // SGLang tags a line with its DP rank only when there are several
            // (`data_parallel_controller.py` starts each scheduler with its `dp_rank`)
            _ if h.dp_ranks == 1 => {
                "The one DP rank in the log (of at least 2: SGLang tags lines with a DP rank only when there are several) generates".to_string()
            }
            _ => "Server generates".to_string(),
        };
        summary.push_str(&match h.busy_gen_tok_per_s {
            _ if few.is_some() => format!(
                " {subject} {:.0} tok/s ({}).",
                r.value,
                few.unwrap_or_default()
            ),
            Some(m) if r.value < th::BUSY_VS_AVERAGE * m && h.dp_ranks <= 1 => format!(
                " The server averages {:.0} tok/s over {} ({ci}idle gaps included); while decoding it runs at ~{m:.0} tok/s.",
                r.value,
                fmt_duration(r.window_s)
            ),
            _ if !r.basis_is_steady() => format!(
                " {subject} {:.0} tok/s averaged over the lines judged ({ci}over {}; no steady state found).",
                r.value,
                fmt_duration(r.window_s)
            ),
            _ => format!(
                " {subject} {:.0} tok/s in steady state ({ci}over {}).",
                r.value,
                fmt_duration(r.window_s)
            ),
        });
    }
    if let (Some(tokens), Some(rate)) = (h.pd_prefill_tokens, h.pd_prefill_tok_per_s) {
        summary.push_str(&format!(
            " This is a PD prefill instance: it runs no decode (its running count stays near 0), so its work is prefill: {tokens} new prompt tokens, ~{rate:.0} tok/s over its lines."
        ));
    }
    if let Some(r) = h
        .ramp_only
        .filter(|r| r.queued_start == 0 && r.queued_end == 0)
    {
        summary.push_str(&format!(
            " This log holds only a ramp: running climbs {} → {} while nothing waits (requests are admitted as they arrive; the client is still ramping up): the steady load is not in it; capture a longer log for the rates.",
            r.running_start, r.running_end
        ));
    } else if let Some(r) = &h.ramp_only {
        summary.push_str(&format!(
            " This log holds only the ramp-up of a burst (running {} → {}, queue {} → {}): the steady state is not in it; capture a longer log for the rates.",
            r.running_start, r.running_end, r.queued_start, r.queued_end
        ));
    }
    (label.to_string(), summary)
}

/// The summary of a held admission ([`Headline::held_admission`]).
fn held_summary(held: Option<crate::report::HeldAdmissionFacts>) -> String {
    let gap = held.and_then(|x| {
        x.prefill_gap_iters
            .map(|n| format!(" (prefill batches up to {n} forward iterations apart)"))
            .or(x
                .prefill_gap_s
                .filter(|&s| s > 0.0)
                .map(|s| format!(" (prefill batches up to {} apart)", super::fmt_duration(s))))
    });
    format!(
        "requests wait while the KV pool is nearly empty: admission waits for the next prefill pass{}; check how often the server schedules prefill.",
        gap.unwrap_or_default()
    )
}

/// The headline of [`Bottleneck::RequestsRejected`].
fn rejected_summary(r: Option<crate::report::RejectedRequests>) -> String {
    let Some(r) = r else {
        return "the server turned the generation requests away; no batch ran.".to_string();
    };
    let http = match (r.client_errors, r.server_errors) {
        (0, 0) => String::new(),
        (c, 0) => format!(
            "{c} generation request{} answered 4xx",
            if c == 1 { "" } else { "s" }
        ),
        (0, e) => format!(
            "{e} generation request{} answered 5xx",
            if e == 1 { "" } else { "s" }
        ),
        (c, e) => format!("{c} generation requests answered 4xx and {e} 5xx"),
    };
    let context = r.context_len.map(|ctx| {
        format!(
            "prompts{} over the model's context length of {ctx} tokens",
            r.largest_requested
                .map(|t| format!(" plus max_tokens (up to {t} tokens)"))
                .unwrap_or_default()
        )
    });
    match (http.is_empty(), context) {
        (false, Some(c)) => format!(
            "{http}: {c}; no batch ran. Shorten the prompts or lower max_tokens, or raise --context-length if the model supports it."
        ),
        (true, Some(c)) => format!(
            "{c}; no batch ran. Shorten the prompts or lower max_tokens, or raise --context-length if the model supports it."
        ),
        (_, None) => format!(
            "{http}, and no batch ran: the requests never reached the scheduler (see the lines for why)."
        ),
    }
}
