//! GPU memory snapshot for throughput-doctor: from NVML at run time, or from `nvidia-smi` output
//! that a user copied off the GPU host.
//!
//! Design decision: NVML is loaded with `dlopen` the first time [`probe`] runs (via
//! `nvml-wrapper`), not linked. The binary therefore starts on machines without an NVIDIA driver,
//! and every way NVML can be missing (no `libnvidia-ml.so.1`, a missing symbol, the kernel driver not
//! loaded, no GPU) becomes one typed error, [`GpuError::GpuUnavailable`], so the caller narrows
//! the diagnosis instead of aborting. The cost: the failure is only seen at run time.
//!
//! Because the GPU host is often not the machine where the diagnosis runs, [`parse_nvidia_smi`]
//! reads the three text formats `nvidia-smi` prints (CSV query, the plain table, and `-q`), and
//! returns the same [`GpuSnapshot`].
//!
//! Memory semantics (all figures in bytes):
//! - `memory_total_bytes`: the framebuffer size the driver reports (e.g. 97,887 MiB on an RTX PRO
//!   6000 Blackwell Server Edition).
//! - `memory_free_bytes`: unallocated memory. This is the number SGLang's
//!   `get_available_gpu_memory` reads (`torch.cuda.mem_get_info`), so it is the one to compare with
//!   the log's `avail mem` / `available_gpu_mem`.
//! - `memory_used_bytes`: allocated memory **without** the driver's reserved part, so that
//!   total = reserved + used + free. That is what NVML's v2 call (`nvmlDeviceGetMemoryInfo_v2`)
//!   returns and what `nvidia-smi` prints: on a real H200 (driver 580.159.04) the v2 figures add up
//!   to the total to the byte, with 615 MiB reserved and 0 used on an idle card, and `nvidia-smi`
//!   prints the same figures rounded up to MiB (`tests/fixtures/h200-*`). NVML's v1 call, and the
//!   R525 documentation of v2, count reserved inside used (total = used + free): a source whose
//!   figures add up that way has its reserve taken out of used, and a note says so
//!   (`memory::used_apart_from_reserved`), so every source means the same thing. Tables and CSV
//!   without a reserved column keep used as printed (then `memory_reserved_bytes` is `None`).
//! - `memory_reserved_bytes`: driver/firmware reserve, `None` when the source does not give it.
//!
//! Hook for `cargo xtask gpu-check` (real hardware): run [`probe`], run `nvidia-smi` with
//! [`NVIDIA_SMI_QUERY_ARGS`], parse its stdout with [`parse_nvidia_smi`], and compare both with
//! [`cross_check`]. Everything is `serde::Serialize` for `--json` output.
#![deny(missing_docs)]

mod arch;
mod check;
mod memory;
mod nvml;
mod smi;

use serde::Serialize;

pub use arch::Architecture;
pub use check::{Mismatch, NVIDIA_SMI_QUERY_ARGS, cross_check};
pub use nvml::probe;
pub use smi::{parse_nvidia_smi, read_snapshot_file};

/// One mebibyte (2^20 bytes), the unit `nvidia-smi` prints as `MiB`.
pub const MIB: u64 = 1 << 20;
/// One gibibyte (2^30 bytes), the unit SGLang prints as "GB" in its memory log lines.
pub const GIB: u64 = 1 << 30;

/// Where a [`GpuSnapshot`] came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SnapshotSource {
    /// Read live through NVML on this machine.
    Nvml,
    /// `nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]` output read from `path`.
    NvidiaSmiCsv {
        /// The file (or label) the text came from.
        path: String,
    },
    /// The plain `nvidia-smi` table read from `path`.
    NvidiaSmiTable {
        /// The file (or label) the text came from.
        path: String,
    },
    /// `nvidia-smi -q` ("NVSMI LOG" key/value format) read from `path`.
    NvidiaSmiQuery {
        /// The file (or label) the text came from.
        path: String,
    },
}

/// One process holding GPU memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GpuProcess {
    /// Operating-system process id (on the GPU host).
    pub pid: u32,
    /// GPU memory the process holds, bytes; `None` when the driver does not say (`N/A`, WDDM).
    pub used_bytes: Option<u64>,
    /// Process name or command as reported; `None` when unknown.
    pub name: Option<String>,
}

/// The most memory a GPU figure may claim: 1 PiB (2^50 bytes). A larger figure in a file is a
/// damaged or hand-edited snapshot and is refused rather than saturated.
pub const MAX_GPU_MEMORY_BYTES: u64 = 1 << 50;

/// One GPU's identity and memory at the time of the snapshot.
///
/// Serialised with the three memory figures as `null` when [`GpuDevice::memory_reported`] is
/// false.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuDevice {
    /// GPU index as `nvidia-smi` / NVML number it (not `CUDA_VISIBLE_DEVICES` order).
    pub index: u32,
    /// Marketing name, e.g. `NVIDIA RTX PRO 6000 Blackwell Server Edition` (may be truncated with
    /// `...` in the plain table).
    pub name: String,
    /// `GPU-…` UUID when the source gives it.
    pub uuid: Option<String>,
    /// Architecture family; `None` when NVML says unknown or the name is not recognised.
    pub architecture: Option<Architecture>,
    /// Total framebuffer memory, bytes.
    pub memory_total_bytes: u64,
    /// Allocated memory, bytes, without the driver's reserve (see the crate docs).
    pub memory_used_bytes: u64,
    /// Unallocated memory, bytes. For the plain table (which prints only used/total) this is
    /// `total − used`, noted in [`GpuSnapshot::notes`]: that overstates free by the driver's
    /// reserve, which the table does not print (615 MiB on an H200).
    pub memory_free_bytes: u64,
    /// Driver/firmware reserved memory, bytes; `None` when the source does not report it.
    pub memory_reserved_bytes: Option<u64>,
    /// False when the source gave no memory figures for this GPU (`[N/A]`, `Not Supported`,
    /// NVML `NotSupported`), as unified-memory parts (NVIDIA GB10, whose GPU shares the host's
    /// LPDDR) do. The three `memory_*_bytes` figures are then 0 and mean *unknown*, never zero:
    /// use [`GpuDevice::memory_total`] and friends.
    pub memory_reported: bool,
    /// Processes holding memory on this GPU (empty when none, or when the source lists none; a
    /// failed process query is noted in [`GpuSnapshot::notes`]).
    pub processes: Vec<GpuProcess>,
}

impl GpuDevice {
    /// Total memory, bytes; `None` when not reported (unified memory).
    pub fn memory_total(&self) -> Option<u64> {
        self.memory_reported.then_some(self.memory_total_bytes)
    }
    /// Used memory, bytes; `None` when not reported.
    pub fn memory_used(&self) -> Option<u64> {
        self.memory_reported.then_some(self.memory_used_bytes)
    }
    /// Free memory, bytes; `None` when not reported.
    pub fn memory_free(&self) -> Option<u64> {
        self.memory_reported.then_some(self.memory_free_bytes)
    }
}

impl Serialize for GpuDevice {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("GpuDevice", 10)?;
        st.serialize_field("index", &self.index)?;
        st.serialize_field("name", &self.name)?;
        st.serialize_field("uuid", &self.uuid)?;
        st.serialize_field("architecture", &self.architecture)?;
        st.serialize_field("memory_total_bytes", &self.memory_total())?;
        st.serialize_field("memory_used_bytes", &self.memory_used())?;
        st.serialize_field("memory_free_bytes", &self.memory_free())?;
        st.serialize_field("memory_reserved_bytes", &self.memory_reserved_bytes)?;
        st.serialize_field("memory_reported", &self.memory_reported)?;
        st.serialize_field("processes", &self.processes)?;
        st.end()
    }
}

/// The GPUs of one host at one moment, with the driver that reported them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GpuSnapshot {
    /// Where the figures came from.
    pub source: SnapshotSource,
    /// Driver version, e.g. `580.95.05` (the table's `Driver Version` or `KMD Version`).
    pub driver_version: Option<String>,
    /// CUDA version the driver supports, e.g. `13.0` (`CUDA Version` / `CUDA UMD Version`);
    /// `None` when absent or `Not Found`.
    pub cuda_version: Option<String>,
    /// The GPUs, in index order as reported.
    pub devices: Vec<GpuDevice>,
    /// Things the reader could not take at face value: derived figures, lines it skipped (with
    /// their line numbers), NVML queries that failed. Empty when everything was read directly.
    pub notes: Vec<String>,
}

impl GpuSnapshot {
    /// Smallest total memory over the devices that report it, bytes (`None` without any). SGLang
    /// sizes the KV pool on the minimum over TP ranks, so this is the per-rank figure to use.
    pub fn min_total_bytes(&self) -> Option<u64> {
        self.devices
            .iter()
            .filter_map(GpuDevice::memory_total)
            .min()
    }

    /// Smallest free memory over the devices that report it, bytes (`None` without any).
    pub fn min_free_bytes(&self) -> Option<u64> {
        self.devices.iter().filter_map(GpuDevice::memory_free).min()
    }

    /// The device with this index, if present.
    pub fn device(&self, index: u32) -> Option<&GpuDevice> {
        self.devices.iter().find(|d| d.index == index)
    }
}

/// Everything that can go wrong getting a [`GpuSnapshot`].
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// NVML could not be used at all: the library is missing (`LibloadingError`), a symbol is
    /// missing (`FailedToLoadSymbol`), the kernel driver is not loaded, permission was refused, or
    /// no GPU is visible. `reason` is one line. Callers carry on without live GPU data.
    #[error("GPU data unavailable: {reason}")]
    GpuUnavailable {
        /// One-line human reason.
        reason: String,
    },
    /// NVML loaded, but a query that the snapshot cannot do without failed (e.g. `GpuLost`).
    #[error("NVML {call} failed for GPU {index}: {reason}")]
    Nvml {
        /// The NVML call, e.g. `nvmlDeviceGetMemoryInfo_v2`.
        call: &'static str,
        /// GPU index.
        index: u32,
        /// NVML's error, one line.
        reason: String,
    },
    /// A line of an `nvidia-smi` file could not be read.
    #[error("{path}:{line}: {message}")]
    Parse {
        /// File (or label) of the text.
        path: String,
        /// 1-based line number.
        line: usize,
        /// What was wrong.
        message: String,
    },
    /// An `nvidia-smi -q` file without any `FB Memory Usage` section (e.g. `-q -d PERFORMANCE`).
    /// The GPUs it lists and the driver version are reported so the user sees what was there.
    #[error(
        "{path}:{line}: nvidia-smi -q output lists {gpus_listed} GPU(s) but no 'FB Memory Usage' section; \
         rerun as 'nvidia-smi -q -d MEMORY' or use --query-gpu CSV"
    )]
    NoMemoryFigures {
        /// File (or label) of the text.
        path: String,
        /// 1-based line of the first GPU block (or 1 if none).
        line: usize,
        /// GPU blocks (`GPU 00000000:…`) found.
        gpus_listed: usize,
        /// `Attached GPUs` value when present.
        attached_gpus: Option<u32>,
        /// `Driver Version` value when present.
        driver_version: Option<String>,
    },
    /// The text is not one of the recognised `nvidia-smi` formats, or holds no GPU.
    #[error("{path}: {message}")]
    UnknownFormat {
        /// File (or label) of the text.
        path: String,
        /// What was expected.
        message: String,
    },
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The path given.
        path: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}
