//! The headline of a log whose verdict an event names (out of memory, a scheduler's exception,
//! a watchdog, failed KV transfers, an unfinished startup, rejected requests, startup lines
//! only); the events' findings are their rules' own, in `crate::rules`.

use super::words::{exception_words, frame_words, step_words};
use crate::report::{Incident, StartupCapacity, StartupStep};

/// The headline of a verdict that an event names (a log without batch lines), or `None` for
/// the other verdicts.
pub fn incident_headline(
    verdict: crate::report::Bottleneck,
    incident: Option<&Incident>,
    startup: Option<&StartupCapacity>,
) -> Option<(&'static str, String)> {
    use crate::report::Bottleneck as B;
    let at = incident
        .and_then(|i| i.frame.as_ref())
        .map(|f| format!(" in {}", frame_words(f)))
        .unwrap_or_default();
    let error = incident
        .map(|i| exception_words(i.exception.as_deref(), i.message.as_deref()))
        .unwrap_or_default();
    Some(match verdict {
        B::OutOfMemory => {
            let before_pool =
                incident.is_some_and(|i| i.step.is_none_or(|s| s < StartupStep::KvPoolAllocated));
            if before_pool {
                (
                    "Out of memory at weight load",
                    format!(
                        "not a KV pool problem; lowering mem_fraction_static cannot fix it: the weights do not fit ({}{at}).",
                        incident
                            .and_then(|i| i.exception.as_deref())
                            .unwrap_or("out of memory")
                    ),
                )
            } else {
                (
                    "Out of memory",
                    format!(
                        "the server ran out of device memory after the KV pool was allocated{at}: {error}."
                    ),
                )
            }
        }
        B::SchedulerCrashed if incident.is_some_and(|i| i.after_serving) => (
            "Scheduler crashed",
            format!(
                "a scheduler died with {error}{at} while serving; the server stopped (SGLang kills the whole server when a scheduler dies), so the run ended there whatever its batch lines said before."
            ),
        ),
        B::SchedulerCrashed => (
            "Scheduler crashed",
            format!("a scheduler died with {error}{at}; the server stopped, no batch was served."),
        ),
        B::KvTransferFailed => (
            "KV transfers failed",
            format!(
                "{} failure line{} (all ranks){}: PD disaggregation could not move KV from the prefill to the decode server, and SGLang aborts each request whose transfer failed (on the side that logs it). The cause is logged where a transfer failed first (the transfer engine's lines before it, on the prefill server or another rank): check the transfer backend (Mooncake, NIXL) and the network between the nodes.",
                incident.and_then(|i| i.count).unwrap_or(1),
                if incident.and_then(|i| i.count).unwrap_or(1) == 1 {
                    ""
                } else {
                    "s"
                },
                incident
                    .and_then(|i| i.message.as_deref())
                    .map(|m| format!(", the first: {m}"))
                    .unwrap_or_default()
            ),
        ),
        B::StartupIncomplete
            if incident.and_then(|i| i.step) == Some(StartupStep::CapturingGraphs) =>
        {
            let pool = startup
                .and_then(|s| s.pool_tokens)
                .map(|p| format!(" (a KV pool of {p} tokens per DP rank)"))
                .unwrap_or_default();
            let free = incident
                .and_then(|i| i.free_gib)
                .map(|g| format!(", with {g:.2} GiB free on its last line"))
                .unwrap_or_default();
            let roomy = incident
                .and_then(|i| i.free_gib)
                .is_some_and(|g| g >= crate::thresholds::CAPTURE_ROOM_GIB);
            let why = if roomy {
                format!(
                    "With that much free (captures take a few GiB; {} GiB or more leaves them room), out of memory is unlikely: the log was cut mid-capture, the process was stopped, or a capture hangs (a first-use kernel compile can take minutes). A later part of the log, or the process's state, tells which.",
                    crate::thresholds::CAPTURE_ROOM_GIB
                )
            } else {
                "The graphs take their memory from what the pool left, so a capture that stops is most often out of memory (lower mem_fraction_static or --cuda-graph-max-bs), else a hung kernel or a killed process.".to_string()
            };
            (
                "Startup never finished",
                format!(
                    "the log stops during CUDA graph capture, after the KV pool was allocated{pool}{free}: no capture end, no ready banner, no batch line, no traceback. {why}"
                ),
            )
        }
        B::StartupIncomplete => (
            "Startup never finished",
            format!(
                "the log stops after {} with no ready banner, no batch line and no traceback.",
                incident
                    .and_then(|i| i.step)
                    .map_or("the first startup lines", step_words)
            ),
        ),
        B::StartupOnly => {
            let s = startup.copied().unwrap_or(StartupCapacity {
                pool_tokens: None,
                max_running_requests: None,
                context_len: None,
                graph_max_bs: None,
            });
            let mut parts = Vec::new();
            if let Some(p) = s.pool_tokens {
                let full = s
                    .context_len
                    .filter(|c| *c > 0)
                    .map(|c| format!(" ({:.1} full {c}-token requests)", p as f64 / c as f64))
                    .unwrap_or_default();
                parts.push(format!("the KV pool holds {p} tokens per DP rank{full}"));
            }
            if let (Some(r), Some(p)) = (s.max_running_requests, s.pool_tokens) {
                parts.push(format!(
                    "the scheduler admits up to {r} running requests ({:.0} tokens each if all run)",
                    p as f64 / r.max(1) as f64
                ));
            }
            if let (Some(g), Some(r)) = (s.graph_max_bs, s.max_running_requests)
                && (g as f64) <= crate::thresholds::GRAPH_COVERAGE_SHARE * r as f64
            {
                parts.push(format!(
                    "decode CUDA graphs cover batches up to {g} only: a larger batch decodes eagerly"
                ));
            }
            (
                "Startup lines only",
                format!(
                    "no batch lines, so the load cannot be judged; from the startup: {}.",
                    if parts.is_empty() {
                        "no capacity figure".to_string()
                    } else {
                        parts.join("; ")
                    }
                ),
            )
        }
        B::Stall => match incident {
            Some(i)
                if i.waits_on_children
                    && i.process
                        .as_deref()
                        .is_some_and(|p| p.contains("data_parallel_controller")) =>
            {
                (
                    "Stall",
                    "the DP controller's own watchdog fired (no scheduler printed a watchdog timeout); its dump shows only the controller, idle while it waits for its schedulers, so where a scheduler waits is not in the log.".to_string(),
                )
            }
            Some(i) if i.waits_on_children => (
                "Stall",
                format!(
                    "the scheduler watchdog fired; the py-spy dump in the log is {}'s, idle while it waits for its child processes (multiprocessing join): the hung scheduler's own stack is not in the log.",
                    i.process.as_deref().unwrap_or("a parent process")
                ),
            ),
            Some(i) if i.frame.is_some() => (
                "Stall",
                format!(
                    "the scheduler watchdog fired; the py-spy dump shows {}waiting{at}.",
                    i.process
                        .as_deref()
                        .map(|p| format!("{p} "))
                        .unwrap_or_default()
                ),
            ),
            _ => return None,
        },
        _ => return None,
    })
}
