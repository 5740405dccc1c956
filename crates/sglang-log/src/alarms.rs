//! Lines that tell serving ended or was blocked, beyond SGLang's own scheduler lines: a device
//! out of memory, PyTorch's NCCL watchdog, SGLang's slow-pass tracer and health check, and the
//! HiCache prefetch lines that say whether the storage tier helped.
//!
//! - Out of memory (PyTorch's allocator, `c10/cuda/CUDACachingAllocator.cpp`; the same text
//!   from `torch_npu` and ROCm with `NPU` / `HIP`): `torch.OutOfMemoryError: CUDA out of memory.
//!   Tried to allocate 256.00 MiB. GPU 0 has a total capacity of 31.86 GiB of which 70.00 MiB is
//!   free. …` (torch ≥ 2.1), `torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate
//!   2.00 GiB (GPU 0; 79.15 GiB total capacity; …; 1.20 GiB free; …)` (torch 1.13 – 2.0),
//!   `RuntimeError: CUDA out of memory. …` (older), `RuntimeError: CUDA error: out of memory`.
//! - NCCL (PyTorch `ProcessGroupNCCL.cpp`): `[Rank 0] Watchdog caught collective operation
//!   timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST, …, Timeout(ms)=600000) ran for 600081
//!   milliseconds before timing out.`; `Some NCCL operations have failed or timed out. … To
//!   avoid data inconsistency, we are taking the entire process down.`; at exit
//!   `destroy_process_group() was not called before program exit` and `Waiting for pending NCCL
//!   work to finish before starting destroy_process_group()`.
//! - `slow scheduler pass: LABEL took X.Xms (>= Y.Yms; thread stacks were dumped to stderr by
//!   the faulthandler watchdog)` (SGLang's slow-pass tracer, on with
//!   `SGLANG_DEBUG_SLOW_SCHEDULER_PASS_MS`).
//! - `Health check failed. Server couldn't get a response from detokenizer for last 20
//!   seconds. tic start time: …` (`entrypoints/http_server.py` `health_generate`: `/health`
//!   then answers 503).
//! - HiCache's storage tier (`mem_cache/hiradix_cache.py`, `managers/cache_controller.py`;
//!   debug level upstream, info in some builds): `Prefetching N pages for request RID.`,
//!   `Prefetch RID completed with N tokens`, `Revoking prefetch for request RID due to
//!   insufficient hits (N).`, and at start-up `Creating storage backend 'NAME' (…)`.
//!
//! Every parser here is a small grammar over the message bytes; none allocates.

use crate::grammar::{PResult, byte, find, until};
use crate::num::{parse_f64_bytes, parse_u64_bytes};
use nom::Parser;
use nom::bytes::complete::{tag, take_while1};
use nom::combinator::opt;
use nom::sequence::preceded;

/// A device ran out of memory (PyTorch's caching allocator message).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OutOfMemory<'a> {
    /// The device kind as printed: `CUDA`, `HIP`, `NPU`, `XPU`.
    pub device: &'a str,
    /// `Tried to allocate X`. Unit: bytes.
    pub tried_bytes: Option<u64>,
    /// `GPU N`: the device index.
    pub gpu: Option<u32>,
    /// `has a total capacity of X` / `X total capacity`. Unit: bytes.
    pub total_bytes: Option<u64>,
    /// `of which X is free` / `X free`. Unit: bytes.
    pub free_bytes: Option<u64>,
}

/// The exception heads an out-of-memory line starts with.
const OOM_HEADS: [&str; 5] = [
    "torch.OutOfMemoryError: ",
    "torch.cuda.OutOfMemoryError: ",
    "OutOfMemoryError: ",
    "RuntimeError: ",
    "torch.AcceleratorError: ",
];

/// A size with its binary unit (`256.00 MiB`, `31.86 GiB`, `512 bytes`), in bytes.
fn size(i: &[u8]) -> PResult<'_, u64> {
    let (i, n) = take_while1(|c: u8| c.is_ascii_digit() || c == b'.').parse(i)?;
    let (i, _) = opt(byte(b' ')).parse(i)?;
    let (i, unit) = take_while1(|c: u8| c.is_ascii_alphabetic()).parse(i)?;
    let scale: f64 = match unit {
        b"B" | b"bytes" => 1.0,
        b"KiB" | b"KB" => 1024.0,
        b"MiB" | b"MB" => 1024.0 * 1024.0,
        b"GiB" | b"GB" => 1024.0 * 1024.0 * 1024.0,
        b"TiB" | b"TB" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return Err(nom::Err::Error(())),
    };
    match parse_f64_bytes(n).map(|v| v * scale) {
        Some(b) if b.is_finite() && b >= 0.0 && b < u64::MAX as f64 => Ok((i, b as u64)),
        _ => Err(nom::Err::Error(())),
    }
}

/// The size right after `label` somewhere in `b`.
fn size_after(b: &[u8], label: &[u8]) -> Option<u64> {
    let at = find(b, label)? + label.len();
    size(&b[at..]).ok().map(|(_, v)| v)
}

/// Reads an out-of-memory line (see the module doc), `None` when `msg` is none.
pub fn parse_out_of_memory(msg: &str) -> Option<OutOfMemory<'_>> {
    let body = OOM_HEADS.iter().find_map(|h| msg.strip_prefix(h))?;
    let b = body.as_bytes();
    // `CUDA out of memory.` / `CUDA error: out of memory`
    let (_, device) = take_while1::<_, _, ()>(|c: u8| c.is_ascii_uppercase())
        .parse(b)
        .ok()?;
    let after = &b[device.len()..];
    if !(after.starts_with(b" out of memory") || after.starts_with(b" error: out of memory")) {
        return None;
    }
    let gpu = find(b, b"GPU ").and_then(|p| {
        let d = &b[p + 4..];
        let n = d.iter().take_while(|c| c.is_ascii_digit()).count();
        parse_u64_bytes(&d[..n]).and_then(|v| u32::try_from(v).ok())
    });
    // torch ≥ 2.1: `total capacity of X of which Y is free`; before: `(GPU 0; X total
    // capacity; …; Y free; …)`
    let total_bytes = size_after(b, b"total capacity of ").or_else(|| {
        let p = find(b, b" total capacity")?;
        let start = b[..p].iter().rposition(|&c| c == b';' || c == b'(')? + 1;
        size(b[start..p].trim_ascii_start()).ok().map(|(_, v)| v)
    });
    let free_bytes = size_after(b, b"of which ").or_else(|| {
        let p = find(b, b" free;")?;
        let start = b[..p].iter().rposition(|&c| c == b';')? + 1;
        size(b[start..p].trim_ascii_start()).ok().map(|(_, v)| v)
    });
    Some(OutOfMemory {
        device: std::str::from_utf8(device).ok()?,
        tried_bytes: size_after(b, b"Tried to allocate "),
        gpu,
        total_bytes,
        free_bytes,
    })
}

/// What an NCCL line of PyTorch's process group says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NcclKind {
    /// `Watchdog caught collective operation timeout`: a collective (all-reduce, all-gather,
    /// broadcast) did not finish within its timeout: a rank hung or died.
    CollectiveTimeout,
    /// `Some NCCL operations have failed or timed out` / `taking the entire process down`: the
    /// watchdog ends the process after a failed collective.
    ProcessTakenDown,
    /// At exit: `destroy_process_group() was not called` / `Waiting for pending NCCL work to
    /// finish`: the process is stopping, not failing.
    Shutdown,
    /// Any other line of `ProcessGroupNCCL`, or `Waiting for pending NCCL work to finish before
    /// starting graph capture` (a warning of no consequence by itself).
    Other,
}

/// A line of PyTorch's NCCL process group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NcclLine<'a> {
    /// What it says.
    pub kind: NcclKind,
    /// `[Rank N]`: the global rank that printed it.
    pub rank: Option<u32>,
    /// `OpType=…` of a timed-out collective (`ALLREDUCE`, `ALLGATHER`, `BROADCAST`).
    pub op: Option<&'a str>,
    /// `Timeout(ms)=N`. Unit: milliseconds.
    pub timeout_ms: Option<u64>,
    /// `ran for N milliseconds`. Unit: milliseconds.
    pub ran_ms: Option<u64>,
}

/// The number after `label` in `b`.
fn u64_after(b: &[u8], label: &[u8]) -> Option<u64> {
    let at = find(b, label)? + label.len();
    let d = &b[at..];
    let n = d.iter().take_while(|c| c.is_ascii_digit()).count();
    parse_u64_bytes(&d[..n])
}

/// Reads a line of PyTorch's NCCL process group (see the module doc), `None` when `msg` says
/// nothing of NCCL.
pub fn parse_nccl(msg: &str) -> Option<NcclLine<'_>> {
    let b = msg.as_bytes();
    let timeout = find(b, b"Watchdog caught collective operation timeout").is_some();
    let kind = if timeout {
        NcclKind::CollectiveTimeout
    } else if find(b, b"Some NCCL operations have failed or timed out").is_some()
        || find(b, b"taking the entire process down").is_some()
    {
        NcclKind::ProcessTakenDown
    } else if find(b, b"destroy_process_group()").is_some() {
        NcclKind::Shutdown
    } else if find(b, b"ProcessGroupNCCL").is_some() || find(b, b"pending NCCL work").is_some() {
        NcclKind::Other
    } else {
        return None;
    };
    let op = find(b, b"OpType=").and_then(|p| {
        let d = &msg[p + "OpType=".len()..];
        let n = d
            .bytes()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == b'_')
            .count();
        (n > 0).then(|| &d[..n])
    });
    Some(NcclLine {
        kind,
        rank: u64_after(b, b"[Rank ").and_then(|r| u32::try_from(r).ok()),
        op,
        timeout_ms: u64_after(b, b"Timeout(ms)="),
        ran_ms: u64_after(b, b"ran for "),
    })
}

/// `slow scheduler pass: LABEL took X.Xms (>= Y.Yms; …)`: one scheduler pass took longer than
/// `SGLANG_DEBUG_SLOW_SCHEDULER_PASS_MS`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlowPass<'a> {
    /// Which pass (the tracer's label).
    pub label: &'a str,
    /// How long it took. Unit: milliseconds.
    pub took_ms: Option<f64>,
    /// The tracer's threshold. Unit: milliseconds.
    pub threshold_ms: Option<f64>,
}

/// A number of milliseconds (`12.5ms`).
fn millis(i: &[u8]) -> PResult<'_, Option<f64>> {
    let (i, n) = take_while1(|c: u8| c.is_ascii_digit() || c == b'.').parse(i)?;
    let (i, _) = tag(&b"ms"[..]).parse(i)?;
    Ok((i, parse_f64_bytes(n).filter(|v| v.is_finite() && *v >= 0.0)))
}

/// Reads a slow-pass line (the message must start with `slow scheduler pass: `).
pub fn parse_slow_pass(msg: &str) -> Option<SlowPass<'_>> {
    let body = msg.strip_prefix("slow scheduler pass: ")?;
    let (label, rest) = body.split_once(" took ")?;
    let rest = rest.as_bytes();
    let (rest, took_ms) = millis(rest).ok()?;
    let threshold_ms = preceded(tag(&b" (>= "[..]), millis)
        .parse(rest)
        .ok()
        .and_then(|(_, v)| v);
    Some(SlowPass {
        label,
        took_ms,
        threshold_ms,
    })
}

/// Reads `Health check failed. … for last N seconds. …`: `Some(N)` (seconds, when printed)
/// inside `Some`; `None` when `msg` is no such line.
pub fn parse_health_check_failed(msg: &str) -> Option<Option<u64>> {
    let body = msg.strip_prefix("Health check failed.")?;
    let secs = preceded(until(b"for last "), tag(&b"for last "[..]))
        .parse(body.as_bytes())
        .ok()
        .and_then(|(d, _)| {
            let n = d.iter().take_while(|c| c.is_ascii_digit()).count();
            parse_u64_bytes(&d[..n])
        });
    Some(secs)
}

/// A HiCache storage-tier line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HiCacheLine<'a> {
    /// `Prefetching N pages for request RID.`: a prefetch from the storage tier started.
    PrefetchStarted {
        /// Pages asked for (as printed; some builds print tokens here).
        pages: Option<u64>,
    },
    /// `Prefetch RID completed with N tokens`: a prefetch ended with N tokens loaded into the
    /// host pool (0: nothing was found or it was revoked).
    PrefetchDone {
        /// Tokens loaded.
        tokens: Option<u64>,
    },
    /// `Revoking prefetch for request RID due to insufficient hits (N).`: the storage held
    /// fewer tokens than the prefetch threshold, so nothing was loaded.
    PrefetchRevoked {
        /// Tokens the storage held (`storage_hit_count`), when printed.
        hits: Option<u64>,
    },
    /// `Creating storage backend 'NAME' (…)`: the storage tier (`mooncake`, `file`, `hf3fs`,
    /// `nixl`, …).
    StorageBackend(&'a str),
}

/// Reads a HiCache storage-tier line (see the module doc).
pub fn parse_hicache_line(msg: &str) -> Option<HiCacheLine<'_>> {
    let b = msg.as_bytes();
    if let Some(rest) = msg.strip_prefix("Prefetching ") {
        find(rest.as_bytes(), b" pages for request ")?;
        return Some(HiCacheLine::PrefetchStarted {
            pages: u64_after(b, b"Prefetching "),
        });
    }
    if msg.starts_with("Prefetch ") {
        find(b, b" completed with ")?;
        return Some(HiCacheLine::PrefetchDone {
            tokens: u64_after(b, b" completed with "),
        });
    }
    if msg.starts_with("Revoking prefetch for request ") {
        return Some(HiCacheLine::PrefetchRevoked {
            hits: u64_after(b, b"insufficient hits ("),
        });
    }
    if let Some(rest) = msg.strip_prefix("Creating storage backend '") {
        let name = rest.split_once('\'')?.0;
        return Some(HiCacheLine::StorageBackend(name));
    }
    None
}

/// `SWAKVPool mem usage: X GB, swa size: N, full size: M` (hybrid sliding-window pools, the
/// wording of `mem_cache/swa_memory_pool.py`): (full tokens, swa tokens).
pub(crate) fn parse_swa_kv_pool(msg: &str) -> (Option<u64>, Option<u64>) {
    let b = msg.as_bytes();
    (u64_after(b, b"full size: "), u64_after(b, b"swa size: "))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    #[test]
    fn oom_of_torch_2() {
        // real-2/107 (AMD R9700, weight load), line 81
        let m = parse_out_of_memory("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 256.00 MiB. GPU 0 has a total capacity of 31.86 GiB of which 70.00 MiB is free. Of the allocated memory 30.9 GiB is allocated by PyTorch").unwrap();
        assert_eq!(m.device, "CUDA");
        assert_eq!(m.tried_bytes, Some(256 * MIB));
        assert_eq!(m.gpu, Some(0));
        assert_eq!(m.total_bytes, Some((31.86 * 1024.0 * MIB as f64) as u64));
        assert_eq!(m.free_bytes, Some(70 * MIB));
    }

    #[test]
    fn oom_of_older_torch_and_other_devices() {
        let m = parse_out_of_memory("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 1; 79.15 GiB total capacity; 75.10 GiB already allocated; 1.20 GiB free; 76.00 GiB reserved in total by PyTorch)").unwrap();
        assert_eq!(m.gpu, Some(1));
        assert_eq!(m.tried_bytes, Some(2048 * MIB));
        assert_eq!(m.total_bytes, Some((79.15 * 1024.0 * MIB as f64) as u64));
        assert_eq!(m.free_bytes, Some((1.2 * 1024.0 * MIB as f64) as u64));
        let npu =
            parse_out_of_memory("RuntimeError: NPU out of memory. Tried to allocate 1.00 GiB")
                .unwrap();
        assert_eq!(npu.device, "NPU");
        let bare = parse_out_of_memory("RuntimeError: CUDA error: out of memory").unwrap();
        assert_eq!((bare.device, bare.tried_bytes), ("CUDA", None));
        // an exception of another kind, or another sentence, is none
        assert_eq!(
            parse_out_of_memory(
                "RuntimeError: CUDA error: an illegal memory access was encountered"
            ),
            None
        );
        assert_eq!(
            parse_out_of_memory("KV cache pool is full. Retract requests."),
            None
        );
        assert_eq!(
            parse_out_of_memory(
                "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."
            ),
            None
        );
    }

    #[test]
    fn nccl_collective_timeout() {
        // PyTorch's watchdog, as printed after the c10 prefix (`[rank0]:[E1218 … ProcessGroupNCCL.cpp:629] `)
        let l = parse_nccl("[rank0]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST, NumelIn=131072000, NumelOut=131072000, Timeout(ms)=600000) ran for 600081 milliseconds before timing out.").unwrap();
        assert_eq!(l.kind, NcclKind::CollectiveTimeout);
        assert_eq!(l.rank, Some(0));
        assert_eq!(l.op, Some("BROADCAST"));
        assert_eq!(l.timeout_ms, Some(600_000));
        assert_eq!(l.ran_ms, Some(600_081));
    }

    #[test]
    fn nccl_exit_lines_are_shutdown() {
        // real-long/rtx4090-qwen3-4b-kv-retraction.log:671
        let l = parse_nccl("[rank0]:[W913 16:10:17.041066816 ProcessGroupNCCL.cpp:1624] Warning: WARNING: destroy_process_group() was not called before program exit, which can leak resources.").unwrap();
        assert_eq!(
            (l.kind, l.rank, l.timeout_ms),
            (NcclKind::Shutdown, None, None)
        );
        let down = parse_nccl("[Rank 3] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.").unwrap();
        assert_eq!(
            (down.kind, down.rank),
            (NcclKind::ProcessTakenDown, Some(3))
        );
        assert_eq!(
            parse_nccl("[Gloo] Rank 0 is connected to 1 peer ranks."),
            None
        );
    }

    #[test]
    fn slow_pass() {
        // the tracer's format string (`managers/scheduler` slow-pass tracer)
        let p = parse_slow_pass("slow scheduler pass: event_loop_overlap took 812.4ms (>= 500.0ms; thread stacks were dumped to stderr by the faulthandler watchdog)").unwrap();
        assert_eq!(p.label, "event_loop_overlap");
        assert_eq!(p.took_ms, Some(812.4));
        assert_eq!(p.threshold_ms, Some(500.0));
        assert_eq!(parse_slow_pass("slow scheduler pass: x"), None);
        assert_eq!(parse_slow_pass("a slow scheduler pass: x took 1ms"), None);
    }

    #[test]
    fn health_check() {
        assert_eq!(
            parse_health_check_failed(
                "Health check failed. Server couldn't get a response from detokenizer for last 20 seconds. tic start time: 10:47:07. last_heartbeat time: 09:44:42"
            ),
            Some(Some(20))
        );
        assert_eq!(
            parse_health_check_failed("Health check failed."),
            Some(None)
        );
        assert_eq!(parse_health_check_failed("Health check passed"), None);
    }

    #[test]
    fn hicache_prefetch_lines() {
        // real-2/104 (HiCache + Mooncake), lines 106, 105, 108 and 12
        assert_eq!(
            parse_hicache_line(
                "Prefetching 24316 pages for request 2547616e604d4756af454a269cb783fb."
            ),
            Some(HiCacheLine::PrefetchStarted { pages: Some(24316) })
        );
        assert_eq!(
            parse_hicache_line("Prefetch 9b956e2796094b30b65bd7b1465a5a80 completed with 0 tokens"),
            Some(HiCacheLine::PrefetchDone { tokens: Some(0) })
        );
        assert_eq!(
            parse_hicache_line(
                "Revoking prefetch for request 9b956e2796094b30b65bd7b1465a5a80 due to insufficient hits (9)."
            ),
            Some(HiCacheLine::PrefetchRevoked { hits: Some(9) })
        );
        assert_eq!(
            parse_hicache_line(
                "Creating storage backend 'mooncake' (sglang.srt.mem_cache.storage.mooncake_store.mooncake_store.MooncakeStore)"
            ),
            Some(HiCacheLine::StorageBackend("mooncake"))
        );
        // the user's own debug prints in the same log are not SGLang's
        assert_eq!(parse_hicache_line("Prefetch function"), None);
        assert_eq!(parse_hicache_line("Prefetching tokens: 7"), None);
    }

    #[test]
    fn swa_kv_pool() {
        // real-4/100 (DGX Spark, SWA model), line 13
        assert_eq!(
            parse_swa_kv_pool("SWAKVPool mem usage: 28.93 GB, swa size: 148717, full size: 185897"),
            (Some(185897), Some(148717))
        );
    }
}
