//! Lines that tell serving ended or was blocked, counted as the log is read: PyTorch's NCCL
//! watchdog, a device out of memory, SGLang's slow-pass tracer and health check, the HTTP
//! server's error answers to health probes, and HiCache's storage-tier prefetches
//! (`sglang_log::alarms`).

use serde::Serialize;
use sglang_log::{Event, HiCacheLine, NcclKind};

use super::Loc;
use super::events::FailureLines;

/// The first collective that timed out (`Watchdog caught collective operation timeout`).
#[derive(Clone, Debug, Serialize)]
pub struct CollectiveTimeout {
    /// `OpType` (`ALLREDUCE`, `ALLGATHER`, `BROADCAST`).
    pub op: Option<String>,
    /// The global rank that printed it.
    pub rank: Option<u32>,
    /// The collective's timeout (`Timeout(ms)`). Unit: milliseconds.
    pub timeout_ms: Option<u64>,
    /// How long it ran before the watchdog gave up. Unit: milliseconds.
    pub ran_ms: Option<u64>,
}

/// The first out-of-memory line's figures.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OomFigures {
    /// The device kind as printed (`CUDA`, `HIP`, `NPU`).
    pub device: String,
    /// What the allocation asked for. Unit: bytes.
    pub tried_bytes: Option<u64>,
    /// What the device had free. Unit: bytes.
    pub free_bytes: Option<u64>,
    /// The device's capacity. Unit: bytes.
    pub total_bytes: Option<u64>,
}

/// `slow scheduler pass` lines (`SGLANG_DEBUG_SLOW_SCHEDULER_PASS_MS`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct SlowPasses {
    /// Lines (all ranks).
    pub count: u64,
    /// The first one.
    pub first: Option<Loc>,
    /// The longest pass. Unit: milliseconds.
    pub max_ms: Option<f64>,
    /// The label of the longest pass.
    pub max_label: Option<String>,
    /// The tracer's threshold. Unit: milliseconds.
    pub threshold_ms: Option<f64>,
}

/// HiCache's storage-tier prefetches.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct HiCachePrefetches {
    /// The storage backend (`Creating storage backend 'NAME'`).
    pub backend: Option<String>,
    /// `Prefetching N pages for request …` lines.
    pub started: u64,
    /// `Prefetch … completed with N tokens` lines.
    pub completed: u64,
    /// Of those, the ones that loaded nothing (`with 0 tokens`).
    pub completed_empty: u64,
    /// Tokens the completed prefetches loaded. Unit: tokens.
    pub tokens_loaded: u64,
    /// `Revoking prefetch … due to insufficient hits` lines: the storage held too little.
    pub revoked: u64,
    /// The first prefetch line.
    pub first: Option<Loc>,
}

/// Every alarm line of one server run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Alarms {
    /// NCCL collective timeouts (all ranks).
    pub collective_timeouts: FailureLines,
    /// The first collective timeout's figures.
    pub first_collective_timeout: Option<CollectiveTimeout>,
    /// The NCCL watchdog taking a process down after a failed collective.
    pub nccl_taken_down: FailureLines,
    /// Out-of-memory lines (a traceback's last line, or logged).
    pub out_of_memory: FailureLines,
    /// The first out-of-memory line's figures.
    pub first_oom: Option<OomFigures>,
    /// Slow scheduler passes.
    pub slow_passes: SlowPasses,
    /// `Health check failed. Server couldn't get a response from detokenizer …` lines.
    pub health_check_failures: FailureLines,
    /// `/health` or `/health_generate` probes answered 503 (access lines).
    pub health_unavailable: FailureLines,
    /// Of those, the ones after the server said it was ready (`The server is fired up and
    /// ready to roll!`): answered 503 while serving, not during start-up and warm-up, when
    /// `/health` answers 503 by design.
    pub health_unavailable_serving: FailureLines,
    /// HiCache storage-tier prefetches.
    pub hicache: HiCachePrefetches,
}

impl Alarms {
    /// Takes one record's event at `loc`; `serving`: the server said it was ready before it.
    /// Events that are no alarm change nothing.
    pub(super) fn note(&mut self, loc: Loc, event: &Event<'_>, message: &str, serving: bool) {
        match event {
            Event::Nccl(n) => match n.kind {
                NcclKind::CollectiveTimeout => {
                    self.collective_timeouts.note(loc, message);
                    self.first_collective_timeout
                        .get_or_insert_with(|| CollectiveTimeout {
                            op: n.op.map(str::to_string),
                            rank: n.rank,
                            timeout_ms: n.timeout_ms,
                            ran_ms: n.ran_ms,
                        });
                }
                NcclKind::ProcessTakenDown => self.nccl_taken_down.note(loc, message),
                NcclKind::Shutdown | NcclKind::Other => {}
            },
            Event::OutOfMemory(m) => {
                self.out_of_memory.note(loc, message);
                self.first_oom.get_or_insert_with(|| OomFigures {
                    device: m.device.to_string(),
                    tried_bytes: m.tried_bytes,
                    free_bytes: m.free_bytes,
                    total_bytes: m.total_bytes,
                });
            }
            Event::SlowSchedulerPass(p) => {
                let s = &mut self.slow_passes;
                s.count += 1;
                s.first.get_or_insert(loc);
                s.threshold_ms = s.threshold_ms.or(p.threshold_ms);
                if let Some(ms) = p.took_ms
                    && s.max_ms.is_none_or(|m| ms > m)
                {
                    s.max_ms = Some(ms);
                    s.max_label = Some(p.label.chars().take(80).collect());
                }
            }
            Event::HealthCheckFailed(_) => self.health_check_failures.note(loc, message),
            Event::HttpAccess(a) if a.status == 503 && a.path.starts_with("/health") => {
                self.health_unavailable.note(loc, message);
                if serving {
                    self.health_unavailable_serving.note(loc, message);
                }
            }
            Event::HiCache(h) => {
                let c = &mut self.hicache;
                match h {
                    HiCacheLine::StorageBackend(name) => {
                        c.backend
                            .get_or_insert_with(|| name.chars().take(40).collect());
                        return;
                    }
                    HiCacheLine::PrefetchStarted { .. } => c.started += 1,
                    HiCacheLine::PrefetchDone { tokens } => {
                        c.completed += 1;
                        let t = tokens.unwrap_or(0);
                        c.tokens_loaded = c.tokens_loaded.saturating_add(t);
                        c.completed_empty += u64::from(t == 0);
                    }
                    HiCacheLine::PrefetchRevoked { .. } => c.revoked += 1,
                }
                c.first.get_or_insert(loc);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sglang_log::parse_line;

    fn alarms(lines: &[&str]) -> Alarms {
        let mut a = Alarms::default();
        for (i, l) in lines.iter().enumerate() {
            let rec = parse_line(l.as_bytes(), i as u64 + 1);
            a.note(
                Loc {
                    source: 0,
                    line: rec.line_no,
                },
                &rec.event,
                rec.message,
                rec.line_no > 3,
            );
        }
        a
    }

    #[test]
    fn health_probes_answered_503_are_counted_and_200_not() {
        // real-long/ascend-qwen3next-80b-hybrid-mamba.log:497-500 (503s while the server
        // starts), then an answered probe
        let a = alarms(&[
            "[2026-01-04 07:35:49] INFO:     127.0.0.1:46484 - \"GET /health_generate HTTP/1.1\" 503 Service Unavailable",
            "[2026-01-04 07:35:49] INFO:     127.0.0.1:52992 - \"GET /health_generate HTTP/1.1\" 503 Service Unavailable",
            "[2026-01-04 07:36:49] INFO:     127.0.0.1:52994 - \"GET /health_generate HTTP/1.1\" 200 OK",
            "[2026-01-04 07:36:50] INFO:     127.0.0.1:52998 - \"POST /generate HTTP/1.1\" 503 Service Unavailable",
        ]);
        assert_eq!(a.health_unavailable.count, 2);
        assert_eq!(a.health_unavailable.first.map(|l| l.line), Some(1));
        // (the test calls lines after the third "serving": none of these two)
        assert_eq!(a.health_unavailable_serving.count, 0);
    }

    #[test]
    fn hicache_prefetches_of_a_real_log() {
        // real-2/104 (HiCache with a Mooncake store), lines 12, 70, 105, 106, 108
        let a = alarms(&[
            "[2026-02-09 14:38:38] Creating storage backend 'mooncake' (sglang.srt.mem_cache.storage.mooncake_store.mooncake_store.MooncakeStore)",
            "[2026-02-09 14:45:22] Prefetch 2547616e604d4756af454a269cb783fb completed with 0 tokens",
            "[2026-02-09 14:45:22] Prefetch 9b956e2796094b30b65bd7b1465a5a80 completed with 0 tokens",
            "[2026-02-09 14:45:22] Prefetching 24316 pages for request 2547616e604d4756af454a269cb783fb.",
            "[2026-02-09 14:45:22] Revoking prefetch for request 9b956e2796094b30b65bd7b1465a5a80 due to insufficient hits (9).",
        ]);
        let h = &a.hicache;
        assert_eq!(h.backend.as_deref(), Some("mooncake"));
        assert_eq!((h.started, h.completed, h.completed_empty), (1, 2, 2));
        assert_eq!((h.tokens_loaded, h.revoked), (0, 1));
        assert_eq!(h.first.map(|l| l.line), Some(2));
    }

    #[test]
    fn collective_timeout_slow_pass_and_oom() {
        let a = alarms(&[
            "[rank0]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST, NumelIn=131072000, NumelOut=131072000, Timeout(ms)=600000) ran for 600081 milliseconds before timing out.",
            "[rank0]:[W913 16:10:17.041066816 ProcessGroupNCCL.cpp:1624] Warning: WARNING: destroy_process_group() was not called before program exit, which can leak resources.",
            "[2026-03-01 10:00:00 TP0] slow scheduler pass: event_loop_overlap took 812.4ms (>= 500.0ms; thread stacks were dumped to stderr by the faulthandler watchdog)",
            "[2026-03-01 10:00:01 TP0] slow scheduler pass: recv_requests took 1500.0ms (>= 500.0ms; thread stacks were dumped to stderr by the faulthandler watchdog)",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 256.00 MiB. GPU 0 has a total capacity of 31.86 GiB of which 70.00 MiB is free.",
        ]);
        assert_eq!(a.collective_timeouts.count, 1);
        let t = a.first_collective_timeout.as_ref().unwrap();
        assert_eq!(
            (t.op.as_deref(), t.timeout_ms, t.ran_ms),
            (Some("BROADCAST"), Some(600_000), Some(600_081))
        );
        assert_eq!(a.nccl_taken_down.count, 0);
        assert_eq!(a.slow_passes.count, 2);
        assert_eq!(a.slow_passes.max_ms, Some(1500.0));
        assert_eq!(a.slow_passes.max_label.as_deref(), Some("recv_requests"));
        assert_eq!(a.out_of_memory.count, 1);
        assert_eq!(
            a.first_oom.as_ref().and_then(|o| o.tried_bytes),
            Some(256 << 20)
        );
    }
}
