//! Findings in words: one function per rule that does not word its own (the finding rules of
//! `crate::rules::FINDING_RULES` do, beside their checks), from its facts. One file per theme:
//! [`admission`] (load and admission: each verdict's bottleneck finding, held admission),
//! [`compute`] (slow decode and prefill), [`events`] (watchdog and KV-transfer failures),
//! [`client`] (the client and its benchmarks) and [`capacity`] (the capacity model); the
//! helpers they share are in `super::words`, a leaf the rules share too.

mod bottleneck;
mod capacity;
mod client;

pub use bottleneck::bottleneck;
pub use capacity::capacity;
pub use client::{
    bench_concurrency_limit, bench_failures, bench_queueing, bench_tokens, client_gap, littles_law,
    numbered, sample_adequacy,
};

// The words of `narrative` the themes use, imported here so that their `super::` paths (as
// written when the findings were one file) still resolve.
use super::words::{finding, with_levers};
use super::{bottleneck_label, confidence_pct, count, incidents, interval, num};
