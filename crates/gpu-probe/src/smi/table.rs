//! The plain `nvidia-smi` table reader.

use super::{not_available, parse_mem, perr, unknown_memory_device, unknown_memory_note};
use crate::{Architecture, GpuDevice, GpuError, GpuProcess, GpuSnapshot, MIB, SnapshotSource};

/// The value printed after `label` on a header line, up to the next whitespace or `|`.
fn value_after<'a>(line: &'a str, label: &str) -> Option<&'a str> {
    let i = line.find(label)?;
    let rest = line[i + label.len()..].trim_start();
    let end = rest
        .find(|c: char| c.is_whitespace() || c == '|')
        .unwrap_or(rest.len());
    let v = &rest[..end];
    (!v.is_empty()).then_some(v)
}

fn cells(line: &str) -> Vec<&str> {
    let t = line.trim();
    let t = t.strip_prefix('|').unwrap_or(t);
    let t = t.strip_suffix('|').unwrap_or(t);
    t.split('|').map(str::trim).collect()
}

#[derive(PartialEq)]
enum TableSection {
    Before,
    Gpus,
    Mig,
    Processes,
}

pub(super) fn parse_table(lines: &[(usize, &str)], path: &str) -> Result<GpuSnapshot, GpuError> {
    let mut notes = Vec::new();
    let mut driver_version = None;
    let mut cuda_version = None;
    let mut devices: Vec<GpuDevice> = Vec::new();
    // (line of the GPU row, index, name) waiting for its memory line
    let mut pending: Option<(usize, u32, String)> = None;
    let mut section = TableSection::Before;
    let mut header_seen = false;
    for &(n, line) in lines {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if !t.starts_with('|') && !t.starts_with('+') {
            if section == TableSection::Before && !header_seen {
                notes.push(format!("line {n} skipped (before the table): {t}"));
            } else {
                notes.push(format!("line {n} skipped (outside the table): {t}"));
            }
            continue;
        }
        if t.contains("NVIDIA-SMI") {
            header_seen = true;
            driver_version = value_after(t, "Driver Version:")
                .or_else(|| value_after(t, "KMD Version:"))
                .filter(|v| !not_available(v))
                .map(str::to_string);
            cuda_version = value_after(t, "CUDA UMD Version:")
                .or_else(|| value_after(t, "CUDA Version:"))
                .filter(|v| !not_available(v))
                .map(str::to_string);
            continue;
        }
        if t.contains("MIG devices:") {
            section = TableSection::Mig;
            continue;
        }
        if t.contains("Processes:") {
            section = TableSection::Processes;
            continue;
        }
        if t.starts_with("|=") {
            if section == TableSection::Before {
                section = TableSection::Gpus;
            }
            continue;
        }
        if t.starts_with('+') {
            continue;
        }
        match section {
            TableSection::Before | TableSection::Mig => {}
            TableSection::Gpus => {
                let c = cells(t);
                let first: Vec<&str> = c[0].split_whitespace().collect();
                let is_gpu_row = first.len() >= 2 && first[0].parse::<u32>().is_ok();
                if is_gpu_row {
                    if let Some((row, idx, _)) = &pending {
                        return Err(perr(
                            path,
                            *row,
                            format!(
                                "GPU {idx}: no memory line (\"used MiB / total MiB\") follows this row"
                            ),
                        ));
                    }
                    let index: u32 = first[0].parse().unwrap_or(0); // ok: checked by is_gpu_row
                    let mut words = &first[1..];
                    if let Some(last) = words.last()
                        && (*last == "On" || *last == "Off")
                        && words.len() > 1
                    {
                        words = &words[..words.len() - 1];
                    }
                    pending = Some((n, index, words.join(" ")));
                    continue;
                }
                let memory_not_reported = c.get(1).is_some_and(|m| {
                    let m = m.trim();
                    m.eq_ignore_ascii_case("Not Supported")
                        || m.eq_ignore_ascii_case("N/A")
                        || m.starts_with("[N/A]")
                });
                if memory_not_reported && pending.is_some() {
                    // Unified memory (GB10): the memory cell says `Not Supported`.
                    if let Some((_, index, name)) = pending.take() {
                        notes.push(unknown_memory_note(index, &name, n));
                        devices.push(unknown_memory_device(index, name, None));
                    }
                    continue;
                }
                if let Some(mem_cell) = c
                    .get(1)
                    .filter(|m| m.contains("MiB /") || m.contains("MiB/"))
                {
                    let Some((_, index, name)) = pending.take() else {
                        return Err(perr(path, n, "memory figures without a GPU row above them"));
                    };
                    let (u, tot) = mem_cell
                        .split_once('/')
                        .ok_or_else(|| perr(path, n, "memory cell without '/'"))?;
                    let used = parse_mem(u, MIB)
                        .map_err(|m| perr(path, n, m))?
                        .ok_or_else(|| perr(path, n, "used memory is N/A"))?;
                    let total = parse_mem(tot, MIB)
                        .map_err(|m| perr(path, n, m))?
                        .ok_or_else(|| perr(path, n, "total memory is N/A"))?;
                    devices.push(GpuDevice {
                        index,
                        architecture: Architecture::from_name(&name),
                        name,
                        uuid: None,
                        memory_total_bytes: total,
                        memory_used_bytes: used,
                        memory_free_bytes: total.saturating_sub(used),
                        memory_reserved_bytes: None,
                        memory_reported: true,
                        processes: Vec::new(),
                    });
                }
            }
            TableSection::Processes => {
                let c = cells(t);
                let toks: Vec<&str> = c.iter().flat_map(|x| x.split_whitespace()).collect();
                if toks.is_empty() || toks[0].parse::<u32>().is_err() {
                    continue; // column headings, "No running processes found"
                }
                let Some(p) = process_row(&toks) else {
                    notes.push(format!(
                        "line {n} skipped (process row not understood): {t}"
                    ));
                    continue;
                };
                let gpu: u32 = toks[0].parse().unwrap_or(0); // ok: checked above
                match devices.iter_mut().find(|d| d.index == gpu) {
                    Some(d) => d.processes.push(p),
                    None => notes.push(format!(
                        "line {n}: process on GPU {gpu}, which the table does not list"
                    )),
                }
            }
        }
    }
    if let Some((row, idx, _)) = pending {
        return Err(perr(
            path,
            row,
            format!("GPU {idx}: no memory line (\"used MiB / total MiB\") follows this row"),
        ));
    }
    if devices.iter().any(|d| d.memory_reported) {
        notes.push(
            "free memory derived as total - used: the table prints neither free nor the driver's \
             reserve, so free is overstated by that reserve (616 MiB on an H200); \
             nvidia-smi --query-gpu=index,name,memory.total,memory.used,memory.free --format=csv \
             or nvidia-smi -q gives the real figure"
                .into(),
        );
    }
    Ok(GpuSnapshot {
        source: SnapshotSource::NvidiaSmiTable {
            path: path.to_string(),
        },
        driver_version,
        cuda_version,
        devices,
        notes,
    })
}

/// `GPU [GI CI] PID Type name… memory` → process. The type is C, G, M or a `+` combination.
fn process_row(toks: &[&str]) -> Option<GpuProcess> {
    let is_type = |s: &str| !s.is_empty() && s.chars().all(|c| matches!(c, 'C' | 'G' | 'M' | '+'));
    let ti = (2..toks.len()).find(|&i| is_type(toks[i]) && toks[i - 1].parse::<u32>().is_ok())?;
    let pid = toks[ti - 1].parse().ok()?;
    let last = *toks.last()?;
    let (name_toks, used_bytes) = match parse_mem(last, MIB) {
        Ok(v) if last.ends_with("MiB") || last == "N/A" => (&toks[ti + 1..toks.len() - 1], v),
        _ => (&toks[ti + 1..], None),
    };
    let name = (!name_toks.is_empty()).then(|| name_toks.join(" "));
    Some(GpuProcess {
        pid,
        used_bytes,
        name,
    })
}
