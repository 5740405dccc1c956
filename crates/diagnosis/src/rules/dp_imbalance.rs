//! # `dp_imbalance`: load is uneven across DP ranks
//!
//! **What it detects.** With two or more DP ranks, the idlest rank's mean running requests
//! below [`th::DP_IMBALANCE_RATIO`] of the busiest's (which runs at least
//! [`th::DP_IMBALANCE_MIN_RUNNING`]).
//!
//! **Why it matters.** Under DP attention all ranks step together, so the busiest rank sets the
//! pace and the idle ranks' capacity is wasted.
//!
//! **Evidence it needs.** Decode lines tagged `DPn` for several ranks, at least
//! [`th::DP_IMBALANCE_MIN_LINES`] steady ones on each rank compared.
//!
//! **What to change.** The load-balance method: a load-aware `--load-balance-method`
//! (`total_requests` or `total_tokens` in current SGLang, `server_args.py`; `shortest_queue` in
//! older releases), or the router's policy, or the client's spread of long requests.
//!
//! **Source.** SGLang `managers/data_parallel_controller.py` (dispatch), sgl-router policies.

use crate::evidence::view::SchedulerView;
use crate::narrative::words::{finding, with_levers};
use crate::report::{Confidence, Figure, Finding, FindingKind, Lever, Unit};
use crate::rules::{Input, Rule};
use crate::thresholds as th;

/// The spread.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Facts {
    /// Lowest mean running requests on a DP rank (requests).
    pub min: f64,
    /// Highest (requests).
    pub max: f64,
    /// DP ranks compared.
    pub ranks: usize,
}

/// The rule.
pub fn check(views: &[SchedulerView<'_>]) -> Option<Facts> {
    let means: Vec<f64> = views
        .iter()
        .filter(|v| v.key.dp.is_some() && v.steady_decode.len() >= th::DP_IMBALANCE_MIN_LINES)
        .filter_map(|v| v.running.mean)
        .collect();
    if means.len() < 2 {
        return None;
    }
    let max = means.iter().copied().fold(f64::MIN, f64::max);
    let min = means.iter().copied().fold(f64::MAX, f64::min);
    (max >= th::DP_IMBALANCE_MIN_RUNNING && min <= th::DP_IMBALANCE_RATIO * max).then_some(Facts {
        min,
        max,
        ranks: means.len(),
    })
}

/// The rule as [`super::FINDING_RULES`] runs it: [`check`], then the finding in its words.
#[derive(Clone, Copy, Debug)]
pub struct DpImbalance;

impl Rule for DpImbalance {
    const NAME: &'static str = "dp_imbalance";
    type Facts = Facts;

    fn check(input: &Input<'_>) -> impl IntoIterator<Item = Facts> {
        check(input.views)
    }

    fn finding(f: &Facts, _input: &Input<'_>) -> Finding {
        let out = finding(
            FindingKind::DpImbalance,
            "Load is uneven across DP ranks",
            format!(
                "Mean running requests range from {:.1} to {:.1} across {} DP ranks: the busiest rank sets the pace. Check the load-balance method: a load-aware --load-balance-method (total_requests or total_tokens in current SGLang; shortest_queue in older releases), or the router's policy.",
                f.min, f.max, f.ranks
            ),
            vec![
                Figure::new(
                    "lowest mean running requests on a DP rank",
                    f.min,
                    Unit::Requests,
                ),
                Figure::new(
                    "highest mean running requests on a DP rank",
                    f.max,
                    Unit::Requests,
                ),
            ],
            Vec::new(),
            Confidence::Low,
        );
        with_levers(out, &[Lever::LoadBalanceMethod])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{edit, only, whole, with_input};

    const DP_EP: &str = "real/023-pr17392-dp-ep-decode-prealloc-generate.log";

    /// 023's lines three times over, a minute apart: each of the 3 DP ranks has 3 decode
    /// lines, 6 against 11 running. The log itself, one line a rank, is an instant of each
    /// (boundary: no finding).
    #[test]
    fn six_against_eleven_running() {
        let once = whole(DP_EP);
        let thrice = format!(
            "{once}{}{}",
            edit(&once, "2026-05-07 13:40", "2026-05-07 13:41"),
            edit(&once, "2026-05-07 13:40", "2026-05-07 13:42")
        );
        with_input(&thrice, |i| {
            assert_eq!(
                check(i.views),
                Some(Facts {
                    min: 6.0,
                    max: 11.0,
                    ranks: 3
                })
            );
        });
        with_input(&once, |i| assert_eq!(check(i.views), None));
    }

    #[test]
    fn one_rank_cannot_be_imbalanced() {
        with_input(&only(&whole(DP_EP), "DP0"), |i| {
            assert_eq!(check(i.views), None)
        });
    }

    #[test]
    fn within_two_thirds_is_balanced() {
        // 8 against 11: 0.73 of the busiest, above the ratio.
        let once = edit(&whole(DP_EP), "#running-req: 6,", "#running-req: 8,");
        let thrice = format!(
            "{once}{}{}",
            edit(&once, "2026-05-07 13:40", "2026-05-07 13:41"),
            edit(&once, "2026-05-07 13:40", "2026-05-07 13:42")
        );
        with_input(&thrice, |i| assert_eq!(check(i.views), None));
    }
}
