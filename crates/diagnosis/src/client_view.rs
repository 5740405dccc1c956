//! The client's view, as numbers: completions over time from a progress log or timed records,
//! the lifetime average, the rate over the server's steady window, the request rate the
//! server's tokens imply, the adequacy of a short sample and the ETA. Findings about the
//! client/server gap are rules (`rules::client_gap`, `rules::littles_law`).

use sglang_log::{ClientEvidence, ClientFormat};

use crate::context::Context;
use crate::report::{
    ClientSetAside, ClientSummary, EtaSummary, Rate, RateBasis, SampleAdequacy, SetAsideReason,
    Unit,
};
use crate::thresholds as th;

/// The server's steady span on the log's clock (seconds), as finely as that clock places it.
#[derive(Clone, Copy, Debug)]
pub struct SteadyClock {
    /// Start of the steady span (seconds).
    pub start_s: f64,
    /// End of the steady span, to the end of its last clock tick (seconds).
    pub end_s: f64,
    /// The log clock's resolution (seconds; 1.0 for whole-second timestamps, 0.0 for finer).
    pub resolution_s: f64,
}

/// A request rate from a Poisson estimate.
pub fn rate_from(est: &throughput_stats::RateEstimate, basis: RateBasis) -> Rate {
    Rate {
        value: est.rate_per_s,
        low: Some(est.ci_low),
        high: est.ci_high.is_finite().then_some(est.ci_high),
        confidence: est.confidence,
        unit: Unit::ReqPerS,
        window_s: est.window_s,
        basis,
        method: String::new(),
        lines: None,
    }
}

/// A rate as the Poisson estimate it came from (for ETA and Little's law).
pub fn as_estimate(r: &Rate) -> throughput_stats::RateEstimate {
    throughput_stats::RateEstimate {
        rate_per_s: r.value,
        count: 0,
        window_s: r.window_s,
        ci_low: r.low.unwrap_or(r.value),
        ci_high: r.high.unwrap_or(r.value),
        confidence: r.confidence,
    }
}

/// The request rate a server token rate implies: `tok/s / mean completion tokens`, with a
/// delta-method interval from the token rate's interval and the completion lengths' standard
/// deviation `sd` over `n` requests (`throughput_stats::request_rate_from_tokens`). `None` when
/// the mean is not positive or the inputs are not finite.
pub fn implied_rate(server_tps: &Rate, mean: f64, sd: f64, n: u64) -> Option<Rate> {
    if mean <= 0.0 {
        return None;
    }
    let t = server_tps;
    let d = throughput_stats::request_rate_from_tokens(
        t.value,
        (t.low.unwrap_or(t.value), t.high.unwrap_or(t.value)),
        mean,
        sd,
        n,
        th::CONFIDENCE,
    )
    .ok()?;
    Some(Rate {
        value: d.rate_per_s,
        low: Some(d.ci_low),
        high: Some(d.ci_high),
        confidence: d.confidence,
        unit: Unit::ReqPerS,
        window_s: t.window_s,
        basis: RateBasis::ImpliedByServerTokens,
        method: String::new(),
        lines: None,
    })
}

/// The client source that drives the rates: the first with completion times (a progress log or
/// timed records), else the first.
pub fn primary_client(ctx: &Context) -> Option<&ClientEvidence> {
    ctx.clients
        .iter()
        .find(|c| {
            matches!(
                c.format,
                ClientFormat::ProgressLog | ClientFormat::TimedRecords
            )
        })
        .or_else(|| ctx.clients.first())
}

/// Sample adequacy of a `window_s` window at `rate` (exact Poisson, Garwood).
pub fn adequacy(rate: f64, window_s: f64) -> Option<SampleAdequacy> {
    let a = throughput_stats::adequacy(rate, window_s, th::CONFIDENCE).ok()?;
    Some(SampleAdequacy {
        window_s,
        rate_per_s: a.rate_per_s,
        expected_count: a.expected_count,
        low: a.ci_low,
        high: a.ci_high,
        confidence: a.confidence,
        window_needed_s: a.window_needed_for_10pct_s,
        adequate: matches!(a.verdict, throughput_stats::Verdict::Adequate),
        text: a.to_string(),
    })
}

/// Reconcile the client sources with the server's steady rate. Token counts come from every
/// client source (a progress log has none, a responses dump has them); rates from the
/// [`primary_client`].
pub fn client_summary(
    ctx: &Context,
    steady: Option<SteadyClock>,
    server_tps: Option<&Rate>,
) -> Option<ClientSummary> {
    let c = primary_client(ctx)?;
    let all_ok = || {
        ctx.clients
            .iter()
            .flat_map(|c| c.requests.iter())
            .filter(|r| r.ok)
    };
    let completions: Vec<f64> = all_ok()
        .filter_map(|r| r.completion_tokens)
        .map(|x| x as f64)
        .collect();
    let prompts: Vec<f64> = all_ok()
        .filter_map(|r| r.prompt_tokens)
        .map(|x| x as f64)
        .collect();
    let comp = throughput_stats::mean_sd(&completions);
    let spread = |get: fn(&sglang_log::ClientRequest) -> Option<f64>| {
        let xs: Vec<f64> = all_ok()
            .filter_map(get)
            .filter(|x| x.is_finite() && *x >= 0.0)
            .collect();
        throughput_stats::mean_sd(&xs).and_then(|(mean, _)| {
            Some(crate::report::LatencySpread {
                n: xs.len(),
                mean,
                p50: throughput_stats::quantile_f64(&xs, 0.5)?,
                p99: throughput_stats::quantile_f64(&xs, 0.99)?,
            })
        })
    };
    let ttft_s = spread(|r| r.ttft_s);
    let itl_s = spread(|r| r.itl_s);
    let mut s = ClientSummary {
        source: c.source.clone(),
        format: c.format,
        completed: 0,
        failed: c.failed(),
        total: None,
        printed_req_per_s: None,
        printed_tok_per_s: None,
        lifetime_req_per_s: None,
        lifetime_tok_per_s: None,
        records_of: c.records_of.clone(),
        claims: Vec::new(),
        windowed_req_per_s: None,
        implied_req_per_s: None,
        first_completion_after_s: None,
        // records first, else the last mean completion a progress log printed (`avg_comp`)
        mean_completion_tokens: comp.map(|x| x.0).or_else(|| {
            c.progress
                .iter()
                .rev()
                .find_map(|p| p.mean_completion_tokens)
        }),
        mean_prompt_tokens: throughput_stats::mean_sd(&prompts).map(|x| x.0),
        adequacy: None,
        eta: None,
        set_aside: Vec::new(),
        ttft_s,
        itl_s,
        cancelled: ctx.clients.iter().map(|c| c.cancelled).sum(),
    };

    // Cumulative completions over time, from either shape.
    let mut cum: Vec<(f64, u64)> = Vec::new();
    match c.format {
        ClientFormat::ProgressLog => {
            cum = c.progress.iter().map(|p| (p.t, p.done)).collect();
            if let Some(last) = c.progress.last() {
                s.total = c.progress.iter().rev().find_map(|p| p.total);
                s.printed_req_per_s = last.printed_req_per_s;
                s.printed_tok_per_s = last.printed_tok_per_s;
                s.completed = last.done;
            }
        }
        ClientFormat::TimedRecords => {
            let (times, set_aside, plausible) = timed_completions(c);
            s.set_aside = set_aside;
            s.completed = c.requests.iter().filter(|r| r.ok).count() as u64;
            cum = times
                .iter()
                .enumerate()
                .map(|(i, &t)| (t, i as u64 + 1))
                .collect();
            // the client's start: its first plausible submit, else the first completion
            if let Some(first_submit) = c
                .requests
                .iter()
                .filter_map(|r| r.submit)
                .filter(|&t| plausible(t))
                .reduce(f64::min)
            {
                cum.insert(0, (first_submit, 0));
            }
        }
        ClientFormat::UntimedRecords => {
            s.completed = c.requests.iter().filter(|r| r.ok).count() as u64;
        }
        // A benchmark's summary is read by `crate::bench::client_summary`.
        ClientFormat::BenchmarkSummary | ClientFormat::Unknown => {}
    }
    cum.sort_by(|a, b| a.0.total_cmp(&b.0));

    if cum.len() >= 2 {
        let (t0, _) = cum[0];
        let (t1, n1) = cum[cum.len() - 1];
        if let Ok(est) = throughput_stats::lifetime_rate(n1, t0, t1) {
            s.lifetime_req_per_s = Some(rate_from(&est, RateBasis::ClientLifetime));
        }
        // the records' completion tokens over the same span (the client's output throughput)
        if c.format == ClientFormat::TimedRecords && t1 > t0 && !completions.is_empty() {
            s.lifetime_tok_per_s = Some(completions.iter().sum::<f64>() / (t1 - t0));
        }
        s.first_completion_after_s = cum.iter().find(|p| p.1 > 0).map(|p| p.0 - t0);
        // Window: the server's steady span when the clocks overlap by more than the log clock
        // can resolve (a shorter overlap is an artefact of whole-second timestamps, not a
        // window), else the client's second half.
        let (mut from, to, basis) = match steady {
            Some(w)
                if w.start_s < t1
                    && w.end_s > t0
                    && w.end_s.min(t1) - w.start_s.max(t0) >= w.resolution_s =>
            {
                (
                    w.start_s.max(t0),
                    w.end_s.min(t1),
                    RateBasis::ClientSteadyWindow,
                )
            }
            _ => (t0 + (t1 - t0) / 2.0, t1, RateBasis::ClientSecondHalf),
        };
        // Never start the window before the first completion: the ramp holds none by construction.
        if let Some(first) = s.first_completion_after_s {
            from = from.max(t0 + first);
        }
        let at = |t: f64| -> u64 {
            cum.iter()
                .take_while(|p| p.0 <= t)
                .last()
                .map(|p| p.1)
                .unwrap_or(0)
        };
        if to > from {
            let n = at(to).saturating_sub(at(from));
            if let Ok(est) =
                throughput_stats::RateEstimate::from_count(n, to - from, th::CONFIDENCE)
            {
                s.windowed_req_per_s = Some(rate_from(&est, basis));
            }
        }
    }

    if let (Some(t), Some((m, sd))) = (server_tps, comp) {
        s.implied_req_per_s = implied_rate(t, m, sd, completions.len() as u64);
    }

    // Adequacy of a short sample at the best rate we have, and the ETA.
    let best = s
        .windowed_req_per_s
        .clone()
        .or_else(|| s.implied_req_per_s.clone());
    if let Some(r) = &best {
        let w = ctx.sample_window_s.unwrap_or(th::DEFAULT_SAMPLE_WINDOW_S);
        s.adequacy = adequacy(r.value, w);
        if let (Some(total), Some(w)) = (s.total, &s.windowed_req_per_s) {
            let remaining = total.saturating_sub(s.completed);
            if let Ok(e) = throughput_stats::eta(remaining as f64, &as_estimate(w)) {
                s.eta = Some(EtaSummary {
                    remaining,
                    seconds: e.seconds,
                    low_s: e.low_s,
                    high_s: e.high_s.is_finite().then_some(e.high_s),
                });
            }
        }
    }
    Some(s)
}

/// The completion times the rates count, sorted (seconds), what was set aside, and the test of
/// a plausible time: end times further than `max(`[`th::CLIENT_OUTLIER_MIN_S`]`,
/// `[`th::CLIENT_OUTLIER_IQRS`]` × IQR)` from the median end time are clock errors, and
/// completed records without an end time are counted as set aside (the rates are then a lower
/// bound).
fn timed_completions(c: &ClientEvidence) -> (Vec<f64>, Vec<ClientSetAside>, impl Fn(f64) -> bool) {
    let ok: Vec<&sglang_log::ClientRequest> = c.requests.iter().filter(|r| r.ok).collect();
    let mut ends: Vec<f64> = ok
        .iter()
        .filter_map(|r| r.end)
        .filter(|t| t.is_finite())
        .collect();
    ends.sort_by(f64::total_cmp);
    let q = |p: f64| {
        ends.get(((ends.len() as f64 - 1.0) * p).round() as usize)
            .copied()
    };
    let (median, iqr) = match (q(0.5), q(0.25), q(0.75)) {
        (Some(m), Some(a), Some(b)) => (m, b - a),
        _ => (0.0, 0.0),
    };
    let cutoff_s = th::CLIENT_OUTLIER_MIN_S.max(th::CLIENT_OUTLIER_IQRS * iqr);
    let plausible = move |t: f64| t.is_finite() && (t - median).abs() <= cutoff_s;
    let mut set_aside = Vec::new();
    let far: Vec<u64> = ok
        .iter()
        .filter(|r| r.end.is_some_and(|t| !plausible(t)))
        .map(|r| r.line)
        .collect();
    if !far.is_empty() {
        set_aside.push(ClientSetAside {
            reason: SetAsideReason::EndFarFromOthers { cutoff_s },
            records: far.len() as u64,
            first_line: far.first().copied(),
        });
    }
    let untimed: Vec<u64> = ok
        .iter()
        .filter(|r| r.end.is_none())
        .map(|r| r.line)
        .collect();
    if !untimed.is_empty() {
        set_aside.push(ClientSetAside {
            reason: SetAsideReason::NoEndTime,
            records: untimed.len() as u64,
            first_line: untimed.first().copied(),
        });
    }
    let times: Vec<f64> = ends.into_iter().filter(|&t| plausible(t)).collect();
    (times, set_aside, plausible)
}

/// Whether the client's lifetime average (or the rate it printed) misleads: the lifetime
/// average lies outside the windowed rate's interval or more than [`th::LIFETIME_AGREES`] from
/// it, or the printed rate is more than [`th::PRINTED_ROUNDING`] off the lifetime average.
pub fn lifetime_misleads(s: &ClientSummary) -> bool {
    let (Some(life), Some(win)) = (&s.lifetime_req_per_s, &s.windowed_req_per_s) else {
        return false;
    };
    let outside =
        life.value < win.low.unwrap_or(win.value) || life.value > win.high.unwrap_or(win.value);
    let far = (life.value - win.value).abs() > th::LIFETIME_AGREES * win.value;
    let rounded = s
        .printed_req_per_s
        .is_some_and(|p| (p - life.value).abs() > th::PRINTED_ROUNDING * life.value);
    outside || far || rounded
}

/// The client's rate now (req/s): its rate in the server's steady window (or its run's second
/// half), else the one the server's tokens imply at its mean completion, else, for a
/// benchmark's summary, its whole-run rate (the server's tokens imply none when the client
/// counts tokens the server did not generate, `rules::bench_tokens`).
pub fn now_rate(c: &ClientSummary) -> Option<&Rate> {
    c.windowed_req_per_s
        .as_ref()
        .or(c.implied_req_per_s.as_ref())
        .or_else(|| {
            (c.format == sglang_log::ClientFormat::BenchmarkSummary)
                .then_some(c.lifetime_req_per_s.as_ref())
                .flatten()
        })
}

/// The client's own summary of the run its records come from (the last run read from one of
/// the client files, not from a log), figure by figure against the records' figures in `s`:
/// completed, failed and cancelled requests, the request and output token rates over the
/// client's lifetime, mean TTFT and ITL. Empty without records or such a summary.
pub fn claims(
    s: &crate::report::ClientSummary,
    runs: &[crate::report::BenchmarkRun],
    ctx: &Context,
) -> Vec<crate::report::ClaimCheck> {
    use crate::report::{ClaimCheck, ClaimedFigure as F};
    if s.format != ClientFormat::TimedRecords {
        return Vec::new();
    }
    let Some(run) = runs
        .iter()
        .rev()
        .find(|r| ctx.clients.iter().any(|c| c.source == r.source.source))
    else {
        return Vec::new();
    };
    let b = &run.summary;
    let pairs = [
        (
            F::CompletedRequests,
            b.successful_requests.map(|n| n as f64),
            Some(s.completed as f64),
        ),
        (
            F::FailedRequests,
            b.failed_requests.map(|n| n as f64),
            Some(s.failed as f64),
        ),
        (
            F::CancelledRequests,
            b.cancelled_requests.map(|n| n as f64),
            Some(s.cancelled as f64),
        ),
        (
            F::RequestRate,
            b.request_throughput,
            s.lifetime_req_per_s.as_ref().map(|r| r.value),
        ),
        (F::OutputTokenRate, b.output_tok_per_s, s.lifetime_tok_per_s),
        (
            F::MeanTtft,
            b.ttft.mean_s,
            s.ttft_s.as_ref().map(|t| t.mean),
        ),
        (F::MeanItl, b.itl.mean_s, s.itl_s.as_ref().map(|t| t.mean)),
    ];
    pairs
        .into_iter()
        .filter_map(|(figure, claimed, from_records)| {
            let (claimed, from_records) = (claimed?, from_records?);
            let agrees = if from_records == 0.0 {
                claimed == 0.0
            } else {
                ((claimed - from_records) / from_records).abs() <= th::CLIENT_CLAIM_TOLERANCE
            };
            Some(ClaimCheck {
                figure,
                claimed,
                from_records,
                agrees,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` records ending one per 10 s from t = 1000 s, each submitted 100 s before.
    fn records(n: usize) -> Vec<String> {
        (0..n)
            .map(|i| {
                let end = 1_000.0 + 10.0 * i as f64;
                format!(
                    "{{\"id\":\"r{i}\",\"submit_unix_s\":{},\"end_unix_s\":{end}}}",
                    end - 100.0
                )
            })
            .collect()
    }

    fn summary(lines: &[String]) -> ClientSummary {
        let ctx = Context {
            clients: vec![sglang_log::parse_client(
                "responses.jsonl",
                &lines.join("\n"),
            )],
            ..Context::default()
        };
        client_summary(&ctx, None, None).expect("summary")
    }

    #[test]
    fn an_end_time_ten_years_ahead_is_set_aside_and_named() {
        let clean = summary(&records(40));
        let mut lines = records(40);
        lines[7] = lines[7].replace("\"end_unix_s\":1070", "\"end_unix_s\":315361070");
        let s = summary(&lines);
        assert_eq!(s.set_aside.len(), 1);
        assert_eq!(s.set_aside[0].records, 1);
        assert_eq!(s.set_aside[0].first_line, Some(8));
        assert!(
            matches!(s.set_aside[0].reason, SetAsideReason::EndFarFromOthers { cutoff_s } if cutoff_s == 86_400.0)
        );
        // The rate over the others is what it was, not 0.000 req/s over 87,600 h.
        let (a, b) = (
            clean.lifetime_req_per_s.expect("rate").value,
            s.lifetime_req_per_s.expect("rate").value,
        );
        assert!((a - b).abs() < 0.05 * a, "{a} vs {b}");
    }

    #[test]
    fn records_without_an_end_time_are_counted_and_said() {
        let mut lines = records(40);
        for l in lines.iter_mut().skip(1).step_by(2) {
            *l = l.replace("\"end_unix_s\"", "\"no_end\"");
        }
        let s = summary(&lines);
        assert_eq!(s.completed, 40);
        assert_eq!(
            s.set_aside,
            vec![ClientSetAside {
                reason: SetAsideReason::NoEndTime,
                records: 20,
                first_line: Some(2)
            }]
        );
    }

    #[test]
    fn clean_records_set_nothing_aside() {
        assert!(summary(&records(40)).set_aside.is_empty());
    }

    /// A user's own printout (the fresh-user trial's form): its last line's printed rates are
    /// the client's figures, req/s and tok/s, as it counts them.
    #[test]
    fn a_printout_gives_its_printed_rates() {
        let s = summary(&[
            "[2026-02-10 14:13:30] 120/11000 done, 0.1 req/s, 480 tok/s".to_string(),
            "[2026-02-10 14:14:30] 129/11000 done, 0.1 req/s, 500 tok/s".to_string(),
        ]);
        assert_eq!((s.completed, s.total), (129, Some(11000)));
        assert_eq!(s.printed_req_per_s, Some(0.1));
        assert_eq!(s.printed_tok_per_s, Some(500.0));
    }
}
