//! The JSON spelling of the report's enums as `&'static str`, for code that needs the name
//! itself (a metric label, a count per verdict) without a round-trip through `serde_json`.
//!
//! Each name is written once beside its variant; the match is exhaustive, so a new variant
//! does not compile until it is named, and a test holds every name equal to serde's spelling.

use super::{Bottleneck, FindingKind};

/// `impl $ty { ALL, name }` from `Variant => "spelling"` pairs.
macro_rules! json_names {
    ($ty:ident { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $ty {
            /// Every variant, in the order of its declaration.
            pub const ALL: &'static [$ty] = &[$($ty::$variant),+];

            /// Its name as the JSON report spells it (`snake_case`).
            pub const fn name(self) -> &'static str {
                match self {
                    $($ty::$variant => $name),+
                }
            }
        }
    };
}

json_names!(Bottleneck {
    KvCacheBound => "kv_cache_bound",
    RunningCapBound => "running_cap_bound",
    PrefillBound => "prefill_bound",
    SchedulerConservative => "scheduler_conservative",
    AdmissionHeld => "admission_held",
    PdTransferBound => "pd_transfer_bound",
    ClientBound => "client_bound",
    Stall => "stall",
    DecodeComputeBound => "decode_compute_bound",
    PrefillComputeBound => "prefill_compute_bound",
    Inconclusive => "inconclusive",
    NoSchedulerLines => "no_scheduler_lines",
    OutOfMemory => "out_of_memory",
    SchedulerCrashed => "scheduler_crashed",
    StartupIncomplete => "startup_incomplete",
    StartupOnly => "startup_only",
    RequestsRejected => "requests_rejected",
    Drain => "drain",
    KvTransferFailed => "kv_transfer_failed",
});

json_names!(FindingKind {
    KvCacheBound => "kv_cache_bound",
    RunningCapBound => "running_cap_bound",
    PrefillBound => "prefill_bound",
    SchedulerConservative => "scheduler_conservative",
    PdTransferBound => "pd_transfer_bound",
    ClientBound => "client_bound",
    Stall => "stall",
    DecodeComputeBound => "decode_compute_bound",
    PrefillComputeBound => "prefill_compute_bound",
    Retraction => "retraction",
    WatchdogTimeout => "watchdog_timeout",
    KvTransferFailure => "kv_transfer_failure",
    MoeConfigUntuned => "moe_config_untuned",
    ServerStopped => "server_stopped",
    ChildFailed => "child_failed",
    HealthCheckFailed => "health_check_failed",
    HiCacheStorage => "hi_cache_storage",
    SlowSchedulerPass => "slow_scheduler_pass",
    PrefixReuse => "prefix_reuse",
    IdleWindowArtifact => "idle_window_artifact",
    NoCudaGraph => "no_cuda_graph",
    RampOnly => "ramp_only",
    EndsUnderLoad => "ends_under_load",
    Drain => "drain",
    DpImbalance => "dp_imbalance",
    TinyKvPool => "tiny_kv_pool",
    ClientGap => "client_gap",
    PrefillInterference => "prefill_interference",
    LittlesLaw => "littles_law",
    SampleAdequacy => "sample_adequacy",
    CapacityWhatIf => "capacity_what_if",
    HiCache => "hi_cache",
    BenchmarkFailures => "benchmark_failures",
    BenchmarkQueueing => "benchmark_queueing",
    BenchmarkConcurrencyLimit => "benchmark_concurrency_limit",
    HeldAdmission => "held_admission",
    SpeculativeDecoding => "speculative_decoding",
    OutOfMemory => "out_of_memory",
    SchedulerException => "scheduler_exception",
    StartupIncomplete => "startup_incomplete",
    CudaGraphCoverage => "cuda_graph_coverage",
    BenchmarkNotStreamed => "benchmark_not_streamed",
    BenchmarkPeakAboveCap => "benchmark_peak_above_cap",
    BenchmarkPeakAboveLimit => "benchmark_peak_above_limit",
    BenchmarkPeakBelowMean => "benchmark_peak_below_mean",
    BenchmarkStalledStream => "benchmark_stalled_stream",
    BenchmarkVisionInput => "benchmark_vision_input",
    BenchmarkShortBurst => "benchmark_short_burst",
    BenchmarkTokensDisagree => "benchmark_tokens_disagree",
    RequestsRejected => "requests_rejected",
});

#[cfg(test)]
mod tests {
    use super::*;

    fn serde_name<T: serde::Serialize>(v: T) -> String {
        serde_json::to_value(v)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    }

    #[test]
    fn every_bottleneck_name_is_its_json_spelling() {
        assert_eq!(Bottleneck::ALL.len(), 19);
        for &b in Bottleneck::ALL {
            assert_eq!(b.name(), serde_name(b), "{b:?}");
        }
    }

    #[test]
    fn every_finding_kind_name_is_its_json_spelling() {
        assert_eq!(FindingKind::ALL.len(), 50);
        for &k in FindingKind::ALL {
            assert_eq!(k.name(), serde_name(k), "{k:?}");
        }
    }

    #[test]
    fn names_are_distinct() {
        let mut b: Vec<&str> = Bottleneck::ALL.iter().map(|b| b.name()).collect();
        b.sort_unstable();
        b.dedup();
        assert_eq!(b.len(), Bottleneck::ALL.len());
        let mut k: Vec<&str> = FindingKind::ALL.iter().map(|k| k.name()).collect();
        k.sort_unstable();
        k.dedup();
        assert_eq!(k.len(), FindingKind::ALL.len());
    }
}
