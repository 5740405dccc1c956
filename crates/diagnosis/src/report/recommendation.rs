//! Recommendations: what to change, as typed kinds.

use schemars::JsonSchema;
use serde::Serialize;

use super::{FindingKind, Lever};

/// What a [`Recommendation`] changes.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RecommendationKind {
    /// Apply a what-if row's change (`mem_fraction_static`, `kv_cache_dtype`, `tp_size`).
    Apply {
        /// The change.
        change: kv_capacity::Change,
    },
    /// Do not raise `mem_fraction_static` to this fraction or beyond: it would not fit.
    DoNotRaiseFraction {
        /// The first fraction that would not fit.
        to: f64,
    },
    /// HiCache would not raise decode concurrency.
    HiCacheNoGain,
    /// Give the KV cache more slots (no what-if table to size the change).
    MoreKvSlots,
    /// Raise `--schedule-conservativeness` (fewer retractions).
    RaiseConservativeness,
    /// Lower `--schedule-conservativeness` (admit more while the pool has room).
    LowerConservativeness,
    /// Raise `--max-running-requests`.
    RaiseMaxRunningRequests,
    /// Send more requests at once from the client.
    RaiseClientConcurrency,
    /// A PD decode node runs what the prefill side hands over: look there (and at the handoff).
    CheckPrefillSide,
    /// Judge progress by the windowed rate, not the lifetime average.
    UseWindowedRate,
    /// Try `--enable-dp-attention`: an MLA model's latent KV is held whole by every TP rank.
    DpAttention,
    /// Change a setting that a finding names and no recommendation above covers.
    Change {
        /// The setting.
        lever: Lever,
        /// The finding that names it.
        finding: FindingKind,
    },
}

impl RecommendationKind {
    /// The settings this recommendation is about (empty for advice that changes none).
    pub fn levers(&self) -> Vec<Lever> {
        match *self {
            RecommendationKind::Apply { change } => match change {
                kv_capacity::Change::Fraction { .. } => vec![Lever::MemFractionStatic],
                kv_capacity::Change::KvDtype { .. } => vec![Lever::KvCacheDtype],
                kv_capacity::Change::TpSize { .. } | kv_capacity::Change::Current => Vec::new(),
            },
            RecommendationKind::DoNotRaiseFraction { .. } => vec![Lever::MemFractionStatic],
            RecommendationKind::MoreKvSlots => {
                vec![
                    Lever::MemFractionStatic,
                    Lever::KvCacheDtype,
                    Lever::MaxTokens,
                ]
            }
            // capping max_tokens cuts outputs: its own recommendation, with that risk
            RecommendationKind::RaiseConservativeness => vec![Lever::ScheduleConservativeness],
            RecommendationKind::LowerConservativeness => {
                vec![Lever::ScheduleConservativeness, Lever::MaxTokens]
            }
            // its words raise the cap together with the client's concurrency
            RecommendationKind::RaiseMaxRunningRequests => {
                vec![Lever::MaxRunningRequests, Lever::ClientConcurrency]
            }
            RecommendationKind::RaiseClientConcurrency => vec![Lever::ClientConcurrency],
            // its words raise both prefill budgets together
            RecommendationKind::Change {
                lever: Lever::ChunkedPrefillSize,
                finding: FindingKind::PrefillBound,
            } => vec![Lever::ChunkedPrefillSize, Lever::MaxPrefillTokens],
            RecommendationKind::Change { lever, .. } => vec![lever],
            RecommendationKind::HiCacheNoGain
            | RecommendationKind::DpAttention
            | RecommendationKind::UseWindowedRate
            | RecommendationKind::CheckPrefillSide => Vec::new(),
        }
    }
}

/// One concrete change.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Recommendation {
    /// What it changes, as data.
    pub kind: RecommendationKind,
    /// What to do.
    pub action: String,
    /// Expected gain, in words with numbers.
    pub expected_gain: String,
    /// Expected gain in percent of throughput, for ordering (`null` when none is expected).
    pub gain_pct: Option<f64>,
    /// Risk.
    pub risk: String,
}
