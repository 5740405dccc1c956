//! Findings of the client and its benchmarks: failed requests, queueing, the concurrency
//! limit, the client gap, a short sample's adequacy and Little's law.

use super::{bottleneck_label, confidence_pct, count, finding, interval, with_levers};
use crate::report::{
    BenchmarkRun, Bottleneck, ClientSummary, Confidence, Figure, Finding, FindingKind, Lever,
    SampleAdequacy, Unit,
};
use crate::rules::{
    bench_concurrency_limit, bench_failures, bench_queueing, bench_tokens, client_gap, littles_law,
};
use crate::thresholds as th;

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

/// The finding of [`crate::rules::bench_queueing`]; `bottleneck` is the server-side verdict from
/// the logs; `overcounted`: the client counts output tokens the server did not generate
/// ([`crate::rules::bench_tokens`]).
pub fn bench_queueing(
    run: &BenchmarkRun,
    f: &bench_queueing::Facts,
    bottleneck: Bottleneck,
    overcounted: bool,
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
        // the client counts tokens the server did not generate (`bench_tokens`): its output
        // rate is no measure of what the admitted requests achieve
        _ if overcounted => " Its output throughput counts tokens the server did not generate (see the finding on its token count), so it is no measure of the server; if the server queues, more requests in flight only lengthen the wait.".to_string(),
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

/// The finding of [`crate::rules::bench_tokens`].
pub fn bench_tokens(run: &BenchmarkRun, f: &bench_tokens::Facts) -> Finding {
    let retok = f
        .retokenized_per_request
        .map(|r| {
            format!(" (its own retokenized count, ~{r:.0} per request, is closer to the server's)")
        })
        .unwrap_or_default();
    let mut figures = vec![
        Figure::new(
            "output tokens per request, as the client counts them",
            f.client_tokens_per_request,
            Unit::Tokens,
        ),
        Figure::new(
            "tokens the server generated per completed request",
            f.server_tokens_per_request,
            Unit::Tokens,
        ),
        Figure::new("the run's request rate", f.req_per_s, Unit::ReqPerS),
        Figure::new("server gen throughput", f.server_tok_per_s, Unit::TokPerS),
    ];
    if let Some(c) = f.client_tok_per_s {
        figures.push(Figure::new(
            "the client's output throughput",
            c,
            Unit::TokPerS,
        ));
    }
    finding(
        FindingKind::BenchmarkTokensDisagree,
        format!(
            "The benchmark counts ~{:.0} output tokens per request; the server generated ~{:.0} per completed request",
            f.client_tokens_per_request, f.server_tokens_per_request
        ),
        format!(
            "At the benchmark's {:.2} req/s (a whole-run average, which only understates the steady rate), the server's {:.0} tok/s is ~{:.0} tokens per completed request, {:.0}% fewer than the client counts{retok}. \
             The client's output tokens are not the server's: a length requested under ignore_eos that the server did not produce, or chunks or re-encoded text counted as tokens. \
             Its output throughput ({} tok/s) and anything worked out from its tokens per request overstate what the server generated: judge throughput by the server's rate, and check the client's token counting before comparing runs by it.",
            f.req_per_s,
            f.server_tok_per_s,
            f.server_tokens_per_request,
            (1.0 - f.server_tokens_per_request / f.client_tokens_per_request) * 100.0,
            super::num(f.client_tok_per_s, 0)
        ),
        figures,
        vec![run.source.clone()],
        Confidence::Medium,
    )
}
