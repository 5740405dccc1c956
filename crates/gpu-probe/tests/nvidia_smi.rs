//! nvidia-smi readers on the real samples in `tests/data/` and on constructed fixtures.

use std::path::PathBuf;

use gpu_probe::{
    Architecture, GpuError, GpuSnapshot, MIB, SnapshotSource, parse_nvidia_smi, read_snapshot_file,
};

fn repo_data(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data")
        .join(rel)
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn read(path: PathBuf) -> GpuSnapshot {
    read_snapshot_file(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// (index, name, total MiB, used MiB, free MiB) of every device.
fn mib_rows(s: &GpuSnapshot) -> Vec<(u32, &str, u64, u64, u64)> {
    s.devices
        .iter()
        .map(|d| {
            (
                d.index,
                d.name.as_str(),
                d.memory_total_bytes / MIB,
                d.memory_used_bytes / MIB,
                d.memory_free_bytes / MIB,
            )
        })
        .collect()
}

#[test]
fn real_b200_table_two_gpus() {
    let s = read(repo_data(
        "real/nvidia-smi/002-trtllm-i10278-b200x8-table.txt",
    ));
    assert!(matches!(s.source, SnapshotSource::NvidiaSmiTable { .. }));
    assert_eq!(s.driver_version.as_deref(), Some("580.95.05"));
    assert_eq!(s.cuda_version.as_deref(), Some("13.0"));
    assert_eq!(
        mib_rows(&s),
        vec![
            (0, "NVIDIA B200", 183359, 166593, 183359 - 166593),
            (1, "NVIDIA B200", 183359, 156996, 183359 - 156996),
        ]
    );
    assert_eq!(s.devices[0].memory_total_bytes, 183359 * MIB);
    assert!(
        s.devices
            .iter()
            .all(|d| d.architecture == Some(Architecture::Blackwell))
    );
    assert!(
        s.devices
            .iter()
            .all(|d| d.memory_reserved_bytes.is_none() && d.processes.is_empty())
    );
    // the leading date line is skipped and said so; free is derived and said so
    assert!(
        s.notes.iter().any(|n| n.starts_with("line 1 skipped")),
        "{:?}",
        s.notes
    );
    assert!(s.notes.iter().any(|n| n.contains("total - used")));
    assert_eq!(s.min_free_bytes(), Some((183359 - 166593) * MIB));
}

#[test]
fn real_rtx5090_after_bare_command_with_empty_processes() {
    let s = read(repo_data(
        "real/nvidia-smi/004-club3090-i617-rtx5090-single-with-processes-header.txt",
    ));
    assert_eq!(s.driver_version.as_deref(), Some("595.71.05"));
    assert_eq!(s.cuda_version.as_deref(), Some("13.2"));
    assert_eq!(
        mib_rows(&s),
        vec![(0, "NVIDIA GeForce RTX 5090", 32607, 492, 32115)]
    );
    assert_eq!(s.devices[0].architecture, Some(Architecture::Blackwell));
    assert!(s.devices[0].processes.is_empty());
    assert!(
        s.notes
            .iter()
            .any(|n| n == "line 1 skipped (before the table): nvidia-smi")
    );
}

#[test]
fn real_rtx6000d_without_leading_date() {
    let s = read(repo_data(
        "real/nvidia-smi/005-aikitoria-i20-rtx6000d-blackwell-no-leading-ts.txt",
    ));
    assert_eq!(s.driver_version.as_deref(), Some("590.44.01"));
    assert_eq!(s.cuda_version.as_deref(), Some("13.1"));
    assert_eq!(
        mib_rows(&s),
        vec![
            (0, "NVIDIA RTX 6000D", 85651, 0, 85651),
            (1, "NVIDIA RTX 6000D", 85651, 0, 85651),
        ]
    );
    assert_eq!(s.devices[1].architecture, Some(Architecture::Blackwell));
    assert!(
        !s.notes.iter().any(|n| n.contains("skipped")),
        "{:?}",
        s.notes
    );
}

#[test]
fn real_query_without_memory_is_a_named_error() {
    let path =
        repo_data("real/nvidia-smi/001-cubecos-i312-rtx-pro-6000-blackwell-q-memory-perf.txt");
    match read_snapshot_file(&path) {
        Err(GpuError::NoMemoryFigures {
            path: p,
            line,
            gpus_listed,
            attached_gpus,
            driver_version,
        }) => {
            assert!(p.ends_with("001-cubecos-i312-rtx-pro-6000-blackwell-q-memory-perf.txt"));
            assert_eq!(line, 12); // "GPU 00000000:42:00.0"
            assert_eq!(gpus_listed, 1);
            assert_eq!(attached_gpus, Some(4));
            assert_eq!(driver_version.as_deref(), Some("580.105.06"));
        }
        other => panic!("expected NoMemoryFigures, got {other:?}"),
    }
}

fn scenario_csv(name: &str) -> GpuSnapshot {
    read(repo_data(&format!("scenarios/{name}/nvidia-smi.csv")))
}

#[test]
fn scenario_csv_b2_eight_rtx_pro_6000() {
    let s = scenario_csv("kimi-k25-b2");
    assert!(matches!(s.source, SnapshotSource::NvidiaSmiCsv { .. }));
    assert_eq!(s.driver_version.as_deref(), Some("580.95.05"));
    assert_eq!(s.cuda_version, None);
    let name = "NVIDIA RTX PRO 6000 Blackwell Server Edition";
    let used = [92634, 92676, 92682, 92620, 92769, 92606, 92612, 92615];
    let free = [5253, 5211, 5205, 5267, 5118, 5281, 5275, 5272];
    let want: Vec<_> = (0..8)
        .map(|i| (i as u32, name, 97887, used[i], free[i]))
        .collect();
    assert_eq!(mib_rows(&s), want);
    assert!(
        s.devices
            .iter()
            .all(|d| d.architecture == Some(Architecture::Blackwell))
    );
    assert_eq!(s.min_total_bytes(), Some(97887 * MIB));
    assert_eq!(s.min_free_bytes(), Some(5118 * MIB));
    assert!(s.notes.is_empty(), "{:?}", s.notes);
}

#[test]
fn scenario_csv_b1_eight_rtx_pro_6000() {
    let s = scenario_csv("kimi-k25-b1");
    let used: Vec<u64> = s
        .devices
        .iter()
        .map(|d| d.memory_used_bytes / MIB)
        .collect();
    let free: Vec<u64> = s
        .devices
        .iter()
        .map(|d| d.memory_free_bytes / MIB)
        .collect();
    assert_eq!(
        used,
        [92711, 92723, 92647, 92664, 92647, 92714, 92644, 92679]
    );
    assert_eq!(free, [5176, 5164, 5240, 5223, 5240, 5173, 5243, 5208]);
    assert_eq!(s.min_free_bytes(), Some(5164 * MIB));
}

#[test]
fn csv_noheader_nounits() {
    let text = "0, NVIDIA H200, 143771, 130104, 13126, 570.86.15\n1, NVIDIA H200, 143771, 120000, 23230, 570.86.15\n";
    let s = parse_nvidia_smi(text, "h200.csv").unwrap();
    assert_eq!(
        mib_rows(&s),
        vec![
            (0, "NVIDIA H200", 143771, 130104, 13126),
            (1, "NVIDIA H200", 143771, 120000, 23230)
        ]
    );
    assert_eq!(s.devices[0].architecture, Some(Architecture::Hopper));
    assert_eq!(s.driver_version.as_deref(), Some("570.86.15"));
    assert!(s.notes[0].starts_with("no CSV header: assumed column order index,name"));
}

#[test]
fn csv_header_in_other_order_with_uuid_and_reserved() {
    let text = "\
$ nvidia-smi --query-gpu=memory.free,name,uuid,memory.reserved,memory.used,index,memory.total --format=csv,nounits
memory.free [MiB], name, uuid, memory.reserved [MiB], memory.used [MiB], index, memory.total [MiB]
8970, NVIDIA H100 80GB HBM3, GPU-abc, 579, 72011, 3, 81559
";
    let s = parse_nvidia_smi(text, "q.csv").unwrap();
    let d = &s.devices[0];
    assert_eq!(d.index, 3);
    assert_eq!(d.uuid.as_deref(), Some("GPU-abc"));
    assert_eq!(d.memory_total_bytes, 81559 * MIB);
    assert_eq!(d.memory_free_bytes, 8970 * MIB);
    assert_eq!(d.memory_reserved_bytes, Some(579 * MIB));
    // used as printed: nvidia-smi and NVML v2 both leave the reserve out (h200.rs)
    assert_eq!(d.memory_used_bytes, 72011 * MIB);
    assert!(
        s.notes.iter().all(|n| !n.contains("taken out")),
        "{:?}",
        s.notes
    );
    assert!(s.notes.iter().any(|n| n.starts_with("line 1 skipped")));
}

#[test]
fn csv_errors_name_path_and_line() {
    let text = "index, name, memory.total [MiB], memory.used [MiB], memory.free [MiB]\n0, A, 100 MiB, 50 MiB, 50 MiB\n1, B, 100 MiB, lots, 50 MiB\n";
    let e = parse_nvidia_smi(text, "bad.csv").unwrap_err();
    assert_eq!(
        e.to_string(),
        "bad.csv:3: memory.used: not a memory figure: \"lots\""
    );
    let e = parse_nvidia_smi(
        "index, name, memory.total [MiB]\n0, A, 100 MiB, 3\n",
        "x.csv",
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "x.csv:1: CSV header has neither memory.used nor memory.free"
    );
    let e = parse_nvidia_smi("index, memory.total, memory.used\n0, 1 MiB\n", "y.csv").unwrap_err();
    assert_eq!(
        e.to_string(),
        "y.csv:2: 2 fields where the header has 3 columns"
    );
}

#[test]
fn driver_610_table_kmd_umd_header_and_processes() {
    let s = read(fixture("driver610-kmd-umd-table.txt"));
    assert_eq!(s.driver_version.as_deref(), Some("610.12.03"));
    assert_eq!(s.cuda_version.as_deref(), Some("13.3"));
    assert_eq!(
        mib_rows(&s),
        vec![
            (0, "NVIDIA H200", 143771, 130104, 13667),
            (1, "NVIDIA H200", 143771, 130088, 13683),
        ]
    );
    assert_eq!(s.devices[0].architecture, Some(Architecture::Hopper));
    let p = &s.devices[1].processes;
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].pid, 2871106);
    assert_eq!(p[0].name.as_deref(), Some("sglang::scheduler_TP1"));
    assert_eq!(p[0].used_bytes, Some(130074 * MIB));
    assert_eq!(s.devices[0].processes[0].pid, 2871105);
}

#[test]
fn table_gpu_row_without_memory_line_is_an_error_with_its_line() {
    let text = "\
| NVIDIA-SMI 580.95.05              Driver Version: 580.95.05      CUDA Version: 13.0     |
|=========================================+========================+======================|
|   0  NVIDIA B200                    On  |   00000000:05:00.0 Off |                    0 |
";
    let e = parse_nvidia_smi(text, "cut.txt").unwrap_err();
    assert_eq!(
        e.to_string(),
        "cut.txt:3: GPU 0: no memory line (\"used MiB / total MiB\") follows this row"
    );
}

#[test]
fn query_with_memory_and_processes() {
    let s = read(fixture("query-memory-h100.txt"));
    assert!(matches!(s.source, SnapshotSource::NvidiaSmiQuery { .. }));
    assert_eq!(s.driver_version.as_deref(), Some("570.133.20"));
    assert_eq!(s.cuda_version.as_deref(), Some("12.8"));
    assert_eq!(
        mib_rows(&s),
        vec![
            (0, "NVIDIA H100 80GB HBM3", 81559, 72011, 8970),
            (1, "NVIDIA H100 80GB HBM3", 81559, 0, 80979),
        ]
    );
    let d0 = &s.devices[0];
    assert_eq!(
        d0.uuid.as_deref(),
        Some("GPU-11111111-2222-3333-4444-555555555555")
    );
    assert_eq!(d0.memory_reserved_bytes, Some(579 * MIB));
    assert_eq!(d0.processes.len(), 1);
    assert_eq!(d0.processes[0].pid, 40211);
    assert_eq!(d0.processes[0].name.as_deref(), Some("python3"));
    assert_eq!(d0.processes[0].used_bytes, Some(72000 * MIB));
    assert!(s.devices[1].processes.is_empty());
    assert!(s.notes.is_empty(), "{:?}", s.notes);
}

#[test]
fn unknown_text_and_missing_file() {
    let e = parse_nvidia_smi("hello\nworld\n", "junk.txt").unwrap_err();
    assert!(matches!(e, GpuError::UnknownFormat { .. }));
    assert!(e.to_string().starts_with("junk.txt: not nvidia-smi output"));
    let e = read_snapshot_file(&fixture("does-not-exist.txt")).unwrap_err();
    assert!(matches!(e, GpuError::Io { .. }));
}

#[test]
fn snapshot_serialises_to_json() {
    let s = scenario_csv("kimi-k25-b2");
    let v = serde_json::to_value(&s).unwrap();
    assert_eq!(v["source"]["kind"], "nvidia_smi_csv");
    assert_eq!(v["devices"][0]["architecture"], "Blackwell");
    assert_eq!(v["devices"][0]["memory_total_bytes"], 97887u64 * MIB);
    assert_eq!(
        v["devices"][0]["memory_reserved_bytes"],
        serde_json::Value::Null
    );
}

/// GB10 (DGX Spark, unified memory): the real paste of the CSV query (`[N/A]` for every memory
/// figure) followed by a table header without rows. The GPU is found, its memory is unknown.
#[test]
fn gb10_unified_memory_csv_is_a_gpu_with_unknown_memory() {
    let s = read(repo_data(
        "real/nvidia-smi/101-marimo-pr6822-gb10-csv-na-and-table-header.txt",
    ));
    assert_eq!(s.devices.len(), 1);
    let d = &s.devices[0];
    assert_eq!((d.index, d.name.as_str()), (0, "NVIDIA GB10"));
    assert!(!d.memory_reported);
    // the driver comes from the table header after the CSV
    assert_eq!(s.driver_version.as_deref(), Some("580.95.05"));
    assert_eq!(s.cuda_version.as_deref(), Some("13.0"));
    assert_eq!((d.memory_total(), d.memory_free()), (None, None));
    assert_eq!(s.min_total_bytes(), None);
    assert!(
        s.notes
            .iter()
            .any(|n| n.starts_with("GPU 0 (NVIDIA GB10): memory not reported (line 2:")),
        "{:?}",
        s.notes
    );
    // JSON says null, never 0.
    let v = serde_json::to_value(&s).unwrap();
    assert!(v["devices"][0]["memory_total_bytes"].is_null(), "{v}");
    assert!(v["devices"][0]["memory_free_bytes"].is_null(), "{v}");
    assert_eq!(v["devices"][0]["memory_reported"], false);
}

/// The plain table of a unified-memory GPU prints `Not Supported` in the memory cell
/// (constructed in nvidia-smi 580's layout; the GB10 row of a DGX Spark).
#[test]
fn table_memory_not_supported_is_a_gpu_with_unknown_memory() {
    let text = "\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 580.95.05              Driver Version: 580.95.05      CUDA Version: 13.0     |
+-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA GB10                    On  |   0000000F:01:00.0  On |                  N/A |
| N/A   41C    P8              4W /  N/A  | Not Supported          |      0%      Default |
|                                         |                        |                  N/A |
+-----------------------------------------+------------------------+----------------------+
";
    let s = parse_nvidia_smi(text, "gb10-table").unwrap();
    assert_eq!(s.devices.len(), 1);
    assert_eq!(s.devices[0].name, "NVIDIA GB10");
    assert!(!s.devices[0].memory_reported);
    assert_eq!(s.driver_version.as_deref(), Some("580.95.05"));
}

/// A total of 10^23 MiB is a damaged file, not u64::MAX bytes.
#[test]
fn an_absurd_total_is_an_error_not_a_saturated_figure() {
    let text = "index, name, memory.total [MiB], memory.used [MiB], memory.free [MiB]\n\
                0, NVIDIA H100 80GB HBM3, 100000000000000000000000 MiB, 1 MiB, 2 MiB\n";
    match parse_nvidia_smi(text, "absurd.csv").unwrap_err() {
        GpuError::Parse { line, message, .. } => {
            assert_eq!(line, 2);
            assert_eq!(
                message,
                "memory.total: memory figure \"100000000000000000000000 MiB\" is more than 1 PiB: not a GPU's memory"
            );
        }
        other => panic!("{other:?}"),
    }
    // Also through the integer path (fits u64 as MiB count, overflows as bytes).
    let text = "0, X, 18446744073709551615, 1, 2\n";
    assert!(
        parse_nvidia_smi(text, "big.csv")
            .unwrap_err()
            .to_string()
            .contains("is more than 1 PiB"),
    );
}

/// A `-q` whose used holds the reserve (used + free = total, NVML v1's meaning, as the R525
/// documentation says v2 counts it too) has the reserve taken out, and says so.
#[test]
fn query_whose_used_holds_the_reserve_loses_it_with_a_note() {
    let text = std::fs::read_to_string(fixture("query-memory-h100.txt"))
        .unwrap()
        .replace(
            "Used                              : 72011 MiB",
            "Used                              : 72590 MiB",
        )
        .replace(
            "Free                              : 8970 MiB",
            "Free                              : 8969 MiB",
        );
    let s = parse_nvidia_smi(&text, "v1.txt").unwrap();
    assert_eq!(s.devices[0].memory_used_bytes, 72011 * MIB);
    assert_eq!(s.devices[0].memory_free_bytes, 8969 * MIB);
    assert_eq!(
        s.notes,
        [
            "GPU 0: used held the 579 MiB reserved (used + free = total, NVML v1's meaning); the reserve was taken out of used, as NVML v2 and nvidia-smi count it"
        ]
    );
    // GPU 1 (used 0, reserve 579, free 80979: apart) is kept
    assert_eq!(s.devices[1].memory_used_bytes, 0);
}
