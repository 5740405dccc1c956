//! `nvidia-smi --query-gpu=... --format=csv` reader.

use super::{parse_mem, perr, unknown_memory_device, unknown_memory_note};
use crate::memory::{reserve_taken_out_note, used_apart_from_reserved};
use crate::{Architecture, GIB, GpuDevice, GpuError, GpuSnapshot, MIB, SnapshotSource};

const DEFAULT_CSV_COLUMNS: [&str; 6] = [
    "index",
    "name",
    "memory.total",
    "memory.used",
    "memory.free",
    "driver_version",
];

const KNOWN_CSV_COLUMNS: [&str; 8] = [
    "index",
    "name",
    "uuid",
    "memory.total",
    "memory.used",
    "memory.free",
    "memory.reserved",
    "driver_version",
];

/// `memory.total [MiB]` → (`memory.total`, MiB). Query aliases are mapped to the printed names.
fn header_column(field: &str) -> (String, Option<u64>) {
    let (name, unit) = match field.find('[') {
        Some(i) => (field[..i].trim(), Some(field[i..].trim())),
        None => (field.trim(), None),
    };
    let name = name.to_ascii_lowercase();
    let name = match name.as_str() {
        "gpu_name" => "name".to_string(),
        "gpu_uuid" => "uuid".to_string(),
        _ => name,
    };
    let unit = match unit {
        Some("[MiB]") => Some(MIB),
        Some("[GiB]") => Some(GIB),
        Some("[KiB]") => Some(1024),
        _ => None,
    };
    (name, unit)
}

pub(super) fn parse_csv(lines: &[(usize, &str)], path: &str) -> Result<GpuSnapshot, GpuError> {
    let mut notes = Vec::new();
    let mut columns: Option<Vec<(String, Option<u64>)>> = None;
    let mut devices = Vec::new();
    let mut drivers: Vec<String> = Vec::new();
    for &(n, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        let is_command =
            columns.is_none() && (line.contains("nvidia-smi") || line.contains("--query-gpu"));
        if !line.contains(',') || is_command {
            notes.push(format!("line {n} skipped (not a CSV row): {}", line.trim()));
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let cols = match &columns {
            Some(c) => c,
            None => {
                let first_is_number = fields[0].parse::<u32>().is_ok();
                let parsed: Vec<(String, Option<u64>)> =
                    fields.iter().map(|f| header_column(f)).collect();
                let looks_like_header = !first_is_number
                    && parsed
                        .iter()
                        .any(|(k, _)| KNOWN_CSV_COLUMNS.contains(&k.as_str()));
                if looks_like_header {
                    for (k, _) in &parsed {
                        if !KNOWN_CSV_COLUMNS.contains(&k.as_str()) {
                            notes.push(format!("line {n}: column {k:?} ignored"));
                        }
                    }
                    if !parsed.iter().any(|(k, _)| k == "memory.total") {
                        return Err(perr(path, n, "CSV header has no memory.total column"));
                    }
                    if !parsed
                        .iter()
                        .any(|(k, _)| k == "memory.used" || k == "memory.free")
                    {
                        return Err(perr(
                            path,
                            n,
                            "CSV header has neither memory.used nor memory.free",
                        ));
                    }
                    columns = Some(parsed);
                    continue;
                }
                if fields.len() < 4 || fields.len() > DEFAULT_CSV_COLUMNS.len() {
                    return Err(perr(
                        path,
                        n,
                        format!(
                            "CSV without a header has {} fields; expected 4 to 6 in the order {}",
                            fields.len(),
                            DEFAULT_CSV_COLUMNS.join(",")
                        ),
                    ));
                }
                notes.push(format!(
                    "no CSV header: assumed column order {}",
                    DEFAULT_CSV_COLUMNS[..fields.len()].join(",")
                ));
                &*columns.insert(
                    DEFAULT_CSV_COLUMNS[..fields.len()]
                        .iter()
                        .map(|k| (k.to_string(), None))
                        .collect(),
                )
            }
        };
        if fields.len() != cols.len() {
            return Err(perr(
                path,
                n,
                format!(
                    "{} fields where the header has {} columns",
                    fields.len(),
                    cols.len()
                ),
            ));
        }
        let get = |key: &str| {
            cols.iter()
                .position(|(k, _)| k == key)
                .map(|i| (fields[i], cols[i].1.unwrap_or(MIB)))
        };
        let mem = |key: &str| -> Result<Option<u64>, GpuError> {
            match get(key) {
                Some((v, unit)) => {
                    parse_mem(v, unit).map_err(|m| perr(path, n, format!("{key}: {m}")))
                }
                None => Ok(None),
            }
        };
        let index = match get("index") {
            Some((v, _)) => v
                .parse::<u32>()
                .map_err(|_| perr(path, n, format!("index: not a GPU index: {v:?}")))?,
            None => devices.len() as u32,
        };
        let name = get("name").map(|(v, _)| v.to_string()).unwrap_or_default();
        let uuid = get("uuid")
            .map(|(v, _)| v.to_string())
            .filter(|v| !v.is_empty() && !v.starts_with('['));
        let total = mem("memory.total")?;
        let used = mem("memory.used")?;
        let free = mem("memory.free")?;
        let reserved = mem("memory.reserved")?;
        if let Some((v, _)) = get("driver_version")
            && !v.is_empty()
            && !v.starts_with('[')
            && !drivers.iter().any(|d| d == v)
        {
            drivers.push(v.to_string());
        }
        let Some(total) = total else {
            // Unified memory (GB10): `[N/A]` for every memory figure. The GPU is there.
            notes.push(unknown_memory_note(index, &name, n));
            devices.push(unknown_memory_device(index, name, uuid));
            continue;
        };
        let (used, free) = match (used, free) {
            (Some(u), Some(f)) => (u, f),
            (Some(u), None) => {
                notes.push(format!("GPU {index}: free memory derived as total - used"));
                (u, total.saturating_sub(u))
            }
            (None, Some(f)) => {
                notes.push(format!("GPU {index}: used memory derived as total - free"));
                (total.saturating_sub(f), f)
            }
            (None, None) => {
                return Err(perr(
                    path,
                    n,
                    "neither memory.used nor memory.free is available",
                ));
            }
        };
        let (used, held_reserve) = used_apart_from_reserved(total, used, free, reserved);
        if held_reserve {
            notes.push(reserve_taken_out_note(index, reserved.unwrap_or(0)));
        }
        devices.push(GpuDevice {
            index,
            architecture: Architecture::from_name(&name),
            name,
            uuid,
            memory_total_bytes: total,
            memory_used_bytes: used,
            memory_free_bytes: free,
            memory_reserved_bytes: reserved,
            memory_reported: true,
            processes: Vec::new(),
        });
    }
    if drivers.len() > 1 {
        notes.push(format!(
            "GPUs report different drivers: {}",
            drivers.join(", ")
        ));
    }
    Ok(GpuSnapshot {
        source: SnapshotSource::NvidiaSmiCsv {
            path: path.to_string(),
        },
        driver_version: drivers.into_iter().next(),
        cuda_version: None,
        devices,
        notes,
    })
}
