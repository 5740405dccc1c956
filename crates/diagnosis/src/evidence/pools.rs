//! Every memory pool a scheduler's decode lines report, and whether all of them have room.
//!
//! SGLang prints one usage per pool it keeps (spec §2.2.1, §2.6):
//! - the KV pool: `token usage`, or `full token usage` for hybrid models (the full-attention
//!   layers' pool). On a PD decode server it includes the KV pre-allocated for transfers in
//!   flight (`pre-allocated usage` is that part, `disaggregation/decode.py`);
//! - hybrid sliding-window models (`is_hybrid_swa`): `swa token usage`, the sliding-window
//!   layers' pool against its own size (`swa_layer_tokens`);
//! - hybrid SSM models (Qwen3-Next, Nemotron-H, …): `mamba usage`, the mamba-state slots (one
//!   per running request, `max_mamba_cache_size`).
//!
//! Admission stops when *any* pool cannot hold the next request (`schedule_policy.py`
//! `PrefillAdder` checks every allocator), so "the KV cache has room" holds only when every pool
//! reported has room, and never when a usage is unknown or reaches
//! [`th::CONSERVATIVE_USAGE`] at its 90th percentile.

use serde::Serialize;

use crate::evidence::gauges::gauge;
use crate::evidence::{DecodeSample, PrefillSample, collect_within};
use crate::report::GaugeStats;
use crate::thresholds as th;

/// A memory pool whose usage the decode lines print.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PoolKind {
    /// The KV pool (`token usage`; `full token usage` for hybrid models).
    Kv,
    /// The sliding-window layers' pool of a hybrid SWA model (`swa token usage`).
    Swa,
    /// The mamba-state slots of a hybrid SSM model (`mamba usage`).
    Mamba,
}

/// One pool's usage over the steady span (fractions 0–1).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PoolUsage {
    /// Which pool.
    pub pool: PoolKind,
    /// Median usage (fraction).
    pub median: f64,
    /// 90th percentile (nearest rank; fraction).
    pub p90: f64,
    /// Readings used.
    pub n: usize,
}

/// Whether every pool has room.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PoolRoom {
    /// Every pool reported stays below [`th::CONSERVATIVE_USAGE`] at its 90th percentile;
    /// `fullest` is the highest of those percentiles (fraction).
    Room {
        /// Highest 90th-percentile usage over the pools (fraction).
        fullest: f64,
        /// The pool that reads it.
        pool: PoolKind,
    },
    /// A pool reaches [`th::CONSERVATIVE_USAGE`] at its 90th percentile: the fullest such
    /// pool.
    Tight(PoolUsage),
    /// No decode line of the span prints a usage.
    Unknown,
}

impl PoolRoom {
    /// Whether it is [`PoolRoom::Room`].
    pub fn has_room(&self) -> bool {
        matches!(self, PoolRoom::Room { .. })
    }
}

/// One pool's usage from `(time, usage)` points: the time-weighted median and 90th percentile
/// the views use for every gauge ([`crate::evidence::view::gauge`]).
fn summary(pool: PoolKind, points: &[(Option<f64>, f64)]) -> Option<PoolUsage> {
    summary_of(pool, &gauge(points))
}

fn summary_of(pool: PoolKind, g: &GaugeStats) -> Option<PoolUsage> {
    Some(PoolUsage {
        pool,
        median: g.median?,
        p90: g.p90?,
        n: g.n,
    })
}

/// The usage of every pool the samples report, in [`PoolKind`] order (a pool no sample
/// reports is left out).
pub fn pool_usage(samples: &[DecodeSample]) -> Vec<PoolUsage> {
    pool_usage_with(samples, None)
}

/// [`pool_usage`], with the gauge of the samples' `token usage` when it is already made (the
/// views make it; the same points give the same gauge).
fn pool_usage_with(samples: &[DecodeSample], kv: Option<&GaugeStats>) -> Vec<PoolUsage> {
    // generic in the reading: through a function pointer each line was a call, ~0.1 M
    // instructions a pool over a scheduler's 5,900 steady decode lines that print none
    fn of(
        samples: &[DecodeSample],
        pool: PoolKind,
        get: impl Fn(&DecodeSample) -> Option<f64>,
    ) -> Option<PoolUsage> {
        let points: Vec<(Option<f64>, f64)> = collect_within(
            samples.len(),
            samples.iter().filter_map(|d| Some((d.t, get(d)?))),
        );
        summary(pool, &points)
    }
    [
        match kv {
            Some(g) => summary_of(PoolKind::Kv, g),
            None => of(samples, PoolKind::Kv, |d| d.usage),
        },
        of(samples, PoolKind::Swa, |d| d.swa_usage),
        of(samples, PoolKind::Mamba, |d| d.mamba_usage),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Whether every pool of `decode` has room (see the module doc); without a decode line that
/// prints a usage, the prefill lines' `token usage` stands for the KV pool and their `mamba
/// usage` for the mamba-state slots.
pub fn pool_room(decode: &[DecodeSample], prefill: &[PrefillSample]) -> PoolRoom {
    pool_room_with(decode, prefill, None)
}

/// [`pool_room`], with `kv_usage` the gauge of the decode lines' `token usage` when it is
/// already made: `gauge` of every `(t, usage)` of `decode` that prints one.
pub(crate) fn pool_room_with(
    decode: &[DecodeSample],
    prefill: &[PrefillSample],
    kv_usage: Option<&GaugeStats>,
) -> PoolRoom {
    let mut pools = pool_usage_with(decode, kv_usage);
    if pools.is_empty() {
        let of = |pool: PoolKind, get: fn(&PrefillSample) -> Option<f64>| {
            let points: Vec<(Option<f64>, f64)> = collect_within(
                prefill.len(),
                prefill.iter().filter_map(|p| Some((p.t, get(p)?))),
            );
            summary(pool, &points)
        };
        pools.extend(of(PoolKind::Kv, |p| p.usage));
        pools.extend(of(PoolKind::Mamba, |p| p.mamba_usage));
    }
    if pools.is_empty() {
        return PoolRoom::Unknown;
    }
    match pools
        .iter()
        .filter(|p| p.p90 >= th::CONSERVATIVE_USAGE)
        .max_by(|a, b| a.p90.total_cmp(&b.p90))
    {
        Some(p) => PoolRoom::Tight(*p),
        None => {
            let top = pools
                .iter()
                .max_by(|a, b| a.p90.total_cmp(&b.p90))
                .map_or((0.0, PoolKind::Kv), |p| (p.p90, p.pool));
            PoolRoom::Room {
                fullest: top.0,
                pool: top.1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{edit, evidence, excerpt};

    fn samples(text: &str) -> Vec<DecodeSample> {
        let ev = evidence(text);
        ev.schedulers
            .values()
            .flat_map(|tl| tl.decode.samples().iter().copied())
            .collect()
    }

    #[test]
    fn hybrid_mamba_slots_full_is_no_room_though_the_full_pool_has_room() {
        // 80 running, full token usage 0.64, mamba usage 1.00: the 80 mamba-state slots are
        // every slot
        let s = samples(&excerpt(
            "real-long/ascend-qwen3next-80b-hybrid-mamba.log",
            1169..=1170,
        ));
        let pools = pool_usage(&s);
        assert_eq!(pools.len(), 2);
        assert_eq!((pools[0].pool, pools[0].p90), (PoolKind::Kv, 0.64));
        assert_eq!((pools[1].pool, pools[1].p90), (PoolKind::Mamba, 1.0));
        assert_eq!(
            pool_room(&s, &[]),
            PoolRoom::Tight(PoolUsage {
                pool: PoolKind::Mamba,
                median: 1.0,
                p90: 1.0,
                n: 2
            })
        );
    }

    #[test]
    fn swa_pool_counts_and_low_usage_everywhere_is_room() {
        // DeepSeek-V4 with its SWA pool: full 0.02, swa 0.00
        let s = samples(&excerpt(
            "real-2/113-i36081-dsv4-dspark-v0.5.18-tp-ep-swa-accept-len-long-ctx.log",
            3..=4,
        ));
        let pools = pool_usage(&s);
        assert_eq!(
            pools.iter().map(|p| p.pool).collect::<Vec<_>>(),
            [PoolKind::Kv, PoolKind::Swa]
        );
        assert_eq!(
            pool_room(&s, &[]),
            PoolRoom::Room {
                fullest: 0.02,
                pool: PoolKind::Kv
            }
        );
        // the SWA pool alone at 0.85 takes the room away (boundary: 0.80 is tight)
        let tight = samples(&edit(
            &excerpt(
                "real-2/113-i36081-dsv4-dspark-v0.5.18-tp-ep-swa-accept-len-long-ctx.log",
                3..=4,
            ),
            "swa token usage: 0.00",
            "swa token usage: 0.80",
        ));
        assert!(matches!(
            pool_room(&tight, &[]),
            PoolRoom::Tight(PoolUsage {
                pool: PoolKind::Swa,
                ..
            })
        ));
    }

    #[test]
    fn full_pool_at_one_with_the_swa_pool_nearly_empty_is_tight_on_the_full_pool() {
        // full token usage 1.00, swa token usage 0.06
        let s = samples(&excerpt(
            "real/013-i26248-swa-retraction-collapse.log",
            2..=3,
        ));
        assert!(matches!(
            pool_room(&s, &[]),
            PoolRoom::Tight(PoolUsage {
                pool: PoolKind::Kv,
                p90: 1.0,
                ..
            })
        ));
    }

    #[test]
    fn usage_not_printed_is_unknown_never_room() {
        // the same real lines with every usage field cut (a terminal that truncated them)
        let text = excerpt(
            "real-2/113-i36081-dsv4-dspark-v0.5.18-tp-ep-swa-accept-len-long-ctx.log",
            3..=4,
        );
        let text = edit(&text, "full token usage: 0.02, ", "");
        let text = edit(&text, "swa token usage: 0.00, ", "");
        let s = samples(&text);
        assert_eq!(s.len(), 2);
        assert_eq!(pool_room(&s, &[]), PoolRoom::Unknown);
        assert!(!pool_room(&s, &[]).has_room());
        // a prefill line's token usage stands for the KV pool then (113 line 1: full 0.02)
        let ev = evidence(&excerpt(
            "real-2/113-i36081-dsv4-dspark-v0.5.18-tp-ep-swa-accept-len-long-ctx.log",
            1..=1,
        ));
        let prefill: Vec<PrefillSample> = ev
            .schedulers
            .values()
            .flat_map(|tl| tl.prefill.samples().iter().copied())
            .collect();
        assert_eq!(prefill.len(), 1);
        assert_eq!(
            pool_room(&s, &prefill),
            PoolRoom::Room {
                fullest: 0.02,
                pool: PoolKind::Kv
            }
        );
    }

    #[test]
    fn prefill_lines_of_a_hybrid_ssm_model_report_the_mamba_slots_too() {
        // real-3/015: prefill lines only, full token usage 0.14 -> 0.40, mamba usage 0.20 ->
        // 0.60 (lines 1-5): the mamba slots are the fuller pool; 0.60 is the time-weighted
        // 90th percentile (the last reading holds for a median interval, as each before it
        // holds until the next)
        let ev = evidence(&crate::rules::testing::whole(
            "real-3/015-pr30047-npu-mamba-prefill-queue97-pending-token.log",
        ));
        let prefill: Vec<PrefillSample> = ev
            .schedulers
            .values()
            .flat_map(|tl| tl.prefill.samples().iter().copied())
            .collect();
        assert_eq!(prefill.len(), 5);
        let PoolRoom::Room { fullest, pool } = pool_room(&[], &prefill) else {
            panic!("room")
        };
        assert!((fullest - 0.60).abs() < 1e-9, "{fullest}");
        assert_eq!(pool, PoolKind::Mamba);
        // at 0.80 mamba usage the slots are tight, whatever the KV pool says
        let tight = edit(
            &crate::rules::testing::whole(
                "real-3/015-pr30047-npu-mamba-prefill-queue97-pending-token.log",
            ),
            "mamba usage: 0.",
            "mamba usage: 0.9",
        );
        let ev = evidence(&tight);
        let prefill: Vec<PrefillSample> = ev
            .schedulers
            .values()
            .flat_map(|tl| tl.prefill.samples().iter().copied())
            .collect();
        assert!(matches!(
            pool_room(&[], &prefill),
            PoolRoom::Tight(PoolUsage {
                pool: PoolKind::Mamba,
                ..
            })
        ));
    }
}
