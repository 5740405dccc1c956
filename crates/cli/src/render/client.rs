//! The client's sections of the report: the client view (its rates, latencies, the check of
//! its own summary against its records) and the benchmark runs as each client printed them.

use diagnosis::narrative::{client_format_words, confidence_pct, fmt_duration};
use diagnosis::report::{BenchmarkRun, ClientSummary, RateBasis};

use super::{f, opt, range_text, rate_text};

/// The client section; `ranks`: `(seen, of)` when the log holds only `seen` of the server's
/// `of` DP ranks (the server-side figure then covers those ranks only).
pub(super) fn client_lines(c: &ClientSummary, ranks: Option<(usize, u32)>) -> Vec<String> {
    let mut o = vec![format!(
        "source {} ({}{}): {} completed, {} failed{}",
        c.source,
        client_format_words(c.format),
        c.records_of
            .as_deref()
            .map(|r| format!("; the records of {r}"))
            .unwrap_or_default(),
        c.completed,
        c.failed,
        c.total.map(|t| format!(" of {t}")).unwrap_or_default()
    )];
    // as printed, to three decimals at most (a summary file's figures carry all of a double's)
    let printed = |x: f64| {
        let s = format!("{x:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    match (
        c.printed_req_per_s.map(printed),
        c.printed_tok_per_s.map(printed),
    ) {
        (Some(p), Some(t)) => o.push(format!(
            "the client printed       {p} req/s, {t} tok/s (as the client counts them)"
        )),
        (Some(p), None) => o.push(format!("the client printed       {p} req/s")),
        (None, Some(t)) => o.push(format!(
            "the client printed       {t} tok/s (as the client counts them)"
        )),
        (None, None) => {}
    }
    for (name, r) in [
        ("lifetime average        ", &c.lifetime_req_per_s),
        ("steady-window rate      ", &c.windowed_req_per_s),
        ("implied by server tokens", &c.implied_req_per_s),
    ] {
        if let Some(r) = r {
            let part = match ranks {
                Some((seen, of)) if r.basis == RateBasis::ImpliedByServerTokens => format!(
                    " (from the {seen} of the server's {of} DP ranks in the log: the whole server about {:.1}x)",
                    f64::from(of) / seen as f64
                ),
                _ => String::new(),
            };
            o.push(format!("{name} {}{part}", rate_text(r, 3)));
        }
    }
    if let Some(t) = c.lifetime_tok_per_s {
        o.push(format!(
            "output tokens            {t:.1} tok/s over the lifetime (the records' completion tokens)"
        ));
    }
    if let Some(m) = c.mean_completion_tokens {
        o.push(format!(
            "mean completion {m:.0} tokens{}",
            c.mean_prompt_tokens
                .map(|p| format!(", mean prompt {p:.0} tokens"))
                .unwrap_or_default()
        ));
    }
    if let Some(t) = &c.ttft_s {
        o.push(format!(
            "time to first token      mean {:.2} s, median {:.2} s, p99 {:.2} s over {} requests (the client's records)",
            t.mean, t.p50, t.p99, t.n
        ));
    }
    if let Some(t) = &c.itl_s {
        o.push(format!(
            "inter-token latency      mean {:.1} ms, median {:.1} ms, p99 {:.1} ms over {} requests (each request's mean)",
            t.mean * 1000.0,
            t.p50 * 1000.0,
            t.p99 * 1000.0,
            t.n
        ));
    }
    if !c.claims.is_empty() {
        use diagnosis::report::ClaimedFigure as F;
        let parts: Vec<String> = c
            .claims
            .iter()
            .map(|k| {
                let (name, claimed, records) = match k.figure {
                    F::CompletedRequests => (
                        "completed",
                        format!("{:.0}", k.claimed),
                        format!("{:.0}", k.from_records),
                    ),
                    F::FailedRequests => (
                        "failed",
                        format!("{:.0}", k.claimed),
                        format!("{:.0}", k.from_records),
                    ),
                    F::CancelledRequests => (
                        "cancelled",
                        format!("{:.0}", k.claimed),
                        format!("{:.0}", k.from_records),
                    ),
                    F::RequestRate => (
                        "req/s",
                        format!("{:.3}", k.claimed),
                        format!("{:.3}", k.from_records),
                    ),
                    F::OutputTokenRate => (
                        "output tok/s",
                        format!("{:.1}", k.claimed),
                        format!("{:.1}", k.from_records),
                    ),
                    F::MeanTtft => (
                        "mean TTFT s",
                        format!("{:.3}", k.claimed),
                        format!("{:.3}", k.from_records),
                    ),
                    F::MeanItl => (
                        "mean ITL ms",
                        format!("{:.2}", k.claimed * 1e3),
                        format!("{:.2}", k.from_records * 1e3),
                    ),
                };
                let mark = if k.agrees || k.from_records == 0.0 {
                    String::new()
                } else {
                    format!(
                        " (differs by {:+.0}%)",
                        (k.claimed / k.from_records - 1.0) * 100.0
                    )
                };
                format!("{name} {claimed} vs {records}{mark}")
            })
            .collect();
        o.push(format!(
            "client's summary vs its records: {}",
            parts.join(" · ")
        ));
    }
    if c.cancelled > 0 {
        o.push(format!(
            "cancelled in flight      {} requests (the client stopped them, at its time limit): neither completed nor failed",
            c.cancelled
        ));
    }
    if let Some(a) = &c.adequacy {
        o.push(format!("sample adequacy: {}", a.text));
    }
    if let Some(e) = &c.eta {
        o.push(format!(
            "ETA for the remaining {} requests: {} ({} interval {} to {})",
            e.remaining,
            fmt_duration(e.seconds),
            confidence_pct(),
            fmt_duration(e.low_s),
            e.high_s
                .map(fmt_duration)
                .unwrap_or_else(|| "unbounded".into())
        ));
    }
    o
}

pub(super) fn bench_lines(runs: &[BenchmarkRun]) -> Vec<String> {
    let ms = |v: Option<f64>| f(v.map(|x| x * 1e3), 1);
    let mut o = Vec::new();
    for run in runs {
        let b = &run.summary;
        let ok = opt(b.successful_requests.or(b.total_requests));
        let of = b
            .requested()
            .map(|n| format!(" of {n}"))
            .unwrap_or_default();
        let limit = b
            .max_concurrency
            .map(|m| format!(" (limit {m})"))
            .unwrap_or_default();
        // the client, its version and which run of the file (a sweep's benchmark) it is
        let who: Vec<String> = [
            diagnosis::narrative::bench_client_words(b.client).map(|c| match &b.client_version {
                Some(v) => format!("{c} {v}"),
                None => c.to_string(),
            }),
            b.label.clone(),
        ]
        .into_iter()
        .flatten()
        .collect();
        o.push(if who.is_empty() {
            range_text(&run.source)
        } else {
            format!("{} ({})", range_text(&run.source), who.join(", "))
        });
        o.push(format!(
            "  {ok} ok{of} in {} s · {} req/s · output {} tok/s (peak {}) · {} requests in flight{limit} · sent at {}{}",
            f(b.duration_s, 1),
            f(b.request_throughput, 2),
            f(b.output_tok_per_s, 0),
            f(b.peak_output_tok_per_s, 0),
            f(b.concurrency, 1),
            match (b.request_rate_per_s(), b.request_rate.as_deref()) {
                (Some(r), _) => format!("{r} req/s"),
                (None, Some("inf")) => "once (rate inf)".to_string(),
                (None, Some(other)) => format!("rate {other}"),
                (None, None) => "an unprinted rate".to_string(),
            },
            b.accept_length.map(|a| format!(" · accept length {a:.2}")).unwrap_or_default()
        ));
        if let Some(n) = b.cancelled_requests.filter(|&n| n > 0) {
            o.push(format!(
                "  {n} requests cancelled in flight by the client (at its time limit): neither completed nor failed"
            ));
        }
        o.push(format!(
            "  mean (median, p99) TTFT {} ({}, {}) ms · TPOT {} ({}, {}) ms · ITL {} ({}, {}) ms · end to end {} ({}, {}) ms",
            ms(b.ttft.mean_s),
            ms(b.ttft.median_s),
            ms(b.ttft.p99_s),
            ms(b.tpot.mean_s),
            ms(b.tpot.median_s),
            ms(b.tpot.p99_s),
            ms(b.itl.mean_s),
            ms(b.itl.median_s),
            ms(b.itl.p99_s),
            ms(b.e2e.mean_s),
            ms(b.e2e.median_s),
            ms(b.e2e.p99_s)
        ));
    }
    o
}
