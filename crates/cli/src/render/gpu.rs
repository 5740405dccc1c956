//! A GPU snapshot as text, and `gpu --check`'s NVML-beside-nvidia-smi report.
//!
//! Memory is printed in MiB rounded up, as `nvidia-smi` prints NVML's bytes: on a real H200 it
//! printed 122058 MiB free for 122057.125 MiB, and 616 MiB reserved for 615.06 MiB. Rounded so,
//! a live NVML reading shows the very figures `nvidia-smi` shows on the same machine.

use std::fmt::Write as _;

use gpu_probe::{GpuDevice, GpuSnapshot, MIB, Mismatch, SnapshotSource};

/// One piece of terminal text: control characters shown as escapes.
fn esc(s: &str) -> std::borrow::Cow<'_, str> {
    crate::flags::one_line(s)
}

/// Render a GPU snapshot as text (names, paths and notes escaped): a header naming the source
/// and the driver and CUDA versions it gives (a version it does not give is left out), a line
/// per GPU, then the reader's notes.
pub fn gpu_text(s: &GpuSnapshot) -> String {
    format!(
        "GPU memory ({}){}\n{}",
        source_label(&s.source),
        versions(s),
        rows(s)
    )
}

/// `gpu --check`'s report: NVML's snapshot, then `nvidia-smi`'s (read by running `command`
/// just after), then whether they agree, or each mismatch.
pub fn gpu_check_text(
    nvml: &GpuSnapshot,
    smi: &GpuSnapshot,
    command: &str,
    mismatches: &[Mismatch],
    tolerance_bytes: u64,
) -> String {
    let mut o = gpu_text(nvml);
    let _ = write!(
        o,
        "GPU memory (`{}`, run just after NVML){}\n{}",
        esc(command),
        versions(smi),
        rows(smi)
    );
    let tol = tolerance_bytes.div_ceil(MIB);
    if mismatches.is_empty() {
        let _ = writeln!(
            o,
            "agree: the same GPUs (count, names, UUIDs) and driver; total memory within 1 MiB; \
             used and free within {tol} MiB (memory moves between the two reads)"
        );
    }
    for m in mismatches {
        let gpu = m
            .index
            .map_or_else(|| "host".to_string(), |i| format!("GPU {i}"));
        let (a, b) = if m.field.ends_with("_bytes") {
            (mib_figure(&m.nvml), mib_figure(&m.smi))
        } else {
            (esc(&m.nvml).into_owned(), esc(&m.smi).into_owned())
        };
        let _ = writeln!(
            o,
            "MISMATCH {gpu} {}: NVML {a} vs nvidia-smi {b}{}",
            m.field,
            if m.field == "memory_free_bytes" || m.field == "memory_used_bytes" {
                format!(" (more than {tol} MiB apart)")
            } else {
                String::new()
            }
        );
    }
    o
}

/// A byte count as `Mismatch` carries it, in MiB rounded up (the text as is if not a number).
fn mib_figure(bytes: &str) -> String {
    match bytes.parse::<u64>() {
        Ok(b) => format!("{} MiB", b.div_ceil(MIB)),
        Err(_) => esc(bytes).into_owned(),
    }
}

/// `; driver X; CUDA Y`, each part only when the source gives it.
fn versions(s: &GpuSnapshot) -> String {
    let mut o = String::new();
    if let Some(d) = &s.driver_version {
        let _ = write!(o, "; driver {}", esc(d));
    }
    if let Some(c) = &s.cuda_version {
        let _ = write!(o, "; CUDA {}", esc(c));
    }
    o
}

/// A line per GPU, then a line per note, each indented.
fn rows(s: &GpuSnapshot) -> String {
    let mut o = String::new();
    for d in &s.devices {
        let _ = writeln!(o, "  GPU {}{}: {}", d.index, identity(d), memory(d));
    }
    for n in &s.notes {
        let _ = writeln!(o, "  note: {}", esc(n));
    }
    o
}

/// ` NAME (Family)`; a name or family the source does not give is said to be missing.
fn identity(d: &GpuDevice) -> String {
    let family = d.architecture.map(|a| format!("{a:?}"));
    match (d.name.trim().is_empty(), family) {
        (false, Some(f)) => format!(" {} ({f})", esc(&d.name)),
        (false, None) => format!(" {} (architecture ?)", esc(&d.name)),
        (true, Some(f)) => format!(" ({f}; no name in this output)"),
        (true, None) => " (no name or architecture in this output)".to_string(),
    }
}

/// `total …, used …, free …[, reserved …]` in MiB rounded up, or why there are none.
fn memory(d: &GpuDevice) -> String {
    let (Some(total), Some(used), Some(free)) =
        (d.memory_total(), d.memory_used(), d.memory_free())
    else {
        return "memory not reported (unified memory?): total, used and free unknown".into();
    };
    let mut o = format!(
        "total {} MiB, used {} MiB, free {} MiB",
        total.div_ceil(MIB),
        used.div_ceil(MIB),
        free.div_ceil(MIB)
    );
    if let Some(r) = d.memory_reserved_bytes {
        let _ = write!(o, ", reserved {} MiB", r.div_ceil(MIB));
    }
    o
}

/// Where a GPU snapshot came from (its path escaped, as every piece of terminal text).
fn source_label(s: &SnapshotSource) -> String {
    let s = match s {
        SnapshotSource::Nvml => "NVML".into(),
        SnapshotSource::NvidiaSmiCsv { path } => format!("nvidia-smi CSV {path}"),
        SnapshotSource::NvidiaSmiTable { path } => format!("nvidia-smi table {path}"),
        SnapshotSource::NvidiaSmiQuery { path } => format!("nvidia-smi -q {path}"),
    };
    esc(&s).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The NVML snapshot `throughput-doctor gpu` took on a real H200 (driver 580.159.04) while
    /// PyTorch held 20 GiB, in bytes (gpu-probe's `tests/fixtures/h200-nvml-held.json`).
    fn h200_held() -> GpuSnapshot {
        GpuSnapshot {
            source: SnapshotSource::Nvml,
            driver_version: Some("580.159.04".into()),
            cuda_version: Some("13.0".into()),
            devices: vec![GpuDevice {
                index: 0,
                name: "NVIDIA H200".into(),
                uuid: Some("GPU-dacd664f-1316-95a0-447a-77ff0ea78474".into()),
                architecture: Some(gpu_probe::Architecture::Hopper),
                memory_total_bytes: 150_754_820_096,
                memory_used_bytes: 22_123_708_416,
                memory_free_bytes: 127_986_171_904,
                memory_reserved_bytes: Some(644_939_776),
                memory_reported: true,
                processes: Vec::new(),
            }],
            notes: Vec::new(),
        }
    }

    #[test]
    fn nvml_bytes_read_as_nvidia_smi_prints_them() {
        // nvidia-smi -q of the same moment: Total 143771, Reserved 616, Used 21099, Free 122058
        assert_eq!(
            gpu_text(&h200_held()),
            "GPU memory (NVML); driver 580.159.04; CUDA 13.0\n  GPU 0 NVIDIA H200 (Hopper): \
             total 143771 MiB, used 21099 MiB, free 122058 MiB, reserved 616 MiB\n"
        );
    }

    #[test]
    fn versions_and_names_a_source_lacks_are_said_missing_not_question_marks() {
        let mut s = h200_held();
        s.source = SnapshotSource::NvidiaSmiQuery {
            path: "q.txt".into(),
        };
        s.cuda_version = None;
        s.driver_version = None;
        s.devices[0].name = String::new();
        s.devices[0].architecture = None;
        let t = gpu_text(&s);
        assert!(t.starts_with("GPU memory (nvidia-smi -q q.txt)\n"), "{t}");
        assert!(
            t.contains("GPU 0 (no name or architecture in this output): total 143771 MiB"),
            "{t}"
        );
        s.devices[0].memory_reported = false;
        assert!(gpu_text(&s).contains(
            "GPU 0 (no name or architecture in this output): memory not reported (unified memory?)"
        ));
    }

    #[test]
    fn check_names_the_command_and_each_mismatch_in_mib() {
        let nvml = h200_held();
        let mut smi = nvml.clone();
        smi.source = SnapshotSource::NvidiaSmiCsv {
            path: "nvidia-smi".into(),
        };
        smi.cuda_version = None;
        smi.devices[0].memory_reserved_bytes = None;
        let cmd = "nvidia-smi --query-gpu=index,name --format=csv";
        let t = gpu_check_text(&nvml, &smi, cmd, &[], 64 * MIB);
        assert!(
            t.contains("GPU memory (`nvidia-smi --query-gpu=index,name --format=csv`, run just after NVML); driver 580.159.04\n"),
            "{t}"
        );
        assert!(t.ends_with("used and free within 64 MiB (memory moves between the two reads)\n"));
        let m = [
            Mismatch {
                index: None,
                field: "driver_version",
                nvml: "580.159.04".into(),
                smi: "575.1".into(),
            },
            Mismatch {
                index: Some(0),
                field: "memory_free_bytes",
                nvml: "127986171904".into(),
                smi: (100_000 * MIB).to_string(),
            },
        ];
        let t = gpu_check_text(&nvml, &smi, cmd, &m, 64 * MIB);
        assert!(!t.contains("agree"), "{t}");
        assert!(t.contains("MISMATCH host driver_version: NVML 580.159.04 vs nvidia-smi 575.1\n"));
        assert!(t.contains(
            "MISMATCH GPU 0 memory_free_bytes: NVML 122058 MiB vs nvidia-smi 100000 MiB (more than 64 MiB apart)\n"
        ));
    }
}
