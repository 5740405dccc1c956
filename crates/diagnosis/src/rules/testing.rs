//! Test helpers for the rules: real log lines in, the rule's input out.

use std::ops::RangeInclusive;

use crate::context::Context;
use crate::evidence::view;
use crate::evidence::{Evidence, EvidenceBuilder};
use crate::rules::Input;

/// Lines `range` (1-based, inclusive) of a file under the repository's `tests/data/`.
pub fn excerpt(rel: &str, range: RangeInclusive<usize>) -> String {
    let path = format!("{}/../../tests/data/{rel}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let (from, to) = (*range.start(), *range.end());
    text.lines()
        .skip(from.saturating_sub(1))
        .take(to + 1 - from)
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Every line of a file under `tests/data/`.
pub fn whole(rel: &str) -> String {
    excerpt(rel, 1..=usize::MAX - 1)
}

/// The evidence of `text` read as one log named `test.log`.
pub fn evidence(text: &str) -> Evidence {
    let mut b = EvidenceBuilder::new();
    let id = b.add_source("test.log");
    let mut reader = sglang_log::LogReader::from_reader("test.log", text.as_bytes());
    let stats = reader.for_each(|r| b.push(id, r)).expect("in-memory read");
    b.finish_source(id, &stats);
    b.build()
}

/// Run `f` on the rule input of `text` (no context beyond the log).
pub fn with_input<R>(text: &str, f: impl FnOnce(&Input<'_>) -> R) -> R {
    let ev = evidence(text);
    let capacity = view::capacity_summary(&ev, &Context::default());
    let views = view::views(&ev);
    let span_s = view::longest_span_s(&views);
    let retractions = view::retraction_summary(&ev, span_s);
    f(&Input {
        ev: &ev,
        views: &views,
        capacity: &capacity,
        retractions: &retractions,
    })
}

/// Replace the first occurrence of `from` by `to` on every line of `text` (to make a boundary
/// case out of real lines: one field changed, the rest as logged).
pub fn edit(text: &str, from: &str, to: &str) -> String {
    text.lines()
        .map(|l| format!("{}\n", l.replacen(from, to, 1)))
        .collect()
}

/// Set the numeric field `key: N` (as SGLang prints it, e.g. `#queue-req` or `token usage`) to
/// `value` on every line that has it: a boundary case made from real lines.
pub fn set_field(text: &str, key: &str, value: &str) -> String {
    let pat = format!("{key}: ");
    text.lines()
        .map(|l| match l.find(&pat) {
            Some(i) => {
                let start = i + pat.len();
                let end = l[start..]
                    .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
                    .map_or(l.len(), |n| start + n);
                format!("{}{value}{}\n", &l[..start], &l[end..])
            }
            None => format!("{l}\n"),
        })
        .collect()
}

/// The lines of `text` that contain `needle` (one rank's lines out of a multi-rank log).
pub fn only(text: &str, needle: &str) -> String {
    text.lines()
        .filter(|l| l.contains(needle))
        .map(|l| format!("{l}\n"))
        .collect()
}
