//! # `fleet_imbalance`: a DP rank or an instance of the fleet stands apart from its peers
//!
//! **What it detects.** In the fleet view (`diagnose --prometheus`), a DP rank among the ranks
//! of its instance, or an instance among the instances, whose mean queue is at least
//! [`th::FLEET_QUEUE_OUTLIER_FACTOR`] times its peers' median and
//! [`th::FLEET_QUEUE_OUTLIER_MIN_EXCESS`] requests above it, or whose mean token usage is
//! [`th::FLEET_USAGE_OUTLIER_DELTA`] or more from the median, either way. The median is over
//! the peers, itself included. Ranks are compared from [`th::FLEET_MIN_RANK_PEERS`] of them,
//! instances from [`th::FLEET_MIN_INSTANCE_PEERS`]. An outlier is a few standing apart: when
//! more than one peer in [`th::FLEET_OUTLIER_GROUP_DIVISOR`] (and more than one) would be
//! flagged on the same measure, they are a group, not outliers, and none is flagged on it.
//!
//! **Why it matters.** Requests wait on one member while its peers have room: the fleet
//! serves at the pace of its busiest member and the others' capacity is idle. A group apart
//! is a different configuration or workload, which the per-instance verdicts speak to.
//!
//! **Evidence it needs.** Per DP rank and per instance, the means of `sglang:num_queue_reqs`
//! and `sglang:token_usage` over the window read from Prometheus (equal steps; the instance's
//! queue summed over its ranks, its usage the fullest rank's at each step).
//!
//! **What to change.** The spread of requests: the DP controller's
//! `--load-balance-method` for ranks of one server, the router's policy (or the client's
//! list of endpoints) for instances; or the odd member's configuration, when it differs.
//!
//! **Source.** SGLang `managers/data_parallel_controller.py` (dispatch across DP ranks),
//! sgl-router policies; `sglang:num_queue_reqs` and `sglang:token_usage` as
//! `scheduler_metrics_mixin.py` exports them (spec §3.3).

use serde::Serialize;

use crate::thresholds as th;

/// Whom a peer is compared with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Among {
    /// The DP ranks of one instance (from [`th::FLEET_MIN_RANK_PEERS`]).
    RanksOfAnInstance,
    /// The instances of the fleet (from [`th::FLEET_MIN_INSTANCE_PEERS`]).
    Instances,
}

impl Among {
    /// The fewest peers compared (ranks or instances).
    pub const fn min_peers(self) -> usize {
        match self {
            Among::RanksOfAnInstance => th::FLEET_MIN_RANK_PEERS,
            Among::Instances => th::FLEET_MIN_INSTANCE_PEERS,
        }
    }
}

/// One DP rank or instance and the means it is compared on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Peer<'a> {
    /// The instance (`host:port`, Prometheus' `instance` label).
    pub instance: &'a str,
    /// The DP rank (`dp_rank` label) for a rank; `None` for an instance.
    pub dp_rank: Option<&'a str>,
    /// Mean queued requests over the window (requests).
    pub queued_mean: Option<f64>,
    /// Mean token usage over the window (fraction of the KV pool).
    pub usage_mean: Option<f64>,
}

/// What an outlier stands apart on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    /// Mean queued requests (requests).
    Queue,
    /// Mean token usage (fraction of the KV pool).
    Usage,
}

impl Measure {
    /// Its name in the JSON (`queue`, `usage`).
    pub const fn name(self) -> &'static str {
        match self {
            Measure::Queue => "queue",
            Measure::Usage => "usage",
        }
    }
}

/// A DP rank or instance whose queue or token usage stands apart from its peers.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Outlier {
    /// The instance.
    pub instance: String,
    /// The DP rank, for a rank against the other ranks of its instance; None for an instance
    /// against the other instances.
    pub dp_rank: Option<String>,
    /// What it stands apart on: `queue` (mean queued requests) or `usage` (mean token usage,
    /// fraction).
    pub what: Measure,
    /// Its value (requests for `queue`, fraction for `usage`).
    pub value: f64,
    /// The median of its peers, itself included (the unit of `value`).
    pub peers_median: f64,
}

/// The rule: the outliers among `peers`, ordered by instance and DP rank (queue before usage
/// for one peer). None when there are fewer peers than `among` compares.
pub fn check(peers: &[Peer<'_>], among: Among) -> Vec<Outlier> {
    let mut out = Vec::new();
    if peers.len() < among.min_peers() {
        return out;
    }
    let queues: Vec<f64> = peers.iter().filter_map(|p| p.queued_mean).collect();
    let usages: Vec<f64> = peers.iter().filter_map(|p| p.usage_mean).collect();
    let mq = throughput_stats::median_mid_f64(&queues);
    let mu = throughput_stats::median_mid_f64(&usages);
    let outlier = |p: &Peer<'_>, what, value, peers_median| Outlier {
        instance: p.instance.to_string(),
        dp_rank: p.dp_rank.map(str::to_string),
        what,
        value,
        peers_median,
    };
    let mut by_queue = Vec::new();
    let mut by_usage = Vec::new();
    for p in peers {
        if let (Some(q), Some(m)) = (p.queued_mean, mq)
            && q >= th::FLEET_QUEUE_OUTLIER_FACTOR * m
            && q >= m + th::FLEET_QUEUE_OUTLIER_MIN_EXCESS
        {
            by_queue.push(outlier(p, Measure::Queue, q, m));
        }
        if let (Some(u), Some(m)) = (p.usage_mean, mu)
            && (u - m).abs() >= th::FLEET_USAGE_OUTLIER_DELTA
        {
            by_usage.push(outlier(p, Measure::Usage, u, m));
        }
    }
    let few = (peers.len() / th::FLEET_OUTLIER_GROUP_DIVISOR).max(1);
    for group in [by_queue, by_usage] {
        if group.len() <= few {
            out.extend(group);
        }
    }
    out.sort_by(|a, b| (&a.instance, &a.dp_rank).cmp(&(&b.instance, &b.dp_rank)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// DP ranks `0..` of instance `h` with these (queue, usage) means.
    fn ranks(means: &[(f64, f64)]) -> Vec<(String, f64, f64)> {
        means
            .iter()
            .enumerate()
            .map(|(i, &(q, u))| (i.to_string(), q, u))
            .collect()
    }

    fn peers(r: &[(String, f64, f64)]) -> Vec<Peer<'_>> {
        r.iter()
            .map(|(rank, q, u)| Peer {
                instance: "h",
                dp_rank: Some(rank),
                queued_mean: Some(*q),
                usage_mean: Some(*u),
            })
            .collect()
    }

    fn flagged(o: &[Outlier]) -> Vec<(&str, Measure)> {
        o.iter()
            .map(|x| (x.dp_rank.as_deref().unwrap_or(&x.instance), x.what))
            .collect()
    }

    #[test]
    fn a_rank_with_a_standing_queue_and_a_full_pool_is_an_outlier() {
        let r = ranks(&[(1.0, 0.5), (2.0, 0.55), (40.0, 0.97), (1.5, 0.5)]);
        let o = check(&peers(&r), Among::RanksOfAnInstance);
        assert_eq!(flagged(&o), [("2", Measure::Queue), ("2", Measure::Usage)]);
        // the median of the four queues: (1.5 + 2) / 2
        assert_eq!(o[0].peers_median, 1.75);
        assert_eq!(o[0].value, 40.0);
        assert!((o[1].peers_median - 0.525).abs() < 1e-12);
    }

    #[test]
    fn a_third_of_the_fleet_apart_is_a_group_not_outliers() {
        let names: Vec<String> = (0..9).map(|i| format!("h{i}")).collect();
        let fleet: Vec<Peer<'_>> = names
            .iter()
            .enumerate()
            .map(|(i, n)| Peer {
                instance: n,
                dp_rank: None,
                queued_mean: Some(0.0),
                usage_mean: Some(if i < 3 { 0.97 } else { 0.1 }),
            })
            .collect();
        assert!(check(&fleet, Among::Instances).is_empty());
        // one of the nine apart is an outlier
        let mut one = fleet.clone();
        for p in &mut one[1..3] {
            p.usage_mean = Some(0.1);
        }
        let o = check(&one, Among::Instances);
        assert_eq!(flagged(&o), [("h0", Measure::Usage)]);
        assert_eq!(o[0].dp_rank, None);
    }

    #[test]
    fn the_queue_must_be_twice_the_median_and_five_requests_above_it() {
        // 10 against a median of 5: twice and 5 above, flagged
        let at = ranks(&[(5.0, 0.5), (5.0, 0.5), (5.0, 0.5), (10.0, 0.5)]);
        assert_eq!(
            flagged(&check(&peers(&at), Among::RanksOfAnInstance)),
            [("3", Measure::Queue)]
        );
        // 8 against 4: twice, but only 4 above
        let small = ranks(&[(4.0, 0.5), (4.0, 0.5), (4.0, 0.5), (8.0, 0.5)]);
        assert!(check(&peers(&small), Among::RanksOfAnInstance).is_empty());
        // 30 against 20: 10 above, but not twice
        let busy = ranks(&[(20.0, 0.5), (20.0, 0.5), (20.0, 0.5), (30.0, 0.5)]);
        assert!(check(&peers(&busy), Among::RanksOfAnInstance).is_empty());
    }

    #[test]
    fn usage_a_quarter_from_the_median_either_way() {
        let at = ranks(&[(0.0, 0.5), (0.0, 0.5), (0.0, 0.5), (0.0, 0.25)]);
        assert_eq!(
            flagged(&check(&peers(&at), Among::RanksOfAnInstance)),
            [("3", Measure::Usage)]
        );
        let inside = ranks(&[(0.0, 0.5), (0.0, 0.5), (0.0, 0.5), (0.0, 0.74)]);
        assert!(check(&peers(&inside), Among::RanksOfAnInstance).is_empty());
    }

    #[test]
    fn too_few_peers_are_not_compared() {
        // two ranks of one instance are compared...
        let two = ranks(&[(0.0, 0.1), (30.0, 0.1)]);
        assert_eq!(
            flagged(&check(&peers(&two), Among::RanksOfAnInstance)),
            [("1", Measure::Queue)]
        );
        // ...two instances are not, nor is one rank
        assert!(check(&peers(&two), Among::Instances).is_empty());
        assert!(check(&peers(&two[..1]), Among::RanksOfAnInstance).is_empty());
        // and a peer without a mean is compared on what it has
        let mut p = peers(&two);
        p[1].queued_mean = None;
        assert!(check(&p, Among::RanksOfAnInstance).is_empty());
    }
}
