//! # `stall`: requests run but tokens stop moving
//!
//! **What it detects.** Runs of consecutive decode lines with `#running-req` > 0 and the same
//! `#token`: at least [`th::MIN_FROZEN_LINES`] lines, or two lines at least
//! [`th::STALL_MIN_S`] apart. A run lasting [`th::STALL_MIN_S`] or longer is a stall; a
//! shorter one while every line still logs a healthy gen throughput is `#token` counted in
//! pages (SWA / paged pools move it in steps of a page) and is not reported.
//!
//! **Why it matters.** Decode steps that add no KV tokens are a hung step or collective, a model
//! emitting nothing new, or a logging bug: no throughput lever applies until it is understood.
//!
//! **Evidence it needs.** Decode lines with `#running-req`, `#token` and (for the page check)
//! `gen throughput`; timestamps for the duration. Every line of the run: on a timeline that
//! kept every line the runs are read off the samples; on one that keeps one line in `stride`
//! (a long log, or many files) two kept samples with the same `#token` say nothing of the
//! lines between them, and the runs followed line by line as the log was read
//! ([`crate::evidence::frozen`]) are used instead (there, the first line of a run is the one
//! whose reading is left out of the page check).
//!
//! **What to change.** Look at what the server printed around these lines (NCCL, OOM, a stuck
//! rank); a watchdog dump, when there is one, shows where it hung.
//!
//! **Source.** SGLang `scheduler_metrics_mixin.py` (`#token` is the KV slots in use when the
//! line is printed, every `decode_log_interval` steps); spec §2.1.

use crate::evidence::SchedulerKey;
use crate::evidence::view::SchedulerView;
use crate::narrative::words::finding;
use crate::report::{Confidence, Figure, Finding, FindingKind, SourceRange, Unit};
use crate::rules::{Input, Rule};
use crate::thresholds as th;

pub use crate::evidence::frozen::{FrozenRun, frozen_runs};

/// Whether any scheduler has a frozen run of [`th::STALL_MIN_S`] or more.
pub fn has_long_stall(views: &[SchedulerView<'_>]) -> bool {
    views.iter().any(|v| {
        if v.tl.decode.stride() > 1 {
            return v.tl.frozen.any_long();
        }
        frozen_runs(v.tl.decode.samples())
            .iter()
            .any(FrozenRun::is_long)
    })
}

/// One scheduler's longest frozen run that is reported.
#[derive(Clone, Debug, PartialEq)]
pub struct Facts {
    /// The scheduler.
    pub scheduler: SchedulerKey,
    /// The frozen `#token` (tokens).
    pub tokens: u64,
    /// `#running-req` at its start (requests).
    pub running: u64,
    /// Seconds from its first to its last line, when timestamped.
    pub duration_s: Option<f64>,
    /// Decode lines in it.
    pub lines: u64,
    /// Its lines.
    pub evidence: SourceRange,
}

impl Facts {
    /// Whether it lasts at least [`th::STALL_MIN_S`].
    pub fn is_long(&self) -> bool {
        self.duration_s.is_some_and(|d| d >= th::STALL_MIN_S)
    }
}

/// The rule: per scheduler, its longest frozen run, unless it is short and decode kept moving.
pub fn check(input: &Input<'_>) -> Vec<Facts> {
    let mut out = Vec::new();
    for v in input.views {
        if v.tl.decode.stride() > 1 {
            // not every line kept: the runs followed line by line
            if let Some(r) = v.tl.frozen.longest()
                && (r.is_long() || !r.moving)
            {
                out.push(Facts {
                    scheduler: v.key,
                    tokens: r.tokens,
                    running: r.running,
                    duration_s: r.duration_s(),
                    lines: r.lines,
                    evidence: input.span(r.first, r.last),
                });
            }
            continue;
        }
        let d = v.tl.decode.samples();
        let runs = frozen_runs(d);
        let Some(r) = runs.iter().max_by(|x, y| {
            (x.last - x.first).cmp(&(y.last - y.first)).then(
                x.duration_s
                    .unwrap_or(0.0)
                    .total_cmp(&y.duration_s.unwrap_or(0.0)),
            )
        }) else {
            continue;
        };
        // a reading whose window includes time without decoding says nothing of the freeze
        let moving = (r.first..=r.last)
            .filter(|&i| v.first_windows.binary_search(&d[i].line).is_err())
            .all(|i| {
                d[i].gen_tps
                    .is_some_and(|g| g > r.running as f64 * th::SLOW_DECODE_TOK_PER_REQ)
            });
        if !r.is_long() && moving {
            continue;
        }
        out.push(Facts {
            scheduler: v.key,
            tokens: r.tokens,
            running: r.running,
            duration_s: r.duration_s,
            lines: (r.last - r.first + 1) as u64,
            evidence: input.span(d[r.first].loc(), d[r.last].loc()),
        });
    }
    out
}

/// The rule as [`super::FINDING_RULES`] runs it: [`check`], then the finding in its words.
#[derive(Clone, Copy, Debug)]
pub struct Stall;

impl Rule for Stall {
    const NAME: &'static str = "stall";
    type Facts = Facts;

    fn check(input: &Input<'_>) -> impl IntoIterator<Item = Facts> {
        check(input)
    }

    fn finding(f: &Facts, _input: &Input<'_>) -> Finding {
        let r = f;
        let long = r.is_long();
        let mut figures = vec![
            Figure::new(
                "decode lines with #token unchanged",
                f.lines as f64,
                Unit::Lines,
            ),
            Figure::new("#token", r.tokens as f64, Unit::Tokens),
            Figure::new("running requests", r.running as f64, Unit::Requests),
        ];
        if let Some(x) = r.duration_s {
            figures.push(Figure::new("duration", x, Unit::Seconds));
        }
        finding(
            FindingKind::Stall,
            if long {
                "Stall: tokens stopped moving"
            } else {
                "#token frozen while requests run"
            },
            format!(
                "{} consecutive decode lines of {} report {} running request(s) but the same #token ({}){}: decode steps run without adding KV tokens. \
                 A hung step or collective, broken output (the model emitting nothing new), or a logging bug; look at what the server printed around these lines.",
                f.lines,
                f.scheduler,
                r.running,
                r.tokens,
                r.duration_s
                    .map(|x| format!(" for {x:.0} s"))
                    .unwrap_or_default()
            ),
            figures,
            vec![f.evidence.clone()],
            if long {
                Confidence::High
            } else {
                Confidence::Low
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{edit, whole, with_input};

    const JAX: &str = "real/020-sglang-jax-pr564-prefill-bid-cache-miss.log";

    #[test]
    fn three_frozen_lines_with_a_zero_reading_are_reported() {
        // the middle line reads 0 (the first line's 0.00 is its first window, no evidence)
        let stopped = edit(
            &whole(JAX),
            "gen throughput (token/s): 89.17",
            "gen throughput (token/s): 0.00",
        );
        with_input(&stopped, |i| {
            let f = check(i);
            assert_eq!(f.len(), 1);
            assert_eq!((f[0].lines, f[0].tokens, f[0].running), (3, 64, 1));
            assert!(!f[0].is_long());
            assert!(!has_long_stall(i.views));
        });
    }

    #[test]
    fn a_short_freeze_at_full_speed_is_paging_not_a_stall() {
        // 020 as logged: #token 64 on three lines, the first reading 0.00 its first window
        // (after a prefill with nothing running), then 89 and 85 tok/s
        with_input(&whole(JAX), |i| assert!(check(i).is_empty()));
        let moving = edit(
            &whole(JAX),
            "gen throughput (token/s): 0.00",
            "gen throughput (token/s): 88.00",
        );
        with_input(&moving, |i| assert!(check(i).is_empty()));
    }

    /// 020's lines inside a long log of the same server (9,000 more decode lines whose
    /// `#token` moves, the same line format): the timeline keeps one line in two, so the rule
    /// reads the runs followed on every line.
    fn in_a_long_log(lines: &str) -> String {
        let at = |s: u64| format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
        let moving = |s: u64, i: u64| {
            format!(
                "[2025-12-17 {}] Decode batch. #running-req: 1, #token: {}, token usage: 0.00, gen throughput (token/s): 90.00, #queue-req: 0, #cache_miss: 1\n",
                at(s),
                1000 + 10 * i
            )
        };
        // 020's decode lines are at 05:10:47; 4,000 lines before, 5,000 after 05:12:00
        let start = 5 * 3600 + 10 * 60 + 47 - 4000;
        let mut out: String = (0..4000).map(|i| moving(start + i, i)).collect();
        for l in lines.lines().filter(|l| l.contains("Decode batch")) {
            out.push_str(l);
            out.push('\n');
        }
        out.extend((0..5000).map(|i| moving(5 * 3600 + 12 * 60 + i, 4000 + i)));
        out
    }

    #[test]
    fn on_a_thinned_timeline_the_runs_of_every_line_are_read() {
        // positive: the three frozen lines, the middle reading 0 (as on 020 alone)
        let stopped = edit(
            &whole(JAX),
            "gen throughput (token/s): 89.17",
            "gen throughput (token/s): 0.00",
        );
        with_input(&in_a_long_log(&stopped), |i| {
            assert!(i.views[0].tl.decode.stride() > 1);
            let f = check(i);
            assert_eq!(f.len(), 1);
            assert_eq!((f[0].lines, f[0].tokens, f[0].running), (3, 64, 1));
            assert_eq!(
                (f[0].evidence.first_line, f[0].evidence.last_line),
                (4001, 4003)
            );
            assert!(!f[0].is_long() && !has_long_stall(i.views));
        });
        // negative: as logged, decode kept moving after the first window
        let moving = edit(
            &whole(JAX),
            "gen throughput (token/s): 0.00",
            "gen throughput (token/s): 88.00",
        );
        with_input(&in_a_long_log(&moving), |i| assert!(check(i).is_empty()));
        // boundary: the same three lines over exactly a minute are a stall
        let minute = edit(
            &whole(JAX),
            "05:10:47] Decode batch. #running-req: 1, #token: 64, token usage: 0.00, gen throughput (token/s): 84.65",
            "05:11:47] Decode batch. #running-req: 1, #token: 64, token usage: 0.00, gen throughput (token/s): 84.65",
        );
        with_input(&in_a_long_log(&minute), |i| {
            assert!(has_long_stall(i.views));
            assert_eq!(check(i)[0].duration_s, Some(60.0));
        });
    }

    #[test]
    fn a_freeze_of_a_minute_is_a_stall() {
        let long = edit(
            &whole(JAX),
            "05:10:47] Decode batch. #running-req: 1, #token: 64, token usage: 0.00, gen throughput (token/s): 84.65",
            "05:11:47] Decode batch. #running-req: 1, #token: 64, token usage: 0.00, gen throughput (token/s): 84.65",
        );
        with_input(&long, |i| {
            assert!(has_long_stall(i.views));
            assert!(check(i)[0].is_long());
        });
    }
}
