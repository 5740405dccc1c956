//! What the headline of an event verdict names.

#[cfg(doc)]
use crate::report::Headline;
use crate::report::{Bottleneck, Incident};
use crate::rules;

/// What the headline of an event verdict names (see [`Headline::incident`]).
pub(super) fn incident_of(
    bottleneck: Bottleneck,
    oom: Option<&rules::oom::Facts>,
    crash: Option<&rules::scheduler_exception::Facts>,
    watchdog: Option<&rules::watchdog::Facts>,
    incomplete: Option<&rules::startup_incomplete::Facts>,
    transfer: Option<&rules::watchdog::Facts>,
    after_serving: bool,
) -> Option<Incident> {
    match bottleneck {
        Bottleneck::OutOfMemory => oom.map(|f| Incident {
            exception: f.exception.clone(),
            message: f.message.clone(),
            frame: f.frame.clone(),
            step: f.step,
            process: None,
            waits_on_children: false,
            free_gib: None,
            count: None,
            after_serving,
        }),
        Bottleneck::SchedulerCrashed => crash.map(|f| Incident {
            exception: f.exception.clone(),
            message: f.message.clone(),
            frame: f.frame.clone(),
            step: f.step,
            process: None,
            waits_on_children: false,
            free_gib: None,
            count: None,
            after_serving,
        }),
        Bottleneck::Stall => watchdog.and_then(|f| f.hang.as_ref()).map(|h| Incident {
            exception: None,
            message: None,
            frame: h.frames.first().cloned(),
            step: None,
            process: h.process.clone(),
            waits_on_children: h.waits_on_children,
            free_gib: None,
            count: None,
            after_serving,
        }),
        Bottleneck::StartupIncomplete => incomplete.map(|f| Incident {
            exception: None,
            message: None,
            frame: None,
            step: Some(f.step),
            process: None,
            waits_on_children: false,
            free_gib: f.capture_avail_gib,
            count: None,
            after_serving,
        }),
        Bottleneck::KvTransferFailed => transfer.map(|f| Incident {
            exception: None,
            message: Some(f.first_text.clone()),
            frame: None,
            step: None,
            process: None,
            waits_on_children: false,
            free_gib: None,
            count: Some(f.count),
            after_serving,
        }),
        _ => None,
    }
}
