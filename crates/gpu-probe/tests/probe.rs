//! NVML probe. Without a GPU (the default here) it must fail with one typed, one-line error.
//! With `THROUGHPUT_DOCTOR_GPU_TESTS=1` a GPU is required and its figures are checked.

use gpu_probe::{GpuError, MIB, probe};

#[test]
fn probe_is_unavailable_without_nvml_or_reports_devices() {
    let gpu_required = std::env::var("THROUGHPUT_DOCTOR_GPU_TESTS").as_deref() == Ok("1");
    match probe() {
        Err(GpuError::GpuUnavailable { reason }) => {
            assert!(
                !gpu_required,
                "GPU tests requested but NVML unavailable: {reason}"
            );
            assert!(!reason.is_empty());
            assert!(
                !reason.contains('\n'),
                "reason must be one line: {reason:?}"
            );
            // a second call answers the same from the cached load attempt
            match probe() {
                Err(GpuError::GpuUnavailable { reason: again }) => assert_eq!(again, reason),
                other => panic!("second probe differs: {other:?}"),
            }
        }
        Ok(s) => {
            // NVML loaded (a GPU host): it must have found at least one device with sane memory.
            assert!(!s.devices.is_empty());
            for d in &s.devices {
                if !d.memory_reported {
                    // unified memory (GB10): no figures, and none pretended
                    assert_eq!(d.memory_total(), None, "{d:?}");
                    continue;
                }
                assert!(d.memory_total_bytes > 0, "{d:?}");
                assert!(d.memory_free_bytes <= d.memory_total_bytes, "{d:?}");
                assert!(d.memory_used_bytes <= d.memory_total_bytes, "{d:?}");
                // NVML v2: total = reserved + used + free (to the byte on a real H200)
                if let Some(r) = d.memory_reserved_bytes {
                    let sum = r + d.memory_used_bytes + d.memory_free_bytes;
                    assert!(sum.abs_diff(d.memory_total_bytes) <= MIB, "{d:?}");
                }
            }
            assert!(s.driver_version.is_some());
        }
        Err(other) => panic!("unexpected error kind: {other}"),
    }
}
