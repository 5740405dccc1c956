//! Turning what the I/O crates return (server info, GPU snapshots, files) into the plain values
//! `diagnosis::Context` takes. Every failure names its source and lands in `source_errors`, so a
//! missing source narrows the report instead of aborting it.

use std::path::Path;

use diagnosis::{
    Context, GpuFacts, GpuMemory, MetricsFacts, MetricsSample, ModelFacts, ServerFacts,
};
use gpu_probe::{GpuError, GpuSnapshot};
use sglang_client::ServerInfo;

/// Server facts from a decoded `/server_info` payload.
pub fn server_facts(info: &ServerInfo, source: &str) -> ServerFacts {
    let tput: Vec<f64> = info
        .internal_states
        .iter()
        .filter_map(|s| s.last_gen_throughput)
        .collect();
    ServerFacts {
        source: source.to_string(),
        version: info.version.clone(),
        model_path: info.model_path.clone(),
        tp_size: info.tp_size.and_then(|v| u32::try_from(v).ok()),
        dp_size: info.dp_size.and_then(|v| u32::try_from(v).ok()),
        enable_dp_attention: info.enable_dp_attention,
        mem_fraction_static: info.mem_fraction_static,
        max_total_num_tokens: info.kv_capacity_tokens().or(info.max_total_num_tokens),
        max_running_requests: info.max_running_requests,
        chunked_prefill_size: info.chunked_prefill_size,
        kv_cache_dtype: info.kv_cache_dtype.clone(),
        enable_hierarchical_cache: info.enable_hierarchical_cache,
        hicache_ratio: info.hicache_ratio,
        hicache_size_gb: info.hicache_size,
        page_size: info.page_size.and_then(|v| u32::try_from(v).ok()),
        last_gen_throughput: (!tput.is_empty()).then(|| tput.iter().sum()),
    }
}

/// GPU facts from a snapshot (NVML or a copied nvidia-smi file). GPUs that report no memory
/// (unified memory, e.g. GB10) are left out: their memory is unknown, not 0.
pub fn gpu_facts(s: &GpuSnapshot, source: &str) -> GpuFacts {
    GpuFacts {
        source: source.to_string(),
        devices: s
            .devices
            .iter()
            .filter(|d| d.memory_reported)
            .map(|d| GpuMemory {
                index: d.index,
                name: d.name.clone(),
                total_bytes: d.memory_total_bytes,
                free_bytes: Some(d.memory_free_bytes),
            })
            .collect(),
    }
}

/// Puts a snapshot into the context: its GPUs with memory figures as `ctx.gpu`; when none has
/// any (a unified-memory GPU such as GB10), `ctx.gpu_unavailable` says which GPUs were found and
/// that their memory is unknown (never "no GPU", never 0 MiB).
pub fn add_gpu_snapshot(ctx: &mut Context, s: &GpuSnapshot, source: &str) {
    let unknown: Vec<String> = s
        .devices
        .iter()
        .filter(|d| !d.memory_reported)
        .map(|d| format!("GPU {} {}", d.index, d.name))
        .collect();
    let facts = gpu_facts(s, source);
    if !unknown.is_empty() {
        let why = format!(
            "{source}: {} found, but {} no memory figures (N/A or Not Supported, as unified-memory GPUs such as GB10 print): memory unknown",
            unknown.join(", "),
            if unknown.len() == 1 {
                "it reports"
            } else {
                "they report"
            }
        );
        if facts.devices.is_empty() {
            ctx.gpu_unavailable = Some(why);
        } else {
            ctx.source_errors.push(why);
        }
    }
    if !facts.devices.is_empty() {
        ctx.gpu = Some(facts);
    }
}

/// Largest server info or model config read (bytes): real ones are a few KiB.
pub const JSON_CAP: u64 = 16 << 20;
/// Largest client file read whole (bytes): a million records of a few hundred bytes.
pub const CLIENT_CAP: u64 = 1 << 30;

/// Read a saved `/server_info` JSON file into the context.
///
/// # Errors
/// The file cannot be read or is not a server info payload (the message names the file).
/// A field whose value has the wrong type is named (with its value) in `ctx.source_errors` and
/// left out; the other fields are used.
/// The file cannot be read or is not a server info payload, or a field holds an impossible value
/// (`tp_size 0`, a fraction above 1, ...): the message names the file, each such field and its
/// value.
pub fn add_server_info_file(ctx: &mut Context, path: &Path) -> anyhow::Result<()> {
    let name = path.display().to_string();
    let bytes = crate::flags::read_capped("--server-info", path, JSON_CAP)?;
    let text = String::from_utf8(bytes)
        .map_err(|e| anyhow::anyhow!("--server-info {name}: not UTF-8 text: {e}"))?;
    let mut info = ServerInfo::from_json_str(&text)
        .map_err(|e| anyhow::anyhow!("--server-info {name}: not a /server_info payload: {e}"))?;
    let bad = info.validate();
    anyhow::ensure!(
        bad.is_empty(),
        "--server-info {name}: impossible value{}: {}",
        if bad.len() == 1 { "" } else { "s" },
        bad.join("; ")
    );
    for p in &info.problems {
        ctx.source_errors
            .push(format!("--server-info {name}: {p}; that field is not used"));
    }
    ctx.server = Some(server_facts(&info, &name));
    Ok(())
}

/// Read a copied nvidia-smi output into the context. Content that is not understood (a format
/// that is not nvidia-smi's, a row that does not parse, an absurd figure) narrows the diagnosis:
/// it lands in `ctx.gpu_unavailable` and `ctx.source_errors`, naming the file and line.
///
/// # Errors
/// The file cannot be opened or read.
pub fn add_gpu_snapshot_file(ctx: &mut Context, path: &Path) -> anyhow::Result<()> {
    let name = path.display().to_string();
    match gpu_probe::read_snapshot_file(path) {
        Ok(s) => add_gpu_snapshot(ctx, &s, &name),
        // A file that cannot be opened is a wrong path: an error.
        Err(e @ GpuError::Io { .. }) => anyhow::bail!("--gpu-snapshot: {e}"),
        // One whose content cannot be read narrows the diagnosis: the rest still stands.
        Err(e) => {
            let why = format!("--gpu-snapshot {e}");
            ctx.source_errors.push(why.clone());
            ctx.gpu_unavailable = Some(why);
        }
    }
    Ok(())
}

/// Probe this machine's GPUs (NVML) into the context; no GPU is not an error.
pub fn add_gpu_probe(ctx: &mut Context) {
    match gpu_probe::probe() {
        Ok(s) => add_gpu_snapshot(ctx, &s, "NVML"),
        Err(GpuError::GpuUnavailable { reason }) => ctx.gpu_unavailable = Some(reason),
        Err(e) => ctx.gpu_unavailable = Some(e.to_string()),
    }
}

/// Read a Hugging Face `config.json`.
///
/// # Errors
/// The file cannot be read, or is not a config whose KV geometry is understood.
pub fn add_model_config(ctx: &mut Context, path: &Path) -> anyhow::Result<()> {
    let name = path.display().to_string();
    let bytes = crate::flags::read_capped("--model-config", path, JSON_CAP)?;
    let text = String::from_utf8(bytes)
        .map_err(|e| anyhow::anyhow!("--model-config {name}: not UTF-8 text: {e}"))?;
    match kv_capacity::ModelConfig::from_hf_json(&text) {
        Ok(config) => {
            ctx.model = Some(ModelFacts {
                source: name,
                config,
            })
        }
        // A config we read but cannot model (e.g. a hybrid pool) narrows the report instead.
        Err(kv_capacity::CapacityError::Unsupported { what }) => {
            ctx.model_error = Some(format!("{name}: not supported yet: {what}"))
        }
        Err(e) => anyhow::bail!("--model-config {name}: {e}"),
    }
    Ok(())
}

/// Read client records or a client progress log.
///
/// # Errors
/// The file cannot be read, or holds no record, progress line or benchmark summary.
pub fn add_client_file(ctx: &mut Context, path: &Path, flag: &str) -> anyhow::Result<()> {
    let name = if crate::flags::is_stdin(path) {
        "standard input".to_string()
    } else {
        path.display().to_string()
    };
    let bytes = crate::flags::read_capped(flag, path, CLIENT_CAP)?;
    let text = String::from_utf8_lossy(&bytes);
    let c = sglang_log::parse_client(name.clone(), &text);
    // a JSON file of no known shape, a known tool's unsupported version: its own words
    if let Some(why) = &c.refused
        && c.requests.is_empty()
        && c.bench.is_empty()
    {
        anyhow::bail!("{flag} {name}: {why}");
    }
    if c.requests.is_empty() && c.progress.is_empty() && c.bench.is_empty() {
        let first = c
            .unparsed
            .first()
            .map(|(l, x)| format!("; line {l}: {x:?}"))
            .unwrap_or_default();
        let (kind, looks) = looks_like(&bytes);
        // a server log under a client option: say so first (its tqdm bars look like progress)
        if kind == sglang_log::foreign::LogKind::Sglang {
            anyhow::bail!(
                "{flag} {name}: none of its {} lines is a client record{looks}",
                c.lines
            );
        }
        // progress lines without the date that sets them against the server's clock
        if let Some((l, x)) = c
            .unparsed
            .iter()
            .find(|(_, x)| sglang_log::progress_without_time(x))
        {
            anyhow::bail!(
                "{flag} {name}: line {l} counts completed requests ({x:?}) but does not start with a date and time (YYYY-MM-DD HH:MM:SS, bare or in [brackets]): without it the client's progress cannot be set against the server log's clock; print a timestamp at the start of each progress line"
            );
        }
        anyhow::bail!(
            "{flag} {name}: none of its {} lines is a client record (JSONL with token counts or times), a progress line (a date-time, then a count of completed requests: N/M done, Progress: N/M, completed N/M) or a benchmark summary (bench_serving's 'Serving Benchmark Result' block){first}{}",
            c.lines,
            looks
        );
    }
    ctx.clients.push(c);
    Ok(())
}

/// What a file given as client evidence looks like when it is none, and in words where it
/// goes: an SGLang server log (the LOG argument) or another known format (the option that
/// takes it); the words are empty when it looks like nothing known.
fn looks_like(bytes: &[u8]) -> (sglang_log::foreign::LogKind, String) {
    use sglang_log::foreign::{FormatSniffer, LogKind};
    let mut sniff = FormatSniffer::new();
    // bounded like the file; a read error leaves what was sniffed so far
    let _ = sglang_log::LogReader::from_reader("client", bytes).for_each(|r| sniff.push(r));
    let kind = sniff.classify();
    let words = match kind {
        LogKind::Sglang => {
            ". It is an SGLang server log: give it as the LOG argument (throughput-doctor diagnose FILE)".to_string()
        }
        LogKind::Foreign {
            format, signature, ..
        } => {
            let e = sglang_log::foreign::NotSglangLog::Foreign {
                path: String::new(),
                format,
                signature_lines: signature.lines,
                first_line: signature.first_line.unwrap_or(1),
            };
            format!(
                ". It looks like {}{}",
                format.description(),
                crate::logfile::foreign_hint(&e)
            )
        }
        LogKind::Empty | LogKind::Unrecognised => String::new(),
    };
    (kind, words)
}

/// Host memory from `/proc/meminfo`, when readable (for the HiCache check).
pub fn add_host_meminfo(ctx: &mut Context) {
    if let Ok(text) = std::fs::read_to_string("/proc/meminfo") {
        ctx.host_meminfo = kv_capacity::MemInfo::parse(&text).ok();
    }
}

/// Fetch server info and `polls` samples of `/metrics`, `interval` apart, from a live server.
/// Each failure lands in `ctx.source_errors`.
///
/// Returns `Some(cause)` when nothing at all came back (neither server info nor any `/metrics`
/// poll succeeded): the first failure's text, without the URL prefix. `None` otherwise.
pub fn add_server_url(
    ctx: &mut Context,
    url: &str,
    polls: u32,
    interval: std::time::Duration,
) -> Option<String> {
    add_server_url_within(ctx, url, polls, interval, None)
}

/// [`add_server_url`] with each call bounded by `call_timeout` (the client's default, 30 s, when
/// `None`); live mode uses one period so a silent server does not hold up the first report.
/// URLs in what lands in `ctx` carry no credentials; impossible server-info values are named in
/// `ctx.source_errors` and left out.
pub fn add_server_url_within(
    ctx: &mut Context,
    url: &str,
    polls: u32,
    interval: std::time::Duration,
    call_timeout: Option<std::time::Duration>,
) -> Option<String> {
    let shown = sglang_client::error::redact_url(url);
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let cause = format!("could not start the async runtime: {e}");
            ctx.source_errors.push(format!("server {shown}: {cause}"));
            return Some(cause);
        }
    };
    let mut cfg =
        sglang_client::ClientConfig::new(url).api_key_from_env(sglang_client::API_KEY_ENV);
    if let Some(t) = call_timeout {
        cfg.info_timeout = t;
        cfg.connect_timeout = cfg.connect_timeout.min(t);
    }
    let client = match sglang_client::SglangClient::new(cfg) {
        Ok(c) => c,
        Err(e) => {
            ctx.source_errors.push(format!("server {shown}: {e}"));
            return Some(e.to_string());
        }
    };
    let mut first_error = None;
    match rt.block_on(client.server_info()) {
        Ok(mut info) => {
            for p in info.validate().iter().chain(&info.problems) {
                ctx.source_errors.push(format!(
                    "server {shown}/server_info: {p}; that field is not used"
                ));
            }
            ctx.server = Some(server_facts(&info, &shown));
        }
        Err(e) => {
            ctx.source_errors.push(format!("server {shown}: {e}"));
            first_error = Some(e.to_string());
        }
    }
    let mut facts = MetricsFacts {
        source: shown.clone(),
        samples: Vec::new(),
    };
    for i in 0..polls {
        if i > 0 {
            std::thread::sleep(interval);
        }
        match rt.block_on(client.metrics()) {
            Ok(m) => {
                // A figure split by a label that is not a rank is named once (not summed, not
                // used); unreadable lines and rejected values are warnings, named once per poll.
                for n in &m.not_summed {
                    let said = format!("server {shown}/metrics: {n}");
                    if !ctx.source_errors.contains(&said) {
                        ctx.source_errors.push(said);
                    }
                }
                let refused = m.not_summed.len();
                if let Some(first) = m.problems.get(refused) {
                    ctx.source_errors.push(format!(
                        "server {shown}/metrics: {} line(s) unreadable or values rejected; first: {first}",
                        m.problems_total - refused
                    ));
                }
                // The pool from /metrics when the server info did not give it:
                // `max_total_num_tokens`, else `page_size × num_pages` (either generation).
                if let Some(server) = ctx.server.as_mut()
                    && server.max_total_num_tokens.is_none()
                {
                    server.max_total_num_tokens = m.pool_tokens().map(|p| p.round() as u64);
                }
                facts.samples.push(metrics_sample(&m))
            }
            Err(e) => {
                ctx.source_errors
                    .push(format!("server {shown}/metrics: {e}"));
                first_error.get_or_insert_with(|| e.to_string());
                break;
            }
        }
    }
    let reached = ctx.server.is_some() || !facts.samples.is_empty();
    if !facts.samples.is_empty() {
        ctx.metrics = Some(facts);
    }
    if reached {
        None
    } else {
        Some(first_error.unwrap_or_else(|| "no answer".to_string()))
    }
}

/// One `/metrics` poll as plain values (summed over label sets; usage is the highest;
/// occupancy the mean of the schedulers that report a number, the idle ones counted).
pub fn metrics_sample(m: &sglang_client::MetricsSnapshot) -> MetricsSample {
    use sglang_client::{ForwardTimer, Occupancy};
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let hist_q =
        |f: &dyn Fn(&sglang_client::LabeledMetrics) -> Option<&sglang_client::Histogram>,
         q: f64| { m.sets.iter().find_map(|s| f(s).and_then(|h| h.quantile(q))) };
    // `sglang:fwd_occupancy`: a number per busy scheduler, NaN (idle) counted apart.
    let (mut busy, mut idle, mut busy_sum) = (0u32, 0u32, 0.0);
    for o in m.sets.iter().filter_map(|x| x.fwd_occupancy) {
        match o {
            Occupancy::Percent(p) => {
                busy += 1;
                busy_sum += p;
            }
            Occupancy::Idle => idle += 1,
        }
    }
    MetricsSample {
        t,
        running: m.total(|x| x.num_running_reqs),
        queued: m.total(|x| x.num_queue_reqs),
        token_usage: m.sets.iter().filter_map(|x| x.token_usage).reduce(f64::max),
        gen_throughput: m.total(|x| x.gen_throughput),
        generation_tokens_total: m.total(|x| x.generation_tokens_total),
        num_requests_total: m.total(|x| x.num_requests_total),
        ttft_p50_s: hist_q(&|s| s.time_to_first_token_seconds.as_ref(), 0.5),
        ttft_p90_s: hist_q(&|s| s.time_to_first_token_seconds.as_ref(), 0.9),
        itl_p50_s: hist_q(&|s| s.inter_token_latency_seconds.as_ref(), 0.5),
        e2e_p50_s: hist_q(&|s| s.e2e_request_latency_seconds.as_ref(), 0.5),
        scheduler_idle_seconds_total: m.total(|x| x.scheduler_idle_seconds_total),
        scheduler_cpu_seconds_total: m.total(|x| x.scheduler_process_cpu_seconds_total),
        fwd_occupancy_pct: (busy > 0).then(|| busy_sum / f64::from(busy)),
        fwd_occupancy_idle: idle,
        fwd_occupancy_busy: busy,
        forward_seconds_total: match m.forward_timer() {
            ForwardTimer::Absent => None,
            ForwardTimer::NotEnabled => Some(0.0),
            ForwardTimer::Measured(s) => Some(s),
        },
        prefill_hit_tokens_total: m.total(|x| {
            let hits = x
                .prefill_effective_tokens_total
                .iter()
                .filter(|(mode, _)| mode.ends_with("_hit"));
            hits.clone()
                .next()
                .is_some()
                .then(|| hits.map(|(_, v)| v).sum())
        }),
        prefill_input_tokens_total: m
            .total(|x| x.prefill_effective_tokens_total.get("input").copied()),
    }
}
