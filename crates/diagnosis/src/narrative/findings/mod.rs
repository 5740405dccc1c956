//! Findings in words: one function per rule that does not word its own (the finding rules of
//! `crate::rules::FINDING_RULES` do, beside their checks), from its facts. One file per theme:
//! [`admission`] (load and admission: each verdict's bottleneck finding, held admission),
//! [`compute`] (slow decode and prefill), [`events`] (watchdog and KV-transfer failures),
//! [`client`] (the client and its benchmarks) and [`capacity`] (the capacity model); the
//! helpers they share are in `super::words`, a leaf the rules share too.

mod admission;
mod capacity;
mod client;
mod compute;

pub use admission::{bottleneck, held_admission};
pub use capacity::capacity;
pub use client::{
    bench_concurrency_limit, bench_failures, bench_queueing, bench_tokens, client_gap, littles_law,
    numbered, sample_adequacy,
};
pub use compute::{decode_compute, prefill_compute};

// The words of `narrative` the themes use, imported here so that their `super::` paths (as
// written when the findings were one file) still resolve.
use super::words::{finding, with_levers};
use super::{bottleneck_label, confidence_pct, count, fmt_duration, incidents, interval, num};
