//! Findings in words that are no single rule's own: the dispatcher of each verdict's finding
//! ([`bottleneck`]: the verdict rule's words, `crate::rules::VerdictWords`, with the figures
//! every verdict shares), the capacity model's finding ([`capacity`]) and the client's
//! ([`client`]: a short sample's adequacy, the run number on a benchmark's findings). Every
//! rule words its own finding in its file; the helpers they share are in `super::words`, a
//! leaf the rules share too.

mod bottleneck;
mod capacity;
mod client;

pub use bottleneck::bottleneck;
pub use capacity::capacity;
pub use client::{numbered, sample_adequacy};

// The words of `narrative` the themes use, imported here so that their `super::` paths (as
// written when the findings were one file) still resolve.
use super::confidence_pct;
use super::words::{finding, with_levers};
