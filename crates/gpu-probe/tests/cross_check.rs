//! `cross_check` compares a live NVML snapshot with nvidia-smi (used by `cargo xtask gpu-check`).
//! The real H200's snapshots are checked in `h200.rs`.

use gpu_probe::{GpuSnapshot, MIB, Mismatch, SnapshotSource, cross_check, parse_nvidia_smi};

#[test]
fn nvml_vs_smi_agree_within_tolerance_and_disagree_beyond() {
    let smi = parse_nvidia_smi(
        "index, name, uuid, memory.total [MiB], memory.used [MiB], memory.free [MiB], driver_version\n\
         0, NVIDIA H200, GPU-1, 143771 MiB, 1000 MiB, 142200 MiB, 570.86.15\n",
        "smi.csv",
    )
    .unwrap();
    // NVML v2: used leaves a 571 MiB reserve out (as nvidia-smi does), bytes not MiB-rounded
    let mut nvml = GpuSnapshot {
        source: SnapshotSource::Nvml,
        ..smi.clone()
    };
    nvml.devices[0].memory_total_bytes = 143771 * MIB + 4096;
    nvml.devices[0].memory_used_bytes = 1000 * MIB - 300 * 1024;
    nvml.devices[0].memory_reserved_bytes = Some(571 * MIB);
    nvml.devices[0].memory_free_bytes = 142190 * MIB;
    assert_eq!(cross_check(&nvml, &smi, 64 * MIB), Vec::<Mismatch>::new());

    // a used that counts the reserve in (NVML v1's meaning) is 571 MiB off
    let mut v1 = nvml.clone();
    v1.devices[0].memory_used_bytes = 1571 * MIB;
    let m = cross_check(&v1, &smi, 64 * MIB);
    assert_eq!(m.len(), 1);
    assert_eq!(m[0].field, "memory_used_bytes");

    nvml.devices[0].memory_free_bytes = 100_000 * MIB;
    nvml.driver_version = Some("575.1".into());
    let m = cross_check(&nvml, &smi, 64 * MIB);
    let fields: Vec<_> = m.iter().map(|x| (x.index, x.field)).collect();
    assert_eq!(
        fields,
        vec![(None, "driver_version"), (Some(0), "memory_free_bytes")]
    );
    assert_eq!(m[1].nvml, (100_000 * MIB).to_string());
    assert_eq!(m[1].smi, (142200 * MIB).to_string());
}
