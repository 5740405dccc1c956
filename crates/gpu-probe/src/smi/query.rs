//! `nvidia-smi -q` ("NVSMI LOG") reader.

use super::{kv, not_available, parse_mem, perr, unknown_memory_device, unknown_memory_note};
use crate::memory::{reserve_taken_out_note, used_apart_from_reserved};
use crate::{Architecture, GpuDevice, GpuError, GpuProcess, GpuSnapshot, MIB, SnapshotSource};

#[derive(Default)]
struct QueryGpu {
    line: usize,
    name: Option<String>,
    /// `Product Architecture` (e.g. `Hopper`), printed by drivers since R510.
    family: Option<String>,
    uuid: Option<String>,
    total: Option<u64>,
    used: Option<u64>,
    free: Option<u64>,
    reserved: Option<u64>,
    fb_seen: bool,
    processes: Vec<GpuProcess>,
}

pub(super) fn parse_query(lines: &[(usize, &str)], path: &str) -> Result<GpuSnapshot, GpuError> {
    let mut notes = Vec::new();
    let mut driver_version = None;
    let mut cuda_version = None;
    let mut attached: Option<u32> = None;
    let mut gpus: Vec<QueryGpu> = Vec::new();
    // (indent, header) of the sections enclosing the current line
    let mut stack: Vec<(usize, String)> = Vec::new();
    for &(n, line) in lines {
        if line.trim().is_empty() || line.contains("NVSMI LOG") {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        while stack.last().is_some_and(|(i, _)| *i >= indent) {
            stack.pop();
        }
        let Some((key, value)) = kv(line) else {
            let header = line.trim();
            if indent == 0 && header.starts_with("GPU ") {
                gpus.push(QueryGpu {
                    line: n,
                    ..Default::default()
                });
            }
            stack.push((indent, header.to_string()));
            continue;
        };
        let in_section = |name: &str| stack.iter().any(|(_, h)| h == name);
        if gpus.is_empty() {
            match key {
                "Driver Version" | "KMD Version" => {
                    driver_version = Some(value.to_string()).filter(|v| !not_available(v))
                }
                "CUDA Version" | "CUDA UMD Version" => {
                    cuda_version = Some(value.to_string()).filter(|v| !not_available(v))
                }
                "Attached GPUs" => attached = value.parse().ok(),
                _ => {}
            }
            continue;
        }
        let Some(g) = gpus.last_mut() else { continue };
        if in_section("FB Memory Usage") {
            g.fb_seen = true;
            let v = parse_mem(value, MIB).map_err(|m| perr(path, n, format!("{key}: {m}")))?;
            match key {
                "Total" => g.total = v,
                "Used" => g.used = v,
                "Free" => g.free = v,
                "Reserved" => g.reserved = v,
                _ => {}
            }
        } else if in_section("Processes") {
            match key {
                "Process ID" => match value.parse::<u32>() {
                    Ok(pid) => g.processes.push(GpuProcess {
                        pid,
                        used_bytes: None,
                        name: None,
                    }),
                    Err(_) => notes.push(format!("line {n}: process id {value:?} not a number")),
                },
                "Name" | "Process Name" => {
                    if let Some(p) = g.processes.last_mut() {
                        p.name = Some(value.to_string());
                    }
                }
                "Used GPU Memory" => {
                    if let Some(p) = g.processes.last_mut() {
                        p.used_bytes = parse_mem(value, MIB).map_err(|m| perr(path, n, m))?;
                    }
                }
                _ => {}
            }
        } else if stack.len() == 1 {
            match key {
                "Product Name" => g.name = Some(value.to_string()),
                "Product Architecture" => g.family = Some(value.to_string()),
                "GPU UUID" => g.uuid = Some(value.to_string()),
                _ => {}
            }
        }
    }
    if !gpus.iter().any(|g| g.fb_seen) {
        return Err(GpuError::NoMemoryFigures {
            path: path.to_string(),
            line: gpus.first().map_or(1, |g| g.line),
            gpus_listed: gpus.len(),
            attached_gpus: attached,
            driver_version,
        });
    }
    if let Some(a) = attached
        && a as usize != gpus.len()
    {
        notes.push(format!(
            "Attached GPUs says {a}, the file holds {} GPU block(s)",
            gpus.len()
        ));
    }
    let mut devices = Vec::with_capacity(gpus.len());
    for (i, g) in gpus.into_iter().enumerate() {
        let name = g.name.clone().unwrap_or_default();
        if g.fb_seen && g.total.is_none() && g.used.is_none() && g.free.is_none() {
            // Unified memory (GB10): FB Memory Usage says N/A throughout.
            notes.push(unknown_memory_note(i as u32, &name, g.line));
            devices.push(unknown_memory_device(i as u32, name, g.uuid));
            continue;
        }
        let total = g
            .total
            .ok_or_else(|| perr(path, g.line, "this GPU has no FB Memory Usage Total"))?;
        let (used, free) = match (g.used, g.free) {
            (Some(u), Some(f)) => (u, f),
            (Some(u), None) => (u, total.saturating_sub(u + g.reserved.unwrap_or(0))),
            (None, Some(f)) => (total.saturating_sub(f + g.reserved.unwrap_or(0)), f),
            (None, None) => {
                return Err(perr(
                    path,
                    g.line,
                    "this GPU has neither FB Used nor FB Free",
                ));
            }
        };
        let name = g.name.unwrap_or_default();
        if name.is_empty() {
            notes.push(format!(
                "GPU {i}: no Product Name in the file (name left empty)"
            ));
        }
        let (used, held_reserve) = used_apart_from_reserved(total, used, free, g.reserved);
        if held_reserve {
            notes.push(reserve_taken_out_note(i as u32, g.reserved.unwrap_or(0)));
        }
        devices.push(GpuDevice {
            index: i as u32,
            architecture: g
                .family
                .as_deref()
                .and_then(Architecture::from_name)
                .or_else(|| Architecture::from_name(&name)),
            name,
            uuid: g.uuid,
            memory_total_bytes: total,
            memory_used_bytes: used,
            memory_free_bytes: free,
            memory_reserved_bytes: g.reserved,
            memory_reported: true,
            processes: g.processes,
        });
    }
    Ok(GpuSnapshot {
        source: SnapshotSource::NvidiaSmiQuery {
            path: path.to_string(),
        },
        driver_version,
        cuda_version,
        devices,
        notes,
    })
}
