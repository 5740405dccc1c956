//! # `client_gap`: why the client's rate differs from the server's
//!
//! **What it detects.** With a lifetime average and a steady-window rate from the client:
//! either that they agree (a client that prints its rate, whose lifetime average lies inside
//! the window's interval and within [`th::LIFETIME_AGREES`] of it), or the gap and its parts:
//! the lifetime average's ramp (time to the first completion), the rounding of a printed rate
//! ([`th::PRINTED_ROUNDING`]), the rate the server's tokens imply, tokens in flight that the
//! client has not counted, and time spent waiting for a client concurrency slot.
//!
//! **Why it matters.** A client's req/s is usually completions since its start over the time
//! since then: 150 long requests fired at once make it read low for hours. Judging the server by
//! it sends the user to the wrong lever.
//!
//! **Evidence it needs.** A progress log or timed records (lifetime and windowed rates); the
//! server's steady rate and completion lengths for the implied rate.
//!
//! **What to change.** Judge progress by the windowed rate, not the lifetime average.
//!
//! **Source.** Poisson rates and Garwood intervals (`throughput-stats`); a retracted request
//! keeps its generated tokens (SGLang `schedule_batch.py` `reset_for_retract`), so retractions
//! re-prefill, they do not make the server generate tokens twice.

use crate::client_view::lifetime_misleads;
use crate::narrative::words::{self, interval, num};
use crate::report::{ClientSummary, Confidence, Figure, Finding, FindingKind, Rate, Unit};
use crate::thresholds as th;

/// The gap's parts.
#[derive(Clone, Debug, PartialEq)]
pub struct Gap {
    /// The client prints a rate and its lifetime average misleads.
    pub printed_misleads: bool,
    /// `(printed, lifetime)` when the printed figure is off the lifetime average by rounding (req/s).
    pub rounding: Option<(f64, f64)>,
    /// The rate the server's tokens imply, and whether it lies above the window's interval.
    pub implied: Option<(Rate, bool)>,
    /// `(running requests, generated tokens in flight)` not yet counted by the client.
    pub uncounted: Option<(f64, f64)>,
    /// Mean wait for a client concurrency slot (seconds), when recorded.
    pub mean_slot_wait_s: Option<f64>,
    /// The gap from the printed figure to the server's implied rate, in parts (req/s).
    pub parts: Vec<Part>,
}

/// One part of the gap between the client's printed figure and the rate the server's tokens
/// imply, with its size (req/s).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Part {
    /// The printed figure rounds the lifetime average.
    Rounding(f64),
    /// The lifetime average counts the ramp (time before completions came in).
    LifetimeRamp(f64),
    /// Tokens of requests still running, not yet counted by the client, over the window.
    TokensInFlight(f64),
    /// Requests the client recorded as failed: work the server did that the client dropped.
    ClientFailures(f64),
    /// What none of the above explains: another client on the same server, aborted requests,
    /// or ranks missing from the log.
    Unexplained(f64),
}

/// What the rule concludes.
#[derive(Clone, Debug, PartialEq)]
pub enum Facts {
    /// The lifetime average agrees with the steady rate.
    Agrees,
    /// They differ, for these reasons.
    Gap(Gap),
}

/// The rule. `running_median`: the server's median running requests; `slot_waits`: the
/// client's recorded waits for a concurrency slot (seconds).
pub fn check(s: &ClientSummary, running_median: Option<f64>, slot_waits: &[f64]) -> Option<Facts> {
    let (Some(life), Some(win)) = (&s.lifetime_req_per_s, &s.windowed_req_per_s) else {
        return None;
    };
    let printed_misleads = s.printed_req_per_s.is_some() && lifetime_misleads(s);
    if s.printed_req_per_s.is_some() && !printed_misleads {
        return Some(Facts::Agrees);
    }
    let rounding = s
        .printed_req_per_s
        .filter(|p| (p - life.value).abs() > th::PRINTED_ROUNDING * life.value)
        .map(|p| (p, life.value));
    let implied = s.implied_req_per_s.clone().map(|imp| {
        let above = imp
            .low
            .is_some_and(|l| l > win.high.unwrap_or(f64::INFINITY));
        (imp, above)
    });
    // A client counts a request's tokens only when it completes: at any instant the running
    // requests hold about half a completion each that it has not counted yet.
    let uncounted = match (running_median, s.mean_completion_tokens) {
        (Some(run), Some(m)) => Some((run, run * m / 2.0)),
        _ => None,
    };
    let mut parts = Vec::new();
    if let Some(p) = s.printed_req_per_s {
        parts.push(Part::Rounding(life.value - p));
    }
    parts.push(Part::LifetimeRamp(win.value - life.value));
    if let Some((imp, _)) = &implied {
        let window = win.window_s.max(1.0);
        let mean = s.mean_completion_tokens.filter(|&m| m > 0.0);
        let in_flight = match (uncounted, mean) {
            (Some((_, tokens)), Some(m)) => tokens / m / window,
            _ => 0.0,
        };
        let failures = win.value * s.failed as f64 / s.completed.max(1) as f64;
        let rest = imp.value - win.value - in_flight - failures;
        parts.push(Part::TokensInFlight(in_flight));
        if failures > 0.0 {
            parts.push(Part::ClientFailures(failures));
        }
        parts.push(Part::Unexplained(rest));
    }
    Some(Facts::Gap(Gap {
        printed_misleads,
        rounding,
        implied,
        uncounted,
        mean_slot_wait_s: throughput_stats::mean_sd(slot_waits).map(|x| x.0),
        parts,
    }))
}

/// The finding of the client summary `s` against the server (`f`), in this rule's words; `None`
/// when the summary lacks its lifetime or steady rate.
pub(crate) fn finding(s: &ClientSummary, f: &Facts) -> Option<Finding> {
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
        Facts::Agrees => {
            return Some(words::finding(
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
        Facts::Gap(g) => g,
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
        let off = (p / l - 1.0).abs() * 100.0;
        detail.push_str(&match printed_decimals(p) {
            // the printed figure is the lifetime average rounded: the rounding is the gap
            Some(d) if round_to(l, d) == round_to(p, d) => format!(
                " It prints {p} req/s: {} turns {l:.3} into {p}, a {off:.0}% error on its own.",
                if d == 1 {
                    "one decimal place".to_string()
                } else {
                    format!("{d} decimal places")
                }
            ),
            // it is not: the client counts from its own start, before the log's first line
            _ => format!(
                " It prints {p} req/s, {off:.0}% off the {l:.3} the log's lines give from the first of them: more than rounding, so the client also counts from its own start, before its first progress line."
            ),
        });
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
            num(s.mean_completion_tokens, 0)
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
    // the printed figure is the lifetime average rounded (else the client also counts from
    // its own start, before its first line)
    let rounds = g.rounding.is_some_and(|(p, l)| {
        printed_decimals(p).is_some_and(|d| round_to(l, d) == round_to(p, d))
    });
    let part_words = |p: &Part| match *p {
        Part::Rounding(x) if rounds => format!("rounding of the printed figure {x:+.3}"),
        Part::Rounding(x) => {
            format!("the printed figure's rounding and the client's earlier start {x:+.3}")
        }
        Part::LifetimeRamp(x) => format!("the lifetime average's ramp {x:+.3}"),
        Part::TokensInFlight(x) => {
            format!("tokens of running requests not yet counted {x:+.3}")
        }
        Part::ClientFailures(x) => format!(
            "requests the client recorded as failed (work the server did and the client dropped) {x:+.3}"
        ),
        Part::Unexplained(x) => format!(
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
            g.parts
                .iter()
                .map(part_words)
                .collect::<Vec<_>>()
                .join("; ")
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
    Some(words::finding(
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

/// The decimal places a printed rate shows (the fewest, up to 4, that hold it exactly).
fn printed_decimals(p: f64) -> Option<i32> {
    (0..=4).find(|&d| {
        let s = p * 10f64.powi(d);
        (s - s.round()).abs() < 1e-6
    })
}

/// `x` rounded to `d` decimal places, as an integer count of the last place.
fn round_to(x: f64, d: i32) -> i64 {
    (x * 10f64.powi(d)).round() as i64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client_view::client_summary;
    use crate::context::Context;
    use crate::rules::testing::whole;

    const B2: &str = "scenarios/kimi-k25-b2-early/client.log";

    fn summary(text: &str) -> ClientSummary {
        let ctx = Context {
            clients: vec![sglang_log::parse_client("client.log", text)],
            ..Context::default()
        };
        client_summary(&ctx, None, None).expect("summary")
    }

    #[test]
    fn a_printed_lifetime_average_that_rounds_down() {
        let s = summary(&whole(B2));
        let Some(Facts::Gap(g)) = check(&s, Some(41.0), &[]) else {
            panic!("gap expected")
        };
        assert!(g.printed_misleads);
        assert_eq!(g.rounding.map(|r| r.0), Some(0.1));
        // the progress log prints avg_comp=4059tok: 41 running requests hold ~41 × 4059 / 2
        // generated tokens the client has not counted yet
        assert_eq!(g.uncounted, Some((41.0, 83_209.5)));
        // From the printed 0.1 req/s up (129 done in 840 s: 0.154 lifetime): rounding 0.054, then the ramp.
        let Part::Rounding(r) = g.parts[0] else {
            panic!("{:?}", g.parts)
        };
        assert!((r - 0.054).abs() < 0.001, "{r}");
        assert!(matches!(g.parts[1], Part::LifetimeRamp(_)), "{:?}", g.parts);
        // 0.154 rounds to 0.2, not to the printed 0.1: the client counts from its own start
        // (14:00:00), before its first progress line; rounding alone is not the gap (user)
        let w = finding(&s, &Facts::Gap(g)).expect("finding");
        assert!(!w.detail.contains("one decimal place"), "{}", w.detail);
        assert!(w.detail.contains("more than rounding"), "{}", w.detail);
        assert!(
            w.detail
                .contains("the printed figure's rounding and the client's earlier start"),
            "{}",
            w.detail
        );
        assert_eq!(printed_decimals(0.1), Some(1));
        assert_eq!((round_to(0.154, 1), round_to(0.149, 1)), (2, 1));
    }

    #[test]
    fn agreeing_rates_say_so() {
        // The same progress, printed with its real lifetime rate: nothing misleads.
        let s = summary(&whole(B2).replace(" 0.1 req/s", " 0.14 req/s"));
        assert_eq!(check(&s, None, &[]), Some(Facts::Agrees));
    }

    #[test]
    fn no_times_no_gap() {
        let s = summary(&whole("scenarios/kimi-k25-b2/responses.jsonl"));
        assert_eq!(check(&s, None, &[]), None);
    }
}
