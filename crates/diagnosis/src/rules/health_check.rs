//! # `health_check`: the server answered its health check as unhealthy
//!
//! **What it detects.** SGLang's `Health check failed. Server couldn't get a response from
//! detokenizer for last N seconds.` lines: `/health` (or `/health_generate`) sent its one-token
//! probe request and no token came back within `SGLANG_HEALTH_CHECK_TIMEOUT` (20 s by
//! default); the probe is answered 503 and the server marks itself unhealthy. Also the access
//! lines of `/health*` probes answered 503 after the server said it was ready (before that,
//! during start-up and warm-up, 503 is the answer by design).
//!
//! **Why it matters.** An orchestrator's liveness probe (Kubernetes, a router) restarts or
//! stops routing to a server that answers 503, dropping every request it holds. The probe is a
//! request like any other: it waits in the same queue, so a server with a long queue fails its
//! health check while it works at full speed; a server with an empty queue that fails it is
//! stuck (a hung scheduler or detokenizer).
//!
//! **Evidence it needs.** The failure lines or the 503 access lines after the ready line; the
//! batch lines' queue (whether requests waited).
//!
//! **What to change.** With a queue: the probe's timeout (`SGLANG_HEALTH_CHECK_TIMEOUT`), a
//! liveness probe on `/health` without generation or a longer probe period, and fewer requests
//! in flight (the client's concurrency); without one: what hung (the watchdog's py-spy dump,
//! the lines before the first failure).
//!
//! **Source.** SGLang `entrypoints/http_server.py` (`health_generate`, `HEALTH_CHECK_TIMEOUT`).

use crate::narrative::words::finding;
use crate::report::{Confidence, Finding, FindingKind, SourceRange};
use crate::rules::{Input, Rule};

/// What the rule saw.
#[derive(Clone, Debug, PartialEq)]
pub struct Facts {
    /// Failure lines.
    pub count: u64,
    /// `/health*` probes answered 503 after the ready line.
    pub unavailable: u64,
    /// The first failure line, else the first 503.
    pub evidence: Option<SourceRange>,
    /// The probe's timeout the line prints. Unit: seconds.
    pub timeout_s: Option<u64>,
    /// The longest waiting queue any batch line of the run shows (requests); `None` without
    /// batch lines.
    pub peak_queue: Option<u64>,
}

/// The rule.
pub fn check(input: &Input<'_>) -> Option<Facts> {
    let a = &input.ev.alarms;
    let (h, u) = (&a.health_check_failures, &a.health_unavailable_serving);
    (h.count + u.count > 0).then(|| Facts {
        count: h.count,
        unavailable: u.count,
        evidence: h.first.or(u.first).map(|l| input.line(l)),
        timeout_s: h
            .first_text
            .as_deref()
            .and_then(sglang_log::alarms::parse_health_check_failed)
            .flatten(),
        peak_queue: input
            .ev
            .schedulers
            .values()
            .filter_map(|s| s.agg.max_queue)
            .max(),
    })
}

/// The rule as [`super::FINDING_RULES`] runs it: [`check`], then the finding in its words.
#[derive(Clone, Copy, Debug)]
pub struct HealthCheck;

impl Rule for HealthCheck {
    const NAME: &'static str = "health_check";
    type Facts = Facts;

    fn check(input: &Input<'_>) -> impl IntoIterator<Item = Facts> {
        check(input)
    }

    fn finding(f: &Facts, _input: &Input<'_>) -> Finding {
        let within = f
            .timeout_s
            .map(|s| format!(" within {s} s"))
            .unwrap_or_default();
        let reading = match f.peak_queue {
            Some(q) if q > 0 => format!(
                " Up to {q} requests waited on one scheduler: the probe is a request too and waits in the same queue, so a busy server fails it while it works; an orchestrator's liveness probe would restart it and drop what it holds. Give the probe a longer timeout (SGLANG_HEALTH_CHECK_TIMEOUT) or probe without generation, and keep fewer requests in flight."
            ),
            Some(_) => " No request waited on any batch line: the probe did not queue behind others, so the server (a scheduler or the detokenizer) stopped answering: look at the lines before the first failure.".to_string(),
            None => " The log has no batch lines to say whether requests were queued (a busy server fails it too) or the server was stuck.".to_string(),
        };
        let what = match (f.count, f.unavailable) {
            (0, u) => format!(
                "{u} health probe{} answered 503 (unhealthy) after the server said it was ready: the probe's one-token request got no answer in time.",
                if u == 1 { " was" } else { "s were" }
            ),
            (n, u) => format!(
                "{n} health check{} failed: the probe's one-token request got no answer{within}, and /health answered 503 (unhealthy){}.",
                if n == 1 { "" } else { "s" },
                if u > 0 {
                    format!(
                        "; {u} probe{} answered 503 after the ready line",
                        if u == 1 { " was" } else { "s were" }
                    )
                } else {
                    String::new()
                }
            ),
        };
        finding(
            FindingKind::HealthCheckFailed,
            "The server failed its health check",
            format!("{what}{reading}"),
            Vec::new(),
            f.evidence.iter().cloned().collect(),
            Confidence::High,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{excerpt, with_input};

    /// `http_server.py` `health_generate`'s line, as operators report it (20 s default).
    const FAILED: &str = "[2025-04-15 17:30:00] Health check failed. Server couldn't get a response from detokenizer for last 20 seconds. tic start time: 17:29:40. last_heartbeat time: 17:29:38\n";

    /// Behind real-3/019's decode lines, 990 requests queued on a rank: a busy server fails
    /// the probe.
    #[test]
    fn a_failure_with_a_long_queue_is_the_queue() {
        let mut log = excerpt("real/019-i5429-2x8h100-dsr1-dp-attn-queue990.log", 1..=5);
        log.push_str(FAILED);
        with_input(&log, |i| {
            let f = check(i).expect("a failure");
            assert_eq!((f.count, f.timeout_s), (1, Some(20)));
            assert_eq!(f.evidence.as_ref().map(|e| e.first_line), Some(6));
            assert_eq!(f.peak_queue, Some(990));
            let w = HealthCheck::finding(&f, i);
            assert_eq!(w.kind, FindingKind::HealthCheckFailed);
            assert!(
                w.detail.contains("Up to 990 requests waited"),
                "{}",
                w.detail
            );
        });
    }

    /// Decode lines with an empty queue (real-long rtx4090, single stream) then a failure:
    /// the server itself stopped answering.
    #[test]
    fn a_failure_with_no_queue_is_a_stuck_server() {
        let mut log = excerpt("real-long/rtx4090-qwen3-4b-kv-retraction.log", 60..=64);
        log.push_str(FAILED);
        with_input(&log, |i| {
            let f = check(i).expect("a failure");
            assert_eq!(f.peak_queue, Some(0));
            assert!(
                HealthCheck::finding(&f, i)
                    .detail
                    .contains("stopped answering")
            );
        });
    }

    /// 503s before the ready line (real-long dp16, lines 1828-1831: the probes during the
    /// warm-up) are no failed check, and neither is a log without any such line; the same 503
    /// after the ready line is one.
    #[test]
    fn no_failure_line_no_finding() {
        with_input(
            &excerpt("real-long/ascend-dsr1-dp16-mtp-mixed.log", 1812..=1835),
            |i| assert_eq!(check(i), None),
        );
        let mut after = excerpt("real-long/ascend-dsr1-dp16-mtp-mixed.log", 1812..=1835);
        after.push_str("[2026-01-04 07:20:34] INFO:     127.0.0.1:44946 - \"GET /health_generate HTTP/1.1\" 503 Service Unavailable\n");
        with_input(&after, |i| {
            let f = check(i).expect("a 503 while serving");
            assert_eq!((f.count, f.unavailable), (0, 1));
            assert_eq!(f.evidence.as_ref().map(|e| e.first_line), Some(25));
            assert!(
                HealthCheck::finding(&f, i)
                    .detail
                    .starts_with("1 health probe was answered 503")
            );
        });
        with_input(
            &excerpt("real/019-i5429-2x8h100-dsr1-dp-attn-queue990.log", 1..=5),
            |i| assert_eq!(check(i), None),
        );
    }
}
