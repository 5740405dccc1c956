//! The client's findings that are no rule's own: a short sample's adequacy, and the run number
//! on each benchmark finding when there are several (the `bench_*`, `client_gap` and
//! `littles_law` rules word their own findings, in `crate::rules`).

use super::{confidence_pct, finding};
use crate::report::{Confidence, Figure, Finding, FindingKind, SampleAdequacy, Unit};

/// Prefix a benchmark finding's title with its run's number when there are several.
pub fn numbered(mut f: Finding, run: usize, runs: usize) -> Finding {
    if runs > 1 {
        f.title = format!("Benchmark run {run} of {runs}: {}", f.title);
    }
    f
}

/// A short sample's adequacy.
pub fn sample_adequacy(a: &SampleAdequacy) -> Finding {
    finding(
        FindingKind::SampleAdequacy,
        "A short sample cannot settle the rate",
        format!(
            "{}. Measure over the steady span (or at least the window above), not a one-minute sample.",
            a.text
        ),
        vec![Figure::new(
            format!("window needed for ±10% at {}", confidence_pct()),
            a.window_needed_s,
            Unit::Seconds,
        )],
        Vec::new(),
        Confidence::High,
    )
}
