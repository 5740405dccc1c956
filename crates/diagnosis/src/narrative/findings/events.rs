//! Findings of failure lines whose facts the verdict reads: watchdog and KV-transfer failures
//! (stalls, retractions, idle windows and ramp-only logs word their own findings, in
//! `crate::rules`).

use super::failure;
use crate::report::{Finding, FindingKind};
use crate::rules::watchdog;

/// The finding of [`crate::rules::watchdog`].
pub fn watchdog(f: &watchdog::Facts) -> Finding {
    let mut out = failure(
        f.count,
        &f.first_text,
        f.evidence.as_ref(),
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
        f.count,
        &f.first_text,
        f.evidence.as_ref(),
        FindingKind::KvTransferFailure,
        "KV transfers failed",
        "PD disaggregation could not move KV from prefill to decode servers; SGLang's decode side aborts a request whose transfer failed (every TP rank of the decode server logs the same request). Check the transfer backend and network; the first failure's cause is logged where it happened (the prefill server or another rank).",
    )
}
