//! A real NVIDIA H200 (driver 580.159.04, CUDA 13.0), read by every path of the crate.
//!
//! The fixtures `tests/fixtures/h200-*` were captured in one script on one H200 host: first idle
//! (`h200-table.txt`, `h200-query*.csv`, `h200-q.txt`, `h200-q-memory.txt`, and
//! `throughput-doctor gpu --json`'s NVML snapshot `h200-nvml.json`), then while a PyTorch
//! process held a 20 GiB tensor (`*-held.*`; `h200-torch-mem-get-info-held.json` is what that
//! process's `torch.cuda.mem_get_info()` returned). Nothing is edited but the serial number and
//! the GPU PDI of `h200-q.txt`.
//!
//! What they showed: NVML's v2 call leaves the driver's reserve out of used (total = reserved +
//! used + free, to the byte), and `nvidia-smi` prints NVML's figures rounded up to MiB. The
//! crate used to add the reserve to used for every nvidia-smi file that printed it (`-q`, CSV
//! with `memory.reserved`), so the same idle card read 0 MiB used through NVML and 616 MiB
//! through `nvidia-smi -q`; these tests hold every source to one meaning.

use std::path::PathBuf;

use gpu_probe::{
    Architecture, GpuDevice, GpuProcess, GpuSnapshot, MIB, Mismatch, SnapshotSource, cross_check,
    read_snapshot_file,
};
use serde_json::Value;

const TOTAL_MIB: u64 = 143_771;
const DRIVER: &str = "580.159.04";
const UUID: &str = "GPU-dacd664f-1316-95a0-447a-77ff0ea78474";
/// The tolerance `throughput-doctor gpu --check` uses.
const CHECK_TOLERANCE: u64 = 64 * MIB;

fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn read(name: &str) -> GpuSnapshot {
    read_snapshot_file(&path(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn json(name: &str) -> Value {
    let text = std::fs::read_to_string(path(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The NVML snapshot `throughput-doctor gpu --json` printed on the H200, rebuilt.
fn nvml(name: &str) -> GpuSnapshot {
    let v = json(name);
    assert_eq!(v["source"]["kind"], "nvml", "{name}");
    let bytes = |d: &Value, k: &str| d[k].as_u64().unwrap_or_else(|| panic!("{name}: {k}"));
    let devices = v["devices"]
        .as_array()
        .expect("devices")
        .iter()
        .map(|d| GpuDevice {
            index: bytes(d, "index") as u32,
            name: d["name"].as_str().expect("name").to_string(),
            uuid: d["uuid"].as_str().map(str::to_string),
            architecture: (d["architecture"] == "Hopper").then_some(Architecture::Hopper),
            memory_total_bytes: bytes(d, "memory_total_bytes"),
            memory_used_bytes: bytes(d, "memory_used_bytes"),
            memory_free_bytes: bytes(d, "memory_free_bytes"),
            memory_reserved_bytes: d["memory_reserved_bytes"].as_u64(),
            memory_reported: d["memory_reported"] == true,
            processes: d["processes"]
                .as_array()
                .expect("processes")
                .iter()
                .map(|p| GpuProcess {
                    pid: bytes(p, "pid") as u32,
                    used_bytes: p["used_bytes"].as_u64(),
                    name: p["name"].as_str().map(str::to_string),
                })
                .collect(),
        })
        .collect();
    GpuSnapshot {
        source: SnapshotSource::Nvml,
        driver_version: v["driver_version"].as_str().map(str::to_string),
        cuda_version: v["cuda_version"].as_str().map(str::to_string),
        devices,
        notes: Vec::new(),
    }
}

/// (total, used, free, reserved) of GPU 0 in MiB, rounded up as nvidia-smi rounds.
fn mib(s: &GpuSnapshot) -> (u64, u64, u64, Option<u64>) {
    let d = &s.devices[0];
    (
        d.memory_total_bytes.div_ceil(MIB),
        d.memory_used_bytes.div_ceil(MIB),
        d.memory_free_bytes.div_ceil(MIB),
        d.memory_reserved_bytes.map(|r| r.div_ceil(MIB)),
    )
}

fn one_h200(s: &GpuSnapshot) -> &GpuDevice {
    assert_eq!(s.devices.len(), 1, "{s:?}");
    let d = &s.devices[0];
    assert_eq!(d.index, 0);
    assert!(d.memory_reported);
    assert_eq!(d.memory_total_bytes, TOTAL_MIB * MIB);
    assert_eq!(s.driver_version.as_deref(), Some(DRIVER));
    d
}

#[test]
fn nvml_v2_leaves_the_reserve_out_of_used_to_the_byte() {
    for (name, used) in [
        ("h200-nvml.json", 0),
        ("h200-nvml-held.json", 22_123_708_416),
    ] {
        let s = nvml(name);
        let d = one_h200(&s);
        assert_eq!(d.name, "NVIDIA H200");
        assert_eq!(d.uuid.as_deref(), Some(UUID));
        assert_eq!(d.architecture, Some(Architecture::Hopper));
        assert_eq!(s.cuda_version.as_deref(), Some("13.0"));
        assert_eq!(d.memory_total_bytes, 150_754_820_096);
        assert_eq!(d.memory_reserved_bytes, Some(644_939_776)); // 615.06 MiB
        assert_eq!(d.memory_used_bytes, used, "{name}");
        let sum = d.memory_reserved_bytes.unwrap() + d.memory_used_bytes + d.memory_free_bytes;
        assert_eq!(sum, d.memory_total_bytes, "{name}: reserved + used + free");
    }
    // the PyTorch process NVML listed while it held 20 GiB (nvidia-smi: 21090 MiB, `C python3`)
    let held = nvml("h200-nvml-held.json");
    let p = &held.devices[0].processes;
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].name.as_deref(), Some("python3"));
    assert_eq!(p[0].used_bytes, Some(21_090 * MIB));
    assert!(nvml("h200-nvml.json").devices[0].processes.is_empty());
}

#[test]
fn csv_query_as_cross_check_runs_it() {
    let s = read("h200-query.csv");
    assert!(matches!(s.source, SnapshotSource::NvidiaSmiCsv { .. }));
    let d = one_h200(&s);
    assert_eq!(d.name, "NVIDIA H200");
    assert_eq!(d.uuid.as_deref(), Some(UUID));
    assert_eq!(d.architecture, Some(Architecture::Hopper));
    assert_eq!(s.cuda_version, None);
    assert_eq!(mib(&s), (TOTAL_MIB, 0, 143_156, None));
    assert!(s.notes.is_empty(), "{:?}", s.notes);
    assert_eq!(
        mib(&read("h200-query-held.csv")),
        (TOTAL_MIB, 21_099, 122_058, None)
    );
}

#[test]
fn csv_with_memory_reserved_keeps_used_as_printed() {
    let s = read("h200-query-reserved.csv");
    one_h200(&s);
    // was (143771, 616, 143156, 616): the reserve added to an idle card's used
    assert_eq!(mib(&s), (TOTAL_MIB, 0, 143_156, Some(616)));
    assert!(s.notes.is_empty(), "{:?}", s.notes);
}

#[test]
fn csv_noheader_nounits() {
    let s = read("h200-query-noheader.csv");
    let d = one_h200(&s);
    assert_eq!(d.name, "NVIDIA H200");
    assert_eq!(d.uuid, None);
    assert_eq!(mib(&s), (TOTAL_MIB, 0, 143_156, None));
    assert_eq!(
        s.notes,
        [
            "no CSV header: assumed column order index,name,memory.total,memory.used,memory.free,driver_version"
        ]
    );
}

#[test]
fn full_query_reads_name_uuid_family_and_memory() {
    let s = read("h200-q.txt");
    assert!(matches!(s.source, SnapshotSource::NvidiaSmiQuery { .. }));
    let d = one_h200(&s);
    assert_eq!(d.name, "NVIDIA H200");
    assert_eq!(d.uuid.as_deref(), Some(UUID));
    assert_eq!(d.architecture, Some(Architecture::Hopper));
    assert_eq!(s.cuda_version.as_deref(), Some("13.0"));
    // was used 616: the reserve added to used
    assert_eq!(mib(&s), (TOTAL_MIB, 0, 143_156, Some(616)));
    assert!(d.processes.is_empty());
    assert!(s.notes.is_empty(), "{:?}", s.notes);
}

#[test]
fn query_memory_sections_alone_have_no_name_but_the_right_figures() {
    let s = read("h200-q-memory.txt");
    let d = one_h200(&s);
    assert_eq!(d.name, "");
    assert_eq!(d.architecture, None);
    assert_eq!(mib(&s), (TOTAL_MIB, 0, 143_156, Some(616)));
    assert_eq!(
        s.notes,
        ["GPU 0: no Product Name in the file (name left empty)"]
    );

    let s = read("h200-q-memory-pids-held.txt");
    let d = one_h200(&s);
    // was used 21715 (21099 + 616), 616 MiB more than nvidia-smi's own CSV of the same moment
    assert_eq!(mib(&s), (TOTAL_MIB, 21_099, 122_058, Some(616)));
    assert_eq!(
        d.processes,
        [GpuProcess {
            pid: 644,
            used_bytes: Some(21_090 * MIB),
            name: Some("python3".into()),
        }]
    );
}

#[test]
fn table_free_is_total_minus_used_and_says_what_that_misses() {
    let s = read("h200-table.txt");
    assert!(matches!(s.source, SnapshotSource::NvidiaSmiTable { .. }));
    let d = one_h200(&s);
    assert_eq!(d.name, "NVIDIA H200");
    assert_eq!(d.architecture, Some(Architecture::Hopper));
    assert_eq!(s.cuda_version.as_deref(), Some("13.0"));
    // the table has no free or reserve: free is 615 MiB more than the card has free
    assert_eq!(mib(&s), (TOTAL_MIB, 0, TOTAL_MIB, None));
    assert!(d.processes.is_empty());
    assert!(
        s.notes
            .iter()
            .any(|n| n.contains("total - used") && n.contains("overstated by that reserve")),
        "{:?}",
        s.notes
    );

    let s = read("h200-table-held.txt");
    let d = one_h200(&s);
    assert_eq!(mib(&s), (TOTAL_MIB, 21_099, TOTAL_MIB - 21_099, None));
    assert_eq!(
        d.processes,
        [GpuProcess {
            pid: 644,
            used_bytes: Some(21_090 * MIB),
            name: Some("python3".into()),
        }]
    );
}

/// Every reader, on files of the same idle moment and of the same held moment, gives NVML's
/// used (the table's free alone differs, and says why).
#[test]
fn every_source_means_the_same_used() {
    let idle = [
        "h200-query.csv",
        "h200-query-reserved.csv",
        "h200-query-noheader.csv",
        "h200-q.txt",
        "h200-q-memory.txt",
        "h200-table.txt",
    ];
    let nvml_idle = nvml("h200-nvml.json").devices[0].memory_used_bytes;
    for f in idle {
        assert_eq!(read(f).devices[0].memory_used_bytes, nvml_idle, "{f}");
    }
    let held = [
        "h200-query-held.csv",
        "h200-q-memory-pids-held.txt",
        "h200-table-held.txt",
    ];
    let nvml_held = nvml("h200-nvml-held.json").devices[0].memory_used_bytes;
    for f in held {
        // nvidia-smi rounds 21098.8 MiB up
        let used = read(f).devices[0].memory_used_bytes;
        assert!(used.abs_diff(nvml_held) < MIB, "{f}: {used} vs {nvml_held}");
    }
}

/// `gpu --check`'s comparison on what was captured: NVML's snapshot against nvidia-smi's CSV
/// (what `--check` runs) and `-q` (which also gives the reserve), idle and held.
#[test]
fn nvml_agrees_with_nvidia_smi_within_the_check_tolerance() {
    for (n, smi) in [
        ("h200-nvml.json", "h200-query.csv"),
        ("h200-nvml.json", "h200-q.txt"),
        ("h200-nvml.json", "h200-query-reserved.csv"),
        ("h200-nvml-held.json", "h200-query-held.csv"),
    ] {
        let m = cross_check(&nvml(n), &read(smi), CHECK_TOLERANCE);
        assert_eq!(m, Vec::<Mismatch>::new(), "{n} vs {smi}");
    }
    // the -q -d MEMORY,PIDS file has no name: that and only that is told apart
    let m = cross_check(
        &nvml("h200-nvml-held.json"),
        &read("h200-q-memory-pids-held.txt"),
        CHECK_TOLERANCE,
    );
    let fields: Vec<_> = m.iter().map(|x| x.field).collect();
    assert_eq!(fields, ["name"]);
    // the reserve counted in used, as the crate once read -q files, is caught
    let mut old = read("h200-q.txt");
    old.devices[0].memory_used_bytes += 616 * MIB;
    let m = cross_check(&nvml("h200-nvml.json"), &old, CHECK_TOLERANCE);
    assert_eq!(m.len(), 1);
    assert_eq!(m[0].field, "memory_used_bytes");
    // and the idle snapshot is not the held one
    let m = cross_check(
        &nvml("h200-nvml.json"),
        &read("h200-query-held.csv"),
        CHECK_TOLERANCE,
    );
    let fields: Vec<_> = m.iter().map(|x| x.field).collect();
    assert_eq!(fields, ["memory_free_bytes", "memory_used_bytes"]);
}

/// The free figure is the one SGLang reads: `torch.cuda.mem_get_info()` in the process holding
/// the 20 GiB returned NVML's free to the byte, and a total that leaves out the reserve.
#[test]
fn nvml_free_is_what_torch_mem_get_info_returns() {
    let torch = json("h200-torch-mem-get-info-held.json");
    assert_eq!(torch["device"], "NVIDIA H200");
    let n = nvml("h200-nvml-held.json");
    let d = &n.devices[0];
    assert_eq!(torch["held"]["free"].as_u64(), Some(d.memory_free_bytes));
    assert_eq!(torch["pid"].as_u64(), Some(u64::from(d.processes[0].pid)));
    assert_eq!(
        torch["held"]["total"].as_u64(),
        Some(d.memory_total_bytes - d.memory_reserved_bytes.unwrap())
    );
    // before its 20 GiB tensor the process's own CUDA context already held 527 MiB
    let before = torch["before"]["free"].as_u64().unwrap();
    let idle_free = nvml("h200-nvml.json").devices[0].memory_free_bytes;
    assert_eq!((idle_free - before).div_ceil(MIB), 527);
    // and the tensor took its 20 GiB and 92 MiB more (the fill kernel's module and workspace)
    assert_eq!(before - d.memory_free_bytes, (20 * 1024 + 92) * MIB);
}
