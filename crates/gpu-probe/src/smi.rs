//! Readers for `nvidia-smi` text: `--query-gpu` CSV, the plain table, and `-q`.

use std::path::Path;

use crate::{
    Architecture, GIB, GpuDevice, GpuError, GpuProcess, GpuSnapshot, MAX_GPU_MEMORY_BYTES, MIB,
    SnapshotSource,
};

/// Read a file holding `nvidia-smi` output and parse it with [`parse_nvidia_smi`].
///
/// # Errors
/// [`GpuError::Io`] when the file cannot be read (or is not UTF-8); otherwise the errors of
/// [`parse_nvidia_smi`].
pub fn read_snapshot_file(path: &Path) -> Result<GpuSnapshot, GpuError> {
    let label = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| GpuError::Io {
        path: label.clone(),
        source,
    })?;
    parse_nvidia_smi(&text, &label)
}

/// Parse `nvidia-smi` output copied off a GPU host; `path` labels errors and the snapshot source.
///
/// The format is detected from the text:
/// - **`-q`** (key/value, "NVSMI LOG"): when it has an `NVSMI LOG` banner or `Attached GPUs` /
///   `Product Name` keys. Memory comes from each GPU's `FB Memory Usage` section (`Total`,
///   `Reserved`, `Used`, `Free`; MiB). GPU indices are the block order. **Decision:** a `-q`
///   file with no `FB Memory Usage` at all (e.g. `-q -d PERFORMANCE`) is an error,
///   [`GpuError::NoMemoryFigures`], naming the GPUs and driver it did see: a snapshot without
///   memory figures would be useless to the capacity model, and making every memory field
///   optional would push that check onto every caller.
/// - **table** (plain `nvidia-smi`): a line starting with `|` that holds `NVIDIA-SMI` or
///   `MiB /`. Handles a leading date line or none, a bare command line before it, the
///   driver-610 header (`KMD Version` / `CUDA UMD Version` instead of `Driver Version` /
///   `CUDA Version`), truncated names, the `MIG devices` section (skipped), and a `Processes`
///   section with or without rows. The table prints used/total only: free is derived as
///   total − used (noted in [`GpuSnapshot::notes`]), reserved is `None`.
/// - **CSV** (`--query-gpu=index,name,memory.total,memory.used,memory.free[,driver_version]
///   --format=csv`): headers in any column order, values with units (`97887 MiB`) or without
///   (`nounits`; the unit then comes from the header's `[MiB]`, or MiB by default). Without a
///   header (`noheader`) the column order above is assumed and noted. Known extra columns:
///   `uuid`, `memory.reserved`, `driver_version`; unknown ones are ignored (noted).
///
/// Lines before the data that are not part of it (the shell command, a prompt) are skipped and
/// noted with their numbers; nothing is dropped silently.
///
/// # Errors
/// [`GpuError::Parse`] with the 1-based line for a row that does not parse (wrong field count,
/// a non-numeric memory figure, a table GPU row without its memory line);
/// [`GpuError::NoMemoryFigures`] as above; [`GpuError::UnknownFormat`] when no format matches
/// or no GPU is found.
pub fn parse_nvidia_smi(text: &str, path: &str) -> Result<GpuSnapshot, GpuError> {
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim_end_matches('\r')))
        .collect();
    let snap = if is_query(&lines) {
        parse_query(&lines, path)?
    } else if is_table(&lines) {
        let t = parse_table(&lines, path)?;
        // A paste of the CSV query followed by a table header without rows (as forum posts
        // hold): the CSV rows outside the table are the data.
        let outside: Vec<(usize, &str)> = lines
            .iter()
            .copied()
            .filter(|(_, l)| !l.trim_start().starts_with(['|', '+']))
            .collect();
        if t.devices.is_empty() && outside.iter().any(|(_, l)| l.contains(',')) {
            let mut c = parse_csv(&outside, path)?;
            c.driver_version = c.driver_version.or(t.driver_version);
            c.cuda_version = c.cuda_version.or(t.cuda_version);
            c.notes.push(
                "the nvidia-smi table in this file lists no GPU; the --query-gpu CSV rows before it were read".into(),
            );
            c
        } else {
            t
        }
    } else if lines.iter().any(|(_, l)| l.contains(',')) {
        parse_csv(&lines, path)?
    } else {
        return Err(GpuError::UnknownFormat {
            path: path.to_string(),
            message: "not nvidia-smi output: expected --query-gpu CSV, the nvidia-smi table, or nvidia-smi -q".into(),
        });
    };
    if snap.devices.is_empty() {
        return Err(GpuError::UnknownFormat {
            path: path.to_string(),
            message: "no GPU found in the nvidia-smi output".into(),
        });
    }
    Ok(snap)
}

fn is_query(lines: &[(usize, &str)]) -> bool {
    lines.iter().any(|(_, l)| {
        l.contains("NVSMI LOG")
            || kv(l).is_some_and(|(k, _)| k == "Attached GPUs" || k == "Product Name")
    })
}

fn is_table(lines: &[(usize, &str)]) -> bool {
    lines.iter().any(|(_, l)| {
        let t = l.trim_start();
        t.starts_with('|') && (t.contains("NVIDIA-SMI") || t.contains("MiB /"))
    })
}

fn perr(path: &str, line: usize, message: impl Into<String>) -> GpuError {
    GpuError::Parse {
        path: path.to_string(),
        line,
        message: message.into(),
    }
}

/// A memory figure such as `97887 MiB`, `97887` (unit from `default_unit`), `[N/A]`,
/// `Not Supported`. Returns bytes, `Ok(None)` for "not available" markers; a figure above
/// [`MAX_GPU_MEMORY_BYTES`] is an error.
fn parse_mem(s: &str, default_unit: u64) -> Result<Option<u64>, String> {
    let s = s.trim();
    if s.is_empty()
        || s.starts_with('[')
        || s.eq_ignore_ascii_case("N/A")
        || s.eq_ignore_ascii_case("Not Supported")
    {
        return Ok(None);
    }
    let absurd = || format!("memory figure {s:?} is more than 1 PiB: not a GPU's memory");
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = (&s[..split], s[split..].trim());
    if num.is_empty() {
        return Err(format!("not a memory figure: {s:?}"));
    }
    let unit_bytes = match unit {
        "" => default_unit,
        "MiB" => MIB,
        "GiB" => GIB,
        "KiB" => 1024,
        "B" | "bytes" => 1,
        other => return Err(format!("unknown memory unit {other:?} in {s:?}")),
    };
    if let Ok(n) = num.parse::<u64>() {
        return match n.checked_mul(unit_bytes) {
            Some(b) if b <= MAX_GPU_MEMORY_BYTES => Ok(Some(b)),
            _ => Err(absurd()),
        };
    }
    match num.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => {
            let b = x * unit_bytes as f64;
            if b > MAX_GPU_MEMORY_BYTES as f64 {
                return Err(absurd());
            }
            Ok(Some(b.round() as u64))
        }
        Ok(x) if x.is_infinite() => Err(absurd()),
        _ => Err(format!("not a memory figure: {s:?}")),
    }
}

fn unknown_memory_note(index: u32, name: &str, line: usize) -> String {
    format!(
        "GPU {index} ({name}): memory not reported (line {line}: N/A or Not Supported, as unified-memory GPUs such as GB10 print); its memory is unknown"
    )
}

fn unknown_memory_device(index: u32, name: String, uuid: Option<String>) -> GpuDevice {
    GpuDevice {
        index,
        architecture: Architecture::from_name(&name),
        name,
        uuid,
        memory_total_bytes: 0,
        memory_used_bytes: 0,
        memory_free_bytes: 0,
        memory_reserved_bytes: None,
        memory_reported: false,
        processes: Vec::new(),
    }
}

/// Make `used` include `reserved` when the source printed them apart (nvidia-smi:
/// total = reserved + used + free), so all sources match NVML v2's meaning.
fn normalise_used(total: u64, used: u64, free: u64, reserved: Option<u64>) -> u64 {
    match reserved {
        Some(r) => {
            let apart = total.abs_diff(used.saturating_add(r).saturating_add(free));
            let together = total.abs_diff(used.saturating_add(free));
            if apart < together { used + r } else { used }
        }
        None => used,
    }
}

// ---------------------------------------------------------------------------------------------
// CSV

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

fn parse_csv(lines: &[(usize, &str)], path: &str) -> Result<GpuSnapshot, GpuError> {
    let mut notes = Vec::new();
    let mut columns: Option<Vec<(String, Option<u64>)>> = None;
    let mut devices = Vec::new();
    let mut drivers: Vec<String> = Vec::new();
    let mut reserved_seen = false;
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
        reserved_seen |= reserved.is_some();
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
        devices.push(GpuDevice {
            index,
            architecture: Architecture::from_name(&name),
            name,
            uuid,
            memory_total_bytes: total,
            memory_used_bytes: normalise_used(total, used, free, reserved),
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
    if reserved_seen {
        notes.push("memory.used includes memory.reserved (NVML v2 meaning)".into());
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

// ---------------------------------------------------------------------------------------------
// Plain table

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

fn not_available(v: &str) -> bool {
    v.eq_ignore_ascii_case("N/A") || v.eq_ignore_ascii_case("Not Found") || v.starts_with('[')
}

#[derive(PartialEq)]
enum TableSection {
    Before,
    Gpus,
    Mig,
    Processes,
}

fn parse_table(lines: &[(usize, &str)], path: &str) -> Result<GpuSnapshot, GpuError> {
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
            "free memory derived as total - used (the table prints neither free nor reserved)"
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

// ---------------------------------------------------------------------------------------------
// nvidia-smi -q

/// `Key   : value` (the separator is " : "; bus ids like `GPU 00000000:42:00.0` contain ':' but not
/// " : ").
fn kv(line: &str) -> Option<(&str, &str)> {
    let i = line
        .find(" : ")
        .or_else(|| line.trim_end().strip_suffix(" :").map(|s| s.len()))?;
    let key = line[..i].trim();
    let value = line.get(i + 3..).unwrap_or("").trim();
    Some((key, value))
}

#[derive(Default)]
struct QueryGpu {
    line: usize,
    name: Option<String>,
    uuid: Option<String>,
    total: Option<u64>,
    used: Option<u64>,
    free: Option<u64>,
    reserved: Option<u64>,
    fb_seen: bool,
    processes: Vec<GpuProcess>,
}

fn parse_query(lines: &[(usize, &str)], path: &str) -> Result<GpuSnapshot, GpuError> {
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
        devices.push(GpuDevice {
            index: i as u32,
            architecture: Architecture::from_name(&name),
            name,
            uuid: g.uuid,
            memory_total_bytes: total,
            memory_used_bytes: normalise_used(total, used, free, g.reserved),
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
