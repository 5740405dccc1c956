//! Findings of events in the log's time: stalls, retractions, watchdog and KV-transfer
//! failures, low readings after idle and a log that shows only the ramp-up.

use super::{failure, finding, with_levers};
use crate::report::{Confidence, Figure, Finding, FindingKind, Lever, RetractionSummary, Unit};
use crate::rules::{idle_window, ramp_only, retraction, stall, watchdog};

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

/// The finding of [`crate::rules::ramp_only`].
pub fn ramp_only(f: &ramp_only::Facts) -> Finding {
    let r = &f.ramp;
    finding(
        FindingKind::RampOnly,
        "The log shows only the ramp-up",
        if r.queued_start == 0 && r.queued_end == 0 {
            format!(
                "On {}, running requests climb from {} to {} while nothing waits: requests are admitted as they arrive, the client is still ramping up, and the steady load is not in this excerpt. Rates measured here understate the steady rate; capture a longer log.",
                f.scheduler, r.running_start, r.running_end
            )
        } else {
            format!(
                "On {}, running requests climb from {} to {} while the queue drains from {} to {}: this excerpt is the start of a burst, not a steady state. Rates measured here understate the steady rate; capture a longer log.",
                f.scheduler, r.running_start, r.running_end, r.queued_start, r.queued_end
            )
        },
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
