//! Shared helpers for the integration tests.
#![allow(dead_code)]

use sglang_log::{Event, Record, parse_line};
use std::path::PathBuf;

/// `tests/data` at the workspace root.
pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data")
}

/// Files in `dir` whose name ends in `suffix`, sorted.
pub fn files_in(dir: &str, suffix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(data_dir().join(dir))
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    v.sort();
    v
}

/// Formats a float with up to 6 decimals, trailing zeros removed.
pub fn f(v: f64) -> String {
    let s = format!("{v:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() || s == "-" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// A compact, deterministic rendering of a record used by the `check` tables.
pub fn render(rec: &Record<'_>) -> String {
    let mut out = String::new();
    let head = match &rec.event {
        Event::Batch(b) => format!("{:?}", b.kind).to_lowercase(),
        e => e.name().to_string(),
    };
    out.push_str(&head);
    if let Some(t) = rec.timestamp {
        out.push_str(&format!(" @{t}"));
    }
    if !rec.ranks.is_empty() {
        out.push_str(&format!(" [{}]", rec.ranks));
    }
    let mut kv = |k: &str, v: Option<String>| {
        if let Some(v) = v {
            out.push_str(&format!(" {k}={v}"));
        }
    };
    match &rec.event {
        Event::Batch(b) => {
            kv("iter", b.iter.map(|v| v.to_string()));
            kv("running", b.running_req().map(|v| v.to_string()));
            kv("queue", b.queue_req().map(|v| v.to_string()));
            kv("token", b.num_token().map(|v| v.to_string()));
            kv("swa_token", b.num_swa_token().map(|v| v.to_string()));
            kv("usage", b.token_usage().map(f));
            kv("swa_usage", b.swa_token_usage().map(f));
            kv("mamba_num", b.mamba_num().map(|v| v.to_string()));
            kv("mamba_usage", b.mamba_usage().map(f));
            kv("gen", b.gen_throughput().map(f));
            kv("input", b.input_throughput().map(f));
            kv("new_seq", b.new_seq().map(|v| v.to_string()));
            kv("new_token", b.new_token().map(|v| v.to_string()));
            kv("cached", b.cached_token().map(|v| v.to_string()));
            kv("hit", b.cache_hit_rate().map(f));
            kv("pending", b.pending_token().map(|v| v.to_string()));
            kv("accept_len", b.accept_len().map(f));
            kv("accept_rate", b.accept_rate().map(f));
            kv("cap_len", b.cap_len().map(f));
            kv(
                "graph",
                b.graph()
                    .map(|g| format!("{}:{g}", b.graph_device().unwrap_or("?"))),
            );
            kv("prealloc_usage", b.pre_allocated_usage().map(f));
            kv("prealloc", b.prealloc_req().map(|v| v.to_string()));
            kv("bootstrap", b.bootstrap_req().map(|v| v.to_string()));
            kv("transfer", b.transfer_req().map(|v| v.to_string()));
            kv("retracted", b.retracted_req().map(|v| v.to_string()));
            kv("inflight", b.inflight_req().map(|v| v.to_string()));
            kv("optimistic", b.optimistic_req().map(|v| v.to_string()));
            kv("tflops", b.est_tflops_per_gpu().map(f));
            kv("read_bw", b.est_read_bw_gbps().map(f));
            kv("write_bw", b.est_write_bw_gbps().map(f));
            kv(
                "occupancy",
                b.fwd_occupancy().map(|o| match o {
                    sglang_log::FwdOccupancy::Busy(x) => f(x),
                    sglang_log::FwdOccupancy::Idle => "idle".to_string(),
                }),
            );
            kv("ts_field", b.timestamp_field().map(|t| t.to_string()));
            let unknown: Vec<String> = b
                .unknown_fields()
                .map(|(k, v)| format!("{k}:{v}"))
                .collect();
            kv("unknown", (!unknown.is_empty()).then(|| unknown.join("|")));
            kv(
                "broken",
                (b.broken_fields() > 0).then(|| b.broken_fields().to_string()),
            );
        }
        Event::Retraction(r) => {
            kv("wording", Some(format!("{:?}", r.wording)));
            kv("retracted", r.retracted_reqs.map(|v| v.to_string()));
            kv("aborted", r.aborted_retracted_reqs.map(|v| v.to_string()));
            kv("gained", r.new_tokens_gained.map(|v| v.to_string()));
            kv("mamba_gained", r.mamba_num_gained.map(|v| v.to_string()));
            kv(
                "ratio",
                match (r.new_token_ratio_before, r.new_token_ratio_after) {
                    (Some(a), Some(b)) => Some(format!("{}->{}", f(a), f(b))),
                    _ => None,
                },
            );
        }
        Event::Capacity(c) => {
            kv("max_total", c.max_total_num_tokens.map(|v| v.to_string()));
            kv("chunked", c.chunked_prefill_size.map(|v| v.to_string()));
            kv("max_prefill", c.max_prefill_tokens.map(|v| v.to_string()));
            kv("max_running", c.max_running_requests.map(|v| v.to_string()));
            kv("context", c.context_len.map(|v| v.to_string()));
            kv("avail_gb", c.available_gpu_mem_gb.map(f));
            if let Some(m) = &c.glued_memory {
                kv("glued_avail_gb", m.avail_mem_gb.map(f));
                kv("glued_usage_gb", m.mem_usage_gb.map(f));
                kv("glued_elapsed_s", m.elapsed_s.map(f));
            }
        }
        Event::KvCacheAllocated(k) => {
            kv("tokens", k.tokens.map(|v| v.to_string()));
            kv("k_gb", k.k_size_gb.map(f));
            kv("v_gb", k.v_size_gb.map(f));
            kv("kv_gb", k.kv_size_gb.map(f));
        }
        Event::LoadWeightEnd(m) | Event::MemoryPoolEnd(m) | Event::CudaGraphEnd(m) => {
            kv("avail_gb", m.avail_mem_gb.map(f));
            kv("usage_gb", m.mem_usage_gb.map(f));
            kv("elapsed_s", m.elapsed_s.map(f));
        }
        Event::GraphCapture(g) => {
            kv("stage", Some(format!("{:?}", g.stage)));
            kv("avail_gb", g.avail_gib.map(f));
            kv("max_bs", g.max_bs.map(|v| v.to_string()));
        }
        Event::ServerArgs(a) => {
            kv(
                "mem_fraction_static",
                a.get("mem_fraction_static").map(str::to_string),
            );
            kv("tp_size", a.get("tp_size").map(str::to_string));
        }
        Event::LaunchCommand(a) => {
            kv(
                "mem_fraction_static",
                a.get("mem-fraction-static").map(str::to_string),
            );
            kv("tp_size", a.get("tp-size").map(str::to_string));
        }
        Event::HiCacheAllocated {
            host_gb,
            host_tokens,
        } => {
            kv("host_gb", host_gb.map(f));
            kv("host_tokens", host_tokens.map(|v| v.to_string()));
        }
        Event::SwaPool {
            full_tokens,
            swa_tokens,
        } => {
            kv("full_tokens", full_tokens.map(|v| v.to_string()));
            kv("swa_tokens", swa_tokens.map(|v| v.to_string()));
        }
        Event::MaxRunningReset(n) => kv("max_running_requests", n.map(|v| v.to_string())),
        Event::MambaCacheAllocated(n) => kv("max_mamba_cache_size", n.map(|v| v.to_string())),
        Event::WatchdogTimeout(m)
        | Event::KvTransferFailed(m)
        | Event::SchedulerException(m)
        | Event::MoeConfigUntuned(m)
        | Event::JitCompile(m) => {
            kv("msg", Some(format!("{m:?}")));
        }
        Event::Signal(s) => kv("signal", Some(format!("{s:?}"))),
        Event::StartupTimings(t) => {
            kv("load_weight_s", t.load_weight_s.map(f));
            kv("graph_prefill_s", t.graph_prefill_s.map(f));
            kv("graph_decode_s", t.graph_decode_s.map(f));
        }
        Event::ReqTimeStats(m) => {
            if let Some(r) = sglang_log::parse_req_times(m) {
                kv("rid", Some(r.rid.to_string()));
                kv("mode", Some(format!("{:?}", r.mode)));
                kv("input", r.input_len.map(|v| v.to_string()));
                kv("cached", r.cached_input_len.map(|v| v.to_string()));
                kv("output", r.output_len.map(|v| v.to_string()));
                kv("queue_s", r.queue_s.map(f));
                kv("forward_s", r.forward_s.map(f));
                kv("bootstrap_s", r.bootstrap_s.map(f));
                kv("alloc_wait_s", r.alloc_wait_s.map(f));
                kv("transfer_s", r.transfer_s.map(f));
                kv("start", r.start_unix_s.map(f));
            }
        }
        Event::HttpAccess(a) => {
            kv("method", Some(a.method.to_string()));
            kv("path", Some(a.path.to_string()));
            kv("status", Some(a.status.to_string()));
        }
        Event::ContextRejected(c) => {
            kv("context", Some(c.context_len.to_string()));
            kv("input", c.input_tokens.map(|v| v.to_string()));
            kv("max_new", c.max_new_tokens.map(|v| v.to_string()));
        }
        Event::OutOfMemory(m) => {
            kv("device", Some(m.device.to_string()));
            kv("tried", m.tried_bytes.map(|v| v.to_string()));
            kv("gpu", m.gpu.map(|v| v.to_string()));
            kv("free", m.free_bytes.map(|v| v.to_string()));
        }
        Event::Nccl(n) => {
            kv("kind", Some(format!("{:?}", n.kind)));
            kv("rank", n.rank.map(|v| v.to_string()));
            kv("op", n.op.map(str::to_string));
            kv("timeout_ms", n.timeout_ms.map(|v| v.to_string()));
            kv("ran_ms", n.ran_ms.map(|v| v.to_string()));
        }
        Event::SlowSchedulerPass(p) => {
            kv("label", Some(p.label.to_string()));
            kv("took_ms", p.took_ms.map(f));
            kv("threshold_ms", p.threshold_ms.map(f));
        }
        Event::HealthCheckFailed(s) => kv("timeout_s", s.map(|v| v.to_string())),
        Event::HiCache(h) => kv("line", Some(format!("{h:?}"))),
        Event::KvCacheDtype(d) => kv("dtype", Some(d.to_string())),
        Event::Malformed { reason } => kv("reason", Some(format!("{reason:?}"))),
        Event::ServerReady | Event::TracebackStart | Event::PyspyFailed | Event::Other => {}
    }
    out
}

/// Parses `line` and asserts its rendering.
#[track_caller]
pub fn check(line: &str, expected: &str) {
    let rec = parse_line(line.as_bytes(), 1);
    let got = render(&rec);
    assert_eq!(got, expected, "\nline: {line}");
}
