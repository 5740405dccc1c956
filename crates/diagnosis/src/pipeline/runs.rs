//! Every server run of a log, each diagnosed on its own.

use super::diagnose_with;
use crate::context::Context;
use crate::evidence::Evidence;
use crate::narrative;
use crate::report::{Report, RunLine, RunSummary, ServerRuns};

/// Every run of a log that holds several ([`crate::evidence::runs`]), each diagnosed on its
/// own by this pipeline: the last run is `last` (the report of what the server runs now); the
/// earlier runs are diagnosed from their log lines alone, since server info, GPU memory,
/// `/metrics` and client records describe the server as it is now. `None` for one run.
pub(super) fn server_runs(ev: &Evidence, last: &Report) -> Option<ServerRuns> {
    if ev.earlier_runs.is_empty() {
        return None;
    }
    let base = usize::try_from(ev.earlier_runs_dropped).unwrap_or(usize::MAX);
    let all: Vec<&Evidence> = ev.earlier_runs.iter().chain(std::iter::once(ev)).collect();
    let line = |l: crate::evidence::Loc| RunLine {
        source: ev
            .sources
            .get(l.source)
            .map(|s| s.name.clone())
            .unwrap_or_default(),
        line: l.line,
    };
    let runs = all
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let diagnosed = i + 1 == all.len();
            let own;
            let r = if diagnosed {
                last
            } else {
                own = diagnose_with(e, &Context::default());
                &own
            };
            let mut run = RunSummary {
                index: base.saturating_add(i + 1),
                first: line(
                    e.run
                        .first
                        .unwrap_or(crate::evidence::Loc { source: 0, line: 1 }),
                ),
                last: e.run.last.map(line),
                start_s: e.run.first_t,
                end_s: e.run.last_t,
                begins: e.run.start,
                gap_before_s: e.run.gap_before_s,
                bottleneck: r.bottleneck,
                steady_gen_tok_per_s: r.steady_gen_throughput.as_ref().map(|g| g.value),
                running_median: r.headline.running_median,
                decode_lines_with_graph: graph_lines(e, true),
                decode_lines_without_graph: graph_lines(e, false),
                repeats: all[..i]
                    .iter()
                    .position(|p| p.same_run_lines(e))
                    .map(|j| base.saturating_add(j + 1)),
                diagnosed,
                text: String::new(),
            };
            run.text = narrative::run_summary(&run);
            run
        })
        .collect();
    let mut s = ServerRuns {
        count: base.saturating_add(all.len()),
        text: String::new(),
        runs,
    };
    s.text = narrative::server_runs(&s);
    Some(s)
}

/// Decode lines of every scheduler of `e` whose graph flag reads `graph` (lines kept in the
/// timelines; every line of a run short enough to matter here).
fn graph_lines(e: &Evidence, graph: bool) -> u64 {
    e.schedulers
        .values()
        .flat_map(|tl| tl.decode.samples())
        .filter(|d| d.graph == Some(graph))
        .count() as u64
}
