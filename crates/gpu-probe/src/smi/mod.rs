//! Readers for `nvidia-smi` text: `--query-gpu` CSV, the plain table, and `-q`.

mod csv;
mod query;
mod table;

use std::path::Path;

use crate::{Architecture, GIB, GpuDevice, GpuError, GpuSnapshot, MAX_GPU_MEMORY_BYTES, MIB};
use csv::parse_csv;
use query::parse_query;
use table::parse_table;

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

fn not_available(v: &str) -> bool {
    v.eq_ignore_ascii_case("N/A") || v.eq_ignore_ascii_case("Not Found") || v.starts_with('[')
}

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
