//! # `littles_law`: requests in the server against the client's rate × latency
//!
//! **What it detects.** Over the client's steady window, the requests in the server (running +
//! queued, time-weighted mean from the log) against the client's completion rate × its mean
//! end-to-end latency (submit → end), when the difference is significant at
//! [`crate::thresholds::CONFIDENCE`].
//!
//! **Why it matters.** A client-side surplus means requests spend time outside the server's
//! batch and queue (the client's own queue, the HTTP/tokenizer layer, retries); a server-side
//! surplus means another client (or aborted requests) loads the same server.
//!
//! **Evidence it needs.** Timed client records with submit and end times, a windowed rate, and
//! the server's running and queued gauges.
//!
//! **What to change.** Look for the time outside the server, or the other load.
//!
//! **Source.** Little's law `L = λW` (`throughput_stats::littles_law`, delta-method interval).

use sglang_log::ClientEvidence;

use crate::client_view::as_estimate;
use crate::narrative::words::{self, confidence_pct};
use crate::report::{ClientSummary, Confidence, Figure, Finding, FindingKind, Unit};

/// What the rule measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Facts {
    /// Mean requests in the server, running + queued (requests).
    pub observed: f64,
    /// The check: expected in flight with its interval, relative mismatch.
    pub check: throughput_stats::LittleCheck,
    /// The client's mean latency (seconds).
    pub mean_latency_s: f64,
}

/// The rule.
pub fn check(s: &ClientSummary, c: &ClientEvidence, in_system_mean: Option<f64>) -> Option<Facts> {
    let (win, observed) = (s.windowed_req_per_s.as_ref()?, in_system_mean?);
    let lat: Vec<f64> = c
        .requests
        .iter()
        .filter(|r| r.ok)
        .filter_map(|r| Some(r.end? - r.submit?))
        .filter(|x| x.is_finite() && *x >= 0.0)
        .collect();
    let (mean, sd) = throughput_stats::mean_sd(&lat)?;
    let l = throughput_stats::littles_law(observed, &as_estimate(win), mean, sd, lat.len() as u64)
        .ok()?;
    l.significant.then_some(Facts {
        observed,
        check: l,
        mean_latency_s: mean,
    })
}

/// The finding of Little's law not adding up (`f`), in this rule's words; `window_rate` is the
/// client's completion rate over the steady window (req/s).
pub(crate) fn finding(f: &Facts, window_rate: f64) -> Finding {
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
    words::finding(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client_view::client_summary;
    use crate::context::Context;

    /// Ten requests, each 100 s from submit to end, completing one per 10 s: λW = 0.1 × 100 = 10 in flight.
    fn records() -> String {
        (0..40)
            .map(|i| {
                let end = 1000.0 + 10.0 * i as f64;
                format!(
                    "{{\"id\":\"r{i}\",\"submit_unix_s\":{},\"end_unix_s\":{end},\"ok\":true}}\n",
                    end - 100.0
                )
            })
            .collect()
    }

    fn run(in_system: f64) -> Option<Facts> {
        let ctx = Context {
            clients: vec![sglang_log::parse_client("responses.jsonl", &records())],
            ..Context::default()
        };
        let s = client_summary(&ctx, None, None).expect("summary");
        check(&s, &ctx.clients[0], Some(in_system))
    }

    #[test]
    fn the_server_holds_fewer_than_the_client_waits_for() {
        let f = run(2.0).expect("mismatch");
        assert!(f.check.relative_mismatch < 0.0);
        assert_eq!(f.mean_latency_s, 100.0);
    }

    #[test]
    fn matching_counts_are_no_finding() {
        assert_eq!(run(10.0), None);
    }

    #[test]
    fn no_server_gauge_no_check() {
        let ctx = Context {
            clients: vec![sglang_log::parse_client("responses.jsonl", &records())],
            ..Context::default()
        };
        let s = client_summary(&ctx, None, None).expect("summary");
        assert_eq!(check(&s, &ctx.clients[0], None), None);
    }
}
