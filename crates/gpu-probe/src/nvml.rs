//! Live snapshot through NVML (`nvml-wrapper`, library loaded at run time).

use std::sync::OnceLock;

use nvml_wrapper::Nvml;
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::NvmlError;

use crate::memory::{reserve_taken_out_note, used_apart_from_reserved};
use crate::{Architecture, GpuDevice, GpuError, GpuProcess, GpuSnapshot, SnapshotSource};

/// NVML, initialised once per process. A failed initialisation is remembered too: the driver
/// does not appear while we run, and retrying `dlopen` on every call would only repeat the error.
static NVML: OnceLock<Result<Nvml, String>> = OnceLock::new();

/// One-line reason for an NVML initialisation failure.
fn unavailable_reason(e: &NvmlError) -> String {
    let r = match e {
        NvmlError::LibloadingError(inner) => {
            format!("NVML library (libnvidia-ml.so.1) could not be loaded: {inner}")
        }
        NvmlError::FailedToLoadSymbol(sym) => {
            format!("NVML library is too old or incomplete: symbol {sym} missing")
        }
        NvmlError::DriverNotLoaded => "the NVIDIA kernel driver is not loaded".to_string(),
        NvmlError::LibraryNotFound => "NVML library not found".to_string(),
        NvmlError::NoPermission => "no permission to talk to the NVIDIA driver".to_string(),
        other => format!("NVML initialisation failed: {other}"),
    };
    one_line(&r)
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn nvml_reason(e: &NvmlError) -> String {
    one_line(&e.to_string())
}

/// Read every GPU on this machine through NVML: name, UUID, architecture, memory (v2 call:
/// total / used / free / reserved, bytes; used without the reserve), running compute and graphics processes, the driver
/// version and the CUDA version the driver supports.
///
/// NVML is loaded on the first call and kept for the process lifetime.
///
/// # Errors
/// - [`GpuError::GpuUnavailable`] when NVML cannot be used: library missing (`LibloadingError`),
///   symbol missing (`FailedToLoadSymbol`), driver not loaded, no permission, or zero GPUs.
/// - [`GpuError::Nvml`] when a GPU's name or memory query fails after NVML loaded (e.g. `GpuLost`).
///
/// Queries that are optional for a diagnosis (UUID, architecture, processes, process names, CUDA
/// version) do not fail the snapshot; a failure is written to [`GpuSnapshot::notes`].
pub fn probe() -> Result<GpuSnapshot, GpuError> {
    let nvml = match NVML.get_or_init(|| Nvml::init().map_err(|e| unavailable_reason(&e))) {
        Ok(n) => n,
        Err(reason) => {
            return Err(GpuError::GpuUnavailable {
                reason: reason.clone(),
            });
        }
    };
    let mut notes = Vec::new();
    let driver_version = match nvml.sys_driver_version() {
        Ok(v) => Some(v),
        Err(e) => {
            notes.push(format!("driver version: {}", nvml_reason(&e)));
            None
        }
    };
    let cuda_version = match nvml.sys_cuda_driver_version() {
        Ok(v) => Some(format!(
            "{}.{}",
            nvml_wrapper::cuda_driver_version_major(v),
            nvml_wrapper::cuda_driver_version_minor(v)
        )),
        Err(e) => {
            notes.push(format!("CUDA version: {}", nvml_reason(&e)));
            None
        }
    };
    let count = nvml.device_count().map_err(|e| GpuError::GpuUnavailable {
        reason: format!("NVML device count failed: {}", nvml_reason(&e)),
    })?;
    if count == 0 {
        return Err(GpuError::GpuUnavailable {
            reason: "NVML loaded but reports no GPU".to_string(),
        });
    }
    let mut devices = Vec::with_capacity(count as usize);
    for index in 0..count {
        let dev = nvml.device_by_index(index).map_err(|e| GpuError::Nvml {
            call: "nvmlDeviceGetHandleByIndex_v2",
            index,
            reason: nvml_reason(&e),
        })?;
        let name = dev.name().map_err(|e| GpuError::Nvml {
            call: "nvmlDeviceGetName",
            index,
            reason: nvml_reason(&e),
        })?;
        // Unified-memory parts (GB10) answer NotSupported: the GPU is kept, memory unknown.
        let mem = match dev.memory_info() {
            Ok(m) => Some(m),
            Err(nvml_wrapper::error::NvmlError::NotSupported) => {
                notes.push(format!(
                    "GPU {index}: memory not reported by NVML (NotSupported; unified memory?)"
                ));
                None
            }
            Err(e) => {
                return Err(GpuError::Nvml {
                    call: "nvmlDeviceGetMemoryInfo_v2",
                    index,
                    reason: nvml_reason(&e),
                });
            }
        };
        let uuid = match dev.uuid() {
            Ok(u) => Some(u),
            Err(e) => {
                notes.push(format!("GPU {index}: UUID: {}", nvml_reason(&e)));
                None
            }
        };
        let architecture = match dev.architecture() {
            Ok(a) => Architecture::from_nvml(a).or_else(|| Architecture::from_name(&name)),
            Err(e) => {
                notes.push(format!(
                    "GPU {index}: architecture from name ({})",
                    nvml_reason(&e)
                ));
                Architecture::from_name(&name)
            }
        };
        let mut processes: Vec<GpuProcess> = Vec::new();
        let lists = [
            ("compute", dev.running_compute_processes()),
            ("graphics", dev.running_graphics_processes()),
        ];
        for (kind, list) in lists {
            match list {
                Ok(ps) => {
                    for p in ps {
                        if processes.iter().any(|q| q.pid == p.pid) {
                            continue; // a C+G process is listed twice
                        }
                        let used_bytes = match p.used_gpu_memory {
                            UsedGpuMemory::Used(b) => Some(b),
                            UsedGpuMemory::Unavailable => None,
                        };
                        let name = nvml.sys_process_name(p.pid, 256).ok();
                        processes.push(GpuProcess {
                            pid: p.pid,
                            used_bytes,
                            name,
                        });
                    }
                }
                Err(e) => notes.push(format!(
                    "GPU {index}: {kind} process list: {}",
                    nvml_reason(&e)
                )),
            }
        }
        // v2's used leaves the reserve out (a real H200, driver 580); a driver that counts it
        // in, as the R525 documentation says v2 does, has it taken out: see crate::memory.
        let used = match &mem {
            Some(m) => {
                let (used, held) =
                    used_apart_from_reserved(m.total, m.used, m.free, Some(m.reserved));
                if held {
                    notes.push(reserve_taken_out_note(index, m.reserved));
                }
                used
            }
            None => 0,
        };
        devices.push(GpuDevice {
            index,
            name,
            uuid,
            architecture,
            memory_total_bytes: mem.as_ref().map_or(0, |m| m.total),
            memory_used_bytes: used,
            memory_free_bytes: mem.as_ref().map_or(0, |m| m.free),
            memory_reserved_bytes: mem.as_ref().map(|m| m.reserved),
            memory_reported: mem.is_some(),
            processes,
        });
    }
    Ok(GpuSnapshot {
        source: SnapshotSource::Nvml,
        driver_version,
        cuda_version,
        devices,
        notes,
    })
}
