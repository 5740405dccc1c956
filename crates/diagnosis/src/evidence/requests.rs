//! The scheduler's per-request time stats (`ReqTimeStats` lines, [`sglang_log::ReqTimes`]):
//! the server's own account of how long each finished request waited and ran, kept in a
//! bounded sample with an exact count.

use super::Loc;
use super::timeline::{DEFAULT_CAPACITY, Timeline};
use serde::Serialize;
use sglang_log::{ReqMode, ReqTimes};

/// One finished request's times, owned (durations in seconds; see [`ReqTimes`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ReqSample {
    /// The line's time (log clock, seconds), when stamped.
    pub t: Option<f64>,
    /// Where the line is.
    pub loc: Loc,
    /// Which server printed it.
    pub mode: ReqMode,
    /// Prompt tokens. Unit: tokens.
    pub input_len: Option<u64>,
    /// Prompt tokens served from the prefix cache. Unit: tokens.
    pub cached_input_len: Option<u64>,
    /// Generated tokens. Unit: tokens.
    pub output_len: Option<u64>,
    /// Time in the waiting queue before the first forward pass. Unit: seconds.
    pub queue_s: Option<f64>,
    /// From the first forward pass to completion. Unit: seconds.
    pub forward_s: Option<f64>,
    /// PD: the bootstrap handshake. Unit: seconds.
    pub bootstrap_s: Option<f64>,
    /// PD: the wait for KV memory after the handshake. Unit: seconds.
    pub alloc_wait_s: Option<f64>,
    /// PD decode: the KV transfer. Unit: seconds.
    pub transfer_s: Option<f64>,
    /// PD prefill: the KV transfer's speed. Unit: GB/s.
    pub transfer_gb_per_s: Option<f64>,
}

/// Every `ReqTimeStats` line of a log: their exact count and a bounded, evenly spread sample.
#[derive(Clone, Debug, Serialize)]
pub struct RequestTimes {
    /// Lines read (requests, one line each; all TP ranks that print them).
    pub lines: u64,
    /// The kept samples, in line order.
    pub samples: Timeline<ReqSample>,
    /// The first and the last line.
    pub first: Option<Loc>,
    /// See [`Self::first`].
    pub last: Option<Loc>,
    /// PD prefill: the KV transfers' retries over every line (`#retries=N`), when any line
    /// prints them. Unit: retries.
    pub transfer_retries: Option<u64>,
}

impl Default for RequestTimes {
    fn default() -> Self {
        Self {
            lines: 0,
            samples: Timeline::with_capacity(DEFAULT_CAPACITY),
            first: None,
            last: None,
            transfer_retries: None,
        }
    }
}

impl RequestTimes {
    /// Takes one line's times.
    pub fn note(&mut self, loc: Loc, t: Option<f64>, r: &ReqTimes<'_>) {
        self.lines += 1;
        self.first.get_or_insert(loc);
        self.last = Some(loc);
        if let Some(n) = r.retries {
            self.transfer_retries = Some(self.transfer_retries.unwrap_or(0).saturating_add(n));
        }
        self.samples.push(ReqSample {
            t,
            loc,
            mode: r.mode,
            input_len: r.input_len,
            cached_input_len: r.cached_input_len,
            output_len: r.output_len,
            queue_s: r.queue_s,
            forward_s: r.forward_s,
            bootstrap_s: r.bootstrap_s,
            alloc_wait_s: r.alloc_wait_s,
            transfer_s: r.transfer_s,
            transfer_gb_per_s: r.transfer_gb_per_s,
        });
    }
}
