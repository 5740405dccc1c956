//! # `retraction`: the KV pool ran out during decode
//!
//! **What it detects.** SGLang's retraction lines (`KV cache pool is full. Retract requests.`,
//! `Decode out of memory happened`), deduplicated across TP ranks; thrashing from
//! [`th::THRASH_PER_HOUR`] events per hour.
//!
//! **Why it matters.** Admission was too optimistic for this pool (`new_token_ratio` decayed):
//! the pool is the limit. A retracted request keeps its generated tokens and is re-prefilled
//! with them later (SGLang `reset_for_retract`), so each retraction costs a prefill, not the
//! decode work again; frequent retraction wastes compute and lengthens latency.
//!
//! **Evidence it needs.** Retraction lines; timestamps for the rate per hour.
//!
//! **What it costs.** Each retracted request is prefilled again: the KV slots freed (prompt and
//! generated tokens, `#new_tokens_gained`) over the fastest prefill line's rate (`input
//! throughput`: each line's is a lower bound on the rate prefill computes at, its window holding
//! whatever ran since the previous prefill line, decode steps included; the fastest is the
//! tightest bound) is at most the time the re-prefill took; over the logged span it is the
//! most retraction costs. (The median line's rate counted the decode steps between sparse
//! prefills as prefill time: on real-long rtx4090 it made 0.3% look like 5.2%.)
//!
//! **What to change.** Only when that share is material ([`th::MATERIAL_REPREFILL_SHARE`]):
//! raise `--schedule-conservativeness` (fewer requests admitted at once: on a KV-bound server
//! that lowers throughput, so never first), cap `max_tokens` (cuts outputs), or give the KV
//! cache more memory. Below it the retractions are a symptom of the full pool, not a cost.
//!
//! **Source.** SGLang `scheduler.py` (`update_running_batch` → `retract_decode`),
//! `schedule_batch.py` (`reset_for_retract`); spec §3.

use crate::narrative::words::{finding, with_levers};
use crate::report::{Confidence, Figure, Finding, FindingKind, Lever, SourceRange, Unit};
use crate::rules::{Input, Rule};
use crate::thresholds as th;

/// What the rule saw (the counts are in the report's `RetractionSummary`).
#[derive(Clone, Debug, PartialEq)]
pub struct Facts {
    /// Whether the rate per hour is thrashing.
    pub thrash: bool,
    /// From the first to the last retraction line, when in one source.
    pub evidence: Option<SourceRange>,
    /// No request waited on any scheduler's steady lines (the queue printed, and 0 on every
    /// one): admission, and so `--schedule-conservativeness`, played no part; the running
    /// requests grew past the pool.
    pub nothing_waited: bool,
    /// What re-prefilling the retracted requests cost at most, when the log gives the tokens,
    /// a prefill rate and a span.
    pub reprefill: Option<Reprefill>,
    /// The lowest `#new_token_ratio` a retraction line printed before its retraction (the
    /// admission reserve it had decayed to), when any prints it.
    pub ratio_before: Option<f64>,
}

/// The time re-prefilling retracted requests took, estimated at the fastest prefill line's
/// rate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reprefill {
    /// KV slots the retractions freed, prefilled again on readmission (tokens).
    pub tokens: u64,
    /// The fastest `input throughput` of the prefill lines (tok/s).
    pub rate_tps: f64,
    /// The logged span the retractions happened in (seconds).
    pub wall_s: f64,
}

impl Reprefill {
    /// `tokens / rate / wall`: the share of the logged time spent re-prefilling, an estimate
    /// (fraction).
    pub fn share(&self) -> f64 {
        self.tokens as f64 / self.rate_tps / self.wall_s
    }

    /// The share reaches [`th::MATERIAL_REPREFILL_SHARE`].
    pub fn material(&self) -> bool {
        self.share() >= th::MATERIAL_REPREFILL_SHARE
    }
}

impl Facts {
    /// Retraction is worth changing a setting for: its measured cost is material.
    pub fn material(&self) -> bool {
        self.reprefill.is_some_and(|r| r.material())
    }
}

/// The rule.
pub fn check(input: &Input<'_>) -> Option<Facts> {
    if input.retractions.events == 0 {
        return None;
    }
    let t = &input.ev.retraction_totals;
    Some(Facts {
        thrash: input
            .retractions
            .per_hour
            .is_some_and(|x| x >= th::THRASH_PER_HOUR),
        nothing_waited: input.views.iter().any(|v| v.queued.max.is_some())
            && input
                .views
                .iter()
                .all(|v| v.queued.max.is_none_or(|q| q < 1.0)),
        evidence: t.first_line.zip(t.last_line).map(|(a, b)| input.span(a, b)),
        reprefill: reprefill(input),
        ratio_before: input
            .ev
            .retractions
            .iter()
            .filter_map(|r| r.ratio_before)
            .filter(|r| r.is_finite())
            .reduce(f64::min),
    })
}

fn reprefill(input: &Input<'_>) -> Option<Reprefill> {
    let tokens = input.retractions.tokens_freed?;
    // the fastest prefill line's rate: a line's window is the time since the previous prefill
    // line, which holds decode steps too (the rate then understates prefill) or, with the
    // overlap scheduler, ends before the batch computed (it overstates: real-4/101's last
    // chunk logs 108,847 tok/s on a GB10): an estimate, worded as one
    let rate_tps = input
        .views
        .iter()
        .flat_map(|v| v.tl.prefill.samples().iter().filter_map(|p| p.input_tps))
        .filter(|r| r.is_finite() && *r > 0.0)
        .reduce(f64::max)?;
    let wall_s = input
        .views
        .iter()
        .filter_map(|v| v.tl.time_range().map(|(a, b)| b - a))
        .fold(0.0, f64::max);
    (wall_s > 0.0).then_some(Reprefill {
        tokens,
        rate_tps,
        wall_s,
    })
}

/// The rule as [`super::FINDING_RULES`] runs it: [`check`], then the finding in its words.
#[derive(Clone, Copy, Debug)]
pub struct Retraction;

impl Rule for Retraction {
    const NAME: &'static str = "retraction";
    type Facts = Facts;

    fn check(input: &Input<'_>) -> impl IntoIterator<Item = Facts> {
        check(input)
    }

    fn finding(f: &Facts, input: &Input<'_>) -> Finding {
        let r = input.retractions;
        let nothing_waited = f.nothing_waited;
        let material = f.material();
        let mut figures = vec![
            Figure::new("retraction events", r.events as f64, Unit::Events),
            Figure::new("retraction lines (all ranks)", r.lines as f64, Unit::Lines),
            Figure::new(
                "requests retracted",
                r.retracted_requests as f64,
                Unit::Requests,
            ),
        ];
        if let Some(x) = r.per_hour {
            figures.push(Figure::new("retractions per hour", x, Unit::EventsPerHour));
        }
        if let Some(x) = r.tokens_freed {
            figures.push(Figure::new(
                "KV slots freed by retraction",
                x as f64,
                Unit::Tokens,
            ));
        }
        if let Some(c) = f.reprefill {
            figures.push(Figure::new(
                "fastest prefill line's rate (the re-prefill estimate's rate)",
                c.rate_tps,
                Unit::TokPerS,
            ));
            figures.push(Figure::new(
                "share of the logged time re-prefilling retracted requests, about",
                c.share(),
                Unit::Fraction,
            ));
        }
        if let Some(x) = r.max_ratio_after {
            figures.push(Figure::new(
                "highest new_token_ratio after a retraction",
                x,
                Unit::Ratio,
            ));
        }
        let f = finding(
            FindingKind::Retraction,
            if f.thrash {
                "Retraction thrash"
            } else {
                "KV cache ran out during decode (retraction)"
            },
            format!(
                "The KV pool could not hold the next decode token of every running request, so SGLang retracted requests back to the queue; \
                 each keeps the tokens it generated and is prefilled again (prompt plus those tokens) when readmitted, so a retraction costs a prefill, not the decode work twice. {}",
                if nothing_waited {
                    "No request waited on the batch lines, so admission (and --schedule-conservativeness) played no part: the requests already running grew past the pool. Cap max_tokens, or give the KV cache more memory.".to_string()
                } else {
                    let cost = match f.reprefill {
                        Some(c) if c.material() => format!(
                            " Re-prefilling the {} freed tokens took about {:.1}% of the logged time (at the fastest prefill line's {:.0} tok/s; a line's rate is its tokens over the time since the previous prefill line, so it can sit above or below what prefill computes at: an estimate): worth fewer retractions, though a higher --schedule-conservativeness admits fewer requests at once, which costs decode throughput on a full pool.",
                            c.tokens, c.share() * 100.0, c.rate_tps
                        ),
                        Some(c) => format!(
                            " Re-prefilling the {} freed tokens took about {:.2}% of the logged time (at the fastest prefill line's {:.0} tok/s; a line's rate is its tokens over the time since the previous prefill line, so it can sit above or below what prefill computes at: an estimate, small even at a rate several times lower): not worth admitting fewer requests for; the retractions are a symptom of the full pool, which more KV memory treats.",
                            c.tokens, c.share() * 100.0, c.rate_tps
                        ),
                        None => " What re-prefilling cost is not measured (no freed-token count or no prefill rate in the log), so no setting is advised for retraction alone; the pool is the limit.".to_string(),
                    };
                    match f.ratio_before {
                        // above SGLang's start only a retraction can have raised it
                        Some(r) if r > th::INIT_NEW_TOKEN_RATIO + 0.005 => format!(
                            "It means the running requests outgrew this pool although the reserve was high (its new_token_ratio was {r:.2}, above SGLang's default start of {:.1}: an earlier retraction raised it, or it started higher by --schedule-conservativeness or SGLANG_INIT_NEW_TOKEN_RATIO), and the pool is the limit.{cost}",
                            th::INIT_NEW_TOKEN_RATIO
                        ),
                        Some(r) if r <= th::NEW_TOKEN_RATIO_DECAYED => format!(
                            "It means admission was too optimistic for this pool (its new_token_ratio had decayed to {r:.2} before the retraction: the reserve for the running requests' remaining tokens had shrunk) and the pool is the limit.{cost}"
                        ),
                        Some(r) => format!(
                            "It means admission was too optimistic for this pool (its new_token_ratio was {r:.2}, little decayed from SGLang's default start of {:.1}: the running requests' outputs outgrew what it reserved) and the pool is the limit.{cost}",
                            th::INIT_NEW_TOKEN_RATIO
                        ),
                        None => format!(
                            "It means admission was too optimistic for this pool and the pool is the limit.{cost}"
                        ),
                    }
                }
            ),
            figures,
            f.evidence.clone().into_iter().collect(),
            Confidence::High,
        );
        // with nothing waiting no admission took place: the requests that run grew past the pool
        // only a material cost is worth admitting fewer requests (or cutting outputs) for
        let levers: &[Lever] = if nothing_waited {
            &[Lever::MaxTokens]
        } else if material {
            &[
                Lever::MemFractionStatic,
                Lever::ScheduleConservativeness,
                Lever::MaxTokens,
            ]
        } else {
            &[Lever::MemFractionStatic]
        };
        with_levers(f, levers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{excerpt, whole, with_input};

    const OOM: &str = "real/011-pr6731-debug-decode-oom-retract.log";

    #[test]
    fn a_decode_out_of_memory_line_is_a_retraction() {
        with_input(&whole(OOM), |i| {
            let f = check(i).expect("retraction");
            assert_eq!(i.retractions.events, 1);
            assert!(!f.thrash);
            // no batch line prints a queue: that nothing waited is not known
            assert!(!f.nothing_waited);
            assert_eq!(f.evidence.map(|e| e.first_line), Some(14));
        });
    }

    #[test]
    fn a_retraction_with_nothing_waiting() {
        // two requests at usage 1.00 and #queue-req 0 (lines 1-5), then the retraction
        with_input(
            &whole("real/046-i2746-dsv3-usage100-tiny-batch-then-decode-oom.log"),
            |i| assert!(check(i).expect("retraction").nothing_waited),
        );
    }

    #[test]
    fn reprefill_cost_of_the_founding_case_is_not_material() {
        // kimi-k25-b2-early: 39 retractions freed 124,097 tokens; the fastest prefill line
        // ran 234,082 tok/s; the log spans 14.9 min: at most 0.53 s of 895 s, 0.06%.
        with_input(&whole("scenarios/kimi-k25-b2-early/server.log"), |i| {
            let f = check(i).expect("retraction");
            let r = f.reprefill.expect("cost");
            assert_eq!(r.tokens, 124_097);
            assert_eq!(format!("{:.0}", r.rate_tps), "234082");
            assert!((r.share() - 0.0006).abs() < 0.0001, "{}", r.share());
            assert!(!f.material());
        });
    }

    /// real-long rtx4090: 18,644 freed tokens; the median prefill line reads 1,050 tok/s (its
    /// window mostly decode steps between sparse prefills), the fastest 18,888.79 (line 52): at
    /// most 0.3% of the 4.8 min, not the 5.2% the median made it (expert reading).
    #[test]
    fn reprefill_cost_is_bounded_by_the_fastest_prefill_line() {
        with_input(
            &whole("real-long/rtx4090-qwen3-4b-kv-retraction.log"),
            |i| {
                let f = check(i).expect("retraction");
                let r = f.reprefill.expect("cost");
                assert_eq!(format!("{:.2}", r.rate_tps), "18888.79");
                assert!(r.share() < 0.005, "{}", r.share());
                assert!(!f.material());
            },
        );
    }

    #[test]
    fn reprefill_cost_boundary() {
        // at the threshold the cost is material, just below it is not
        let at = |share: f64| Reprefill {
            tokens: (share * 1000.0 * 100.0).round() as u64,
            rate_tps: 1000.0,
            wall_s: 100.0,
        };
        assert!(at(th::MATERIAL_REPREFILL_SHARE).material());
        assert!(!at(th::MATERIAL_REPREFILL_SHARE - 0.001).material());
    }

    #[test]
    fn a_retraction_without_freed_tokens_has_no_measured_cost() {
        // the debug line of this version prints no #new_tokens_gained: the cost is unknown,
        // so it is not material
        with_input(&whole(OOM), |i| {
            let f = check(i).expect("retraction");
            assert_eq!(f.reprefill, None);
            assert!(!f.material());
        });
    }

    #[test]
    fn no_retraction_line_no_finding() {
        with_input(&excerpt(OOM, 1..=13), |i| assert_eq!(check(i), None));
    }

    #[test]
    fn every_tp_rank_reports_one_event() {
        let line = excerpt(OOM, 14..=14);
        let two_ranks = format!(
            "{}{}",
            line.replace("08:25:50]", "08:25:50 TP0]"),
            line.replace("08:25:50]", "08:25:50 TP1]")
        );
        with_input(&two_ranks, |i| {
            assert_eq!((i.retractions.events, i.retractions.lines), (1, 2));
            assert!(check(i).is_some());
        });
    }

    /// real/011: the retraction line prints `#new_token_ratio: 0.8024 -> 0.9085` (line 14):
    /// above SGLang's default start of 0.7 (an earlier retraction raised it, or a setting started
    /// it higher), and the finding says so (not "too optimistic", not "decayed"; expert
    /// reading); real/046's lines print 0.0980,
    /// near SGLang's floor: there it had decayed.
    #[test]
    fn the_ratio_is_called_decayed_only_near_its_floor() {
        with_input(
            &whole("real/011-pr6731-debug-decode-oom-retract.log"),
            |i| {
                let f = check(i).expect("retraction");
                assert_eq!(
                    f.ratio_before.map(|r| format!("{r:.4}")),
                    Some("0.8024".into())
                );
                let w = Retraction::finding(&f, i).detail;
                assert!(
                    w.contains("although the reserve was high (its new_token_ratio was 0.80")
                        || f.nothing_waited,
                    "{w}"
                );
                assert!(!w.contains("too optimistic"), "{w}");
                assert!(!w.contains("had decayed"), "{w}");
            },
        );
        with_input(
            &whole("real/046-i2746-dsv3-usage100-tiny-batch-then-decode-oom.log"),
            |i| {
                let f = check(i).expect("retraction");
                assert!(
                    f.ratio_before
                        .is_some_and(|r| r <= th::NEW_TOKEN_RATIO_DECAYED),
                    "{:?}",
                    f.ratio_before
                );
            },
        );
    }
}
