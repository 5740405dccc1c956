//! Cross-check of a live NVML snapshot against `nvidia-smi`, for `cargo xtask gpu-check`.

use serde::Serialize;

use crate::{GpuSnapshot, MIB};

/// Arguments for `nvidia-smi` whose stdout [`crate::parse_nvidia_smi`] reads as CSV with a
/// header and units. `memory.reserved` is left out on purpose: drivers before R520 reject it.
pub const NVIDIA_SMI_QUERY_ARGS: &[&str] = &[
    "--query-gpu=index,name,uuid,memory.total,memory.used,memory.free,driver_version",
    "--format=csv",
];

/// One disagreement between NVML and `nvidia-smi`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mismatch {
    /// GPU index, `None` for host-level fields (device count, driver version).
    pub index: Option<u32>,
    /// Field name, e.g. `memory_total_bytes`.
    pub field: &'static str,
    /// NVML's value, as text (bytes for memory).
    pub nvml: String,
    /// `nvidia-smi`'s value, as text (bytes for memory).
    pub smi: String,
}

/// Compare a live NVML snapshot with one parsed from `nvidia-smi` taken moments apart.
///
/// Rules: same device count and driver version; per index, same name and UUID (when both
/// have one); total within 1 MiB (nvidia-smi rounds each figure up to MiB), and reserved too
/// when both give it; free and used within `tolerance_bytes` (memory moves between the two
/// reads). Both sources' used leaves the driver's reserve out (see the crate docs), so used is
/// compared as it is: a probe that counted the reserve in would be 600 MiB apart on an H200.
/// Returns every mismatch; an empty list means the two agree. Pure: takes two snapshots, runs
/// nothing.
pub fn cross_check(nvml: &GpuSnapshot, smi: &GpuSnapshot, tolerance_bytes: u64) -> Vec<Mismatch> {
    let mut out = Vec::new();
    let mut push = |index, field, a: String, b: String| {
        out.push(Mismatch {
            index,
            field,
            nvml: a,
            smi: b,
        })
    };
    if nvml.devices.len() != smi.devices.len() {
        push(
            None,
            "device_count",
            nvml.devices.len().to_string(),
            smi.devices.len().to_string(),
        );
    }
    if let (Some(a), Some(b)) = (&nvml.driver_version, &smi.driver_version)
        && a != b
    {
        push(None, "driver_version", a.clone(), b.clone());
    }
    for d in &nvml.devices {
        let Some(s) = smi.device(d.index) else {
            push(Some(d.index), "present", "yes".into(), "no".into());
            continue;
        };
        if d.name != s.name {
            push(Some(d.index), "name", d.name.clone(), s.name.clone());
        }
        if let (Some(a), Some(b)) = (&d.uuid, &s.uuid)
            && a != b
        {
            push(Some(d.index), "uuid", a.clone(), b.clone());
        }
        if d.memory_reported != s.memory_reported {
            push(
                Some(d.index),
                "memory_reported",
                d.memory_reported.to_string(),
                s.memory_reported.to_string(),
            );
            continue;
        }
        if !d.memory_reported {
            continue;
        }
        if d.memory_total_bytes.abs_diff(s.memory_total_bytes) > MIB {
            push(
                Some(d.index),
                "memory_total_bytes",
                d.memory_total_bytes.to_string(),
                s.memory_total_bytes.to_string(),
            );
        }
        if d.memory_free_bytes.abs_diff(s.memory_free_bytes) > tolerance_bytes {
            push(
                Some(d.index),
                "memory_free_bytes",
                d.memory_free_bytes.to_string(),
                s.memory_free_bytes.to_string(),
            );
        }
        if d.memory_used_bytes.abs_diff(s.memory_used_bytes) > tolerance_bytes {
            push(
                Some(d.index),
                "memory_used_bytes",
                d.memory_used_bytes.to_string(),
                s.memory_used_bytes.to_string(),
            );
        }
        if let (Some(a), Some(b)) = (d.memory_reserved_bytes, s.memory_reserved_bytes)
            && a.abs_diff(b) > MIB
        {
            push(
                Some(d.index),
                "memory_reserved_bytes",
                a.to_string(),
                b.to_string(),
            );
        }
    }
    out
}
