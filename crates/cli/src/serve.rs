//! `throughput-doctor serve`: a sidecar that re-diagnoses its targets every interval and
//! publishes the findings for Prometheus to scrape (`/metrics`, text format via
//! `prometheus-client`) and as JSON (`/report.json`).
//!
//! Targets are SGLang servers (`--server URL`: `/metrics` polled every `--poll`, the samples
//! of the last `--window` diagnosed, the pool size from `/server_info`) and logs (`--log
//! PATH`: read whole at each diagnosis). A target that cannot be read is published as
//! `throughput_doctor_target_up{instance} 0` with the reason in `/report.json`; its last
//! verdict stays until it answers again. Ctrl-C stops the listener and the pollers.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, Result};
use clap::Args;
use diagnosis::{Bottleneck, Context, EvidenceBuilder, MetricsFacts, MetricsSample, Report};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use serde::Serialize;

/// Arguments of `serve`.
#[derive(Debug, Args, Clone)]
pub struct ServeArgs {
    /// Address to serve /metrics and /report.json on (e.g. 127.0.0.1:9464; port 0 picks one, printed on stderr).
    #[arg(long, value_name = "ADDR")]
    pub listen: SocketAddr,
    /// An SGLang server to poll (base URL; may repeat). Its instance label is its host:port, as Prometheus names the target.
    #[arg(long = "server", value_name = "URL")]
    pub servers: Vec<String>,
    /// A server log to diagnose (may repeat); read whole at each diagnosis. Its instance label is the path.
    #[arg(long = "log", value_name = "PATH")]
    pub logs: Vec<PathBuf>,
    /// Time between diagnoses (a duration: 15s, 1m).
    #[arg(long, value_name = "DURATION", value_parser = crate::watch::parse_duration, default_value = "15s")]
    pub interval: Duration,
    /// Time between /metrics polls of each server.
    #[arg(long, value_name = "DURATION", value_parser = crate::watch::parse_duration, default_value = "1s")]
    pub poll: Duration,
    /// The rolling window a server's verdict is judged over.
    #[arg(long, value_name = "DURATION", value_parser = crate::watch::parse_duration, default_value = "10m")]
    pub window: Duration,
}

/// One target's state, as `/report.json` shows it.
#[derive(Clone, Debug, Serialize)]
pub struct TargetState {
    /// Instance label (`host:port` of a server, or a log's path).
    pub instance: String,
    /// `server` or `log`.
    pub kind: String,
    /// Whether the last read succeeded.
    pub up: bool,
    /// Why the last read failed, when it did.
    pub error: Option<String>,
    /// `/metrics` polls in the window (servers).
    pub samples: usize,
    /// When it was last diagnosed (Unix seconds).
    pub diagnosed_at: Option<f64>,
    /// The last report.
    pub report: Option<Report>,
}

/// What `/report.json` serves.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ServeReport {
    /// Diagnoses done since start (all targets).
    pub diagnoses: u64,
    /// Targets by instance.
    pub targets: BTreeMap<String, TargetState>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    instance: String,
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct InstanceLabels {
    instance: String,
}

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The Prometheus text exposition of a [`ServeReport`].
pub fn exposition(r: &ServeReport) -> String {
    let mut reg = Registry::with_prefix("throughput_doctor");
    let gauge_f = Family::<InstanceLabels, Gauge<f64, std::sync::atomic::AtomicU64>>::default;
    let bottleneck = Family::<KindLabels, Gauge>::default();
    let finding = Family::<KindLabels, Gauge>::default();
    let up = Family::<InstanceLabels, Gauge>::default();
    let steady = gauge_f();
    let steady_low = gauge_f();
    let steady_high = gauge_f();
    let steady_window = gauge_f();
    let pool = gauge_f();
    let ceiling = gauge_f();
    let headroom = gauge_f();
    let diagnosed = gauge_f();
    let diagnoses = Gauge::<i64>::default();
    diagnoses.set(i64::try_from(r.diagnoses).unwrap_or(i64::MAX));
    for (inst, t) in &r.targets {
        let il = InstanceLabels {
            instance: inst.clone(),
        };
        up.get_or_create(&il).set(i64::from(t.up));
        if let Some(at) = t.diagnosed_at {
            diagnosed.get_or_create(&il).set(at);
        }
        let Some(rep) = &t.report else { continue };
        for &b in Bottleneck::ALL {
            bottleneck
                .get_or_create(&KindLabels {
                    instance: inst.clone(),
                    kind: b.name().to_string(),
                })
                .set(i64::from(rep.bottleneck == b));
        }
        for f in &rep.findings {
            finding
                .get_or_create(&KindLabels {
                    instance: inst.clone(),
                    kind: f.kind.name().to_string(),
                })
                .set(1);
        }
        if let Some(s) = &rep.steady_gen_throughput {
            steady.get_or_create(&il).set(s.value);
            steady_window.get_or_create(&il).set(s.window_s);
            if let Some(l) = s.low {
                steady_low.get_or_create(&il).set(l);
            }
            if let Some(h) = s.high {
                steady_high.get_or_create(&il).set(h);
            }
        }
        if let Some(p) = rep.capacity.max_total_num_tokens {
            pool.get_or_create(&il).set(p as f64);
        }
        if let Some(best) = rep.projection.as_ref().and_then(|p| {
            p.rows
                .iter()
                .map(|r| r.tok_per_s)
                .filter(|v| v.is_finite())
                .reduce(f64::max)
        }) {
            ceiling.get_or_create(&il).set(best);
            if let Some(s) = &rep.steady_gen_throughput {
                headroom.get_or_create(&il).set((best - s.value).max(0.0));
            }
        }
    }
    reg.register(
        "bottleneck",
        "1 for the verdict of the instance's last diagnosis, 0 for the other kinds (kind as in the JSON report's bottleneck)",
        bottleneck,
    );
    reg.register(
        "finding",
        "1 for each finding of the instance's last diagnosis (kind as in the JSON report's findings)",
        finding,
    );
    reg.register(
        "target_up",
        "1 when the last read of the target succeeded",
        up,
    );
    reg.register(
        "steady_gen_throughput_tokens_per_second",
        "Steady generation throughput summed over DP ranks (tok/s)",
        steady,
    );
    reg.register(
        "steady_gen_throughput_low_tokens_per_second",
        "Lower bound of the steady throughput's 95% interval (tok/s)",
        steady_low,
    );
    reg.register(
        "steady_gen_throughput_high_tokens_per_second",
        "Upper bound of the steady throughput's 95% interval (tok/s)",
        steady_high,
    );
    reg.register(
        "steady_window_seconds",
        "Span the steady throughput was measured over (seconds)",
        steady_window,
    );
    reg.register(
        "kv_pool_tokens",
        "KV pool size per DP rank, max_total_num_tokens (tokens)",
        pool,
    );
    reg.register(
        "projected_ceiling_tokens_per_second",
        "Highest generation throughput the decode step-time fit projects over the what-if rows (tok/s)",
        ceiling,
    );
    reg.register(
        "headroom_tokens_per_second",
        "Projected ceiling minus the steady throughput (tok/s)",
        headroom,
    );
    reg.register(
        "last_diagnosis_timestamp_seconds",
        "When the instance was last diagnosed (Unix seconds)",
        diagnosed,
    );
    reg.register("diagnoses", "Diagnoses done since start", diagnoses);
    let mut out = String::new();
    // ok: writing into a String cannot fail; an error would only lose this scrape.
    if prometheus_client::encoding::text::encode(&mut out, &reg).is_err() {
        out.clear();
    }
    out
}

/// The instance label of a server URL: its `host:port` (port 80/443 by scheme when absent).
pub fn instance_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or(rest);
    let host = authority.rsplit('@').next().unwrap_or(authority);
    if host.contains(':') && !host.ends_with(']') {
        host.to_string()
    } else if url.starts_with("https://") {
        format!("{host}:443")
    } else {
        format!("{host}:80")
    }
}

struct ServerTarget {
    url: String,
    instance: String,
    samples: VecDeque<MetricsSample>,
    server: Option<diagnosis::ServerFacts>,
    error: Option<String>,
}

type Shared = Arc<Mutex<ServeReport>>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// A running `serve` (for tests and the binary): its address and a way to stop it.
pub struct ServeHandle {
    /// The bound address.
    pub addr: SocketAddr,
    stop: Option<tokio::sync::watch::Sender<bool>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl ServeHandle {
    /// Stop the listener and the pollers, and wait for them.
    pub async fn shutdown(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(true);
        }
        for t in self.tasks.drain(..) {
            let _ = t.await;
        }
    }
}

async fn poll_server(
    t: Arc<Mutex<ServerTarget>>,
    client: sglang_client::SglangClient,
    poll: Duration,
    window_s: f64,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        // A poll in progress is dropped at once on stop (a hung server must not hold it up).
        tokio::select! {
            _ = poll_once(&t, &client, window_s) => {}
            _ = stop.changed() => return,
        }
        tokio::select! {
            _ = tokio::time::sleep(poll) => {}
            _ = stop.changed() => return,
        }
    }
}

async fn poll_once(t: &Mutex<ServerTarget>, client: &sglang_client::SglangClient, window_s: f64) {
    let need_info = lock(t).server.is_none();
    if need_info && let Ok(info) = client.server_info().await {
        let url = lock(t).url.clone();
        lock(t).server = Some(crate::sources::server_facts(&info, &url));
    }
    let res = client.metrics().await;
    let mut g = lock(t);
    match res {
        Ok(m) => {
            let s = crate::sources::metrics_sample(&m);
            g.samples.push_back(s);
            let cut = s.t - window_s;
            while g.samples.front().is_some_and(|x| x.t < cut) {
                g.samples.pop_front();
            }
            g.error = None;
        }
        Err(e) => g.error = Some(e.to_string()),
    }
}

fn diagnose_server(t: &ServerTarget) -> Option<Report> {
    if t.samples.len() < 2 {
        return None;
    }
    let ctx = Context {
        server: t.server.clone(),
        metrics: Some(MetricsFacts {
            source: t.url.clone(),
            samples: t.samples.iter().copied().collect(),
        }),
        ..Context::default()
    };
    Some(diagnosis::diagnose_with(
        &diagnosis::Evidence::default(),
        &ctx,
    ))
}

fn diagnose_log(path: &std::path::Path) -> Result<Report> {
    let mut b = EvidenceBuilder::new();
    let id = b.add_source(path.display().to_string());
    let read = crate::logfile::read_log(path, |rec| b.push(id, rec))?;
    b.finish_source(id, &read.stats);
    let mut ctx = Context::default();
    ctx.source_errors.extend(read.warnings);
    Ok(diagnosis::diagnose_with(&b.build(), &ctx))
}

/// Start serving in the current tokio runtime.
///
/// # Errors
/// No target, a server URL the client refuses, or the address cannot be bound.
pub async fn start(args: &ServeArgs) -> Result<ServeHandle> {
    anyhow::ensure!(
        !args.servers.is_empty() || !args.logs.is_empty(),
        "serve needs a target: --server URL or --log PATH"
    );
    let shared: Shared = Arc::new(Mutex::new(ServeReport::default()));
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut tasks = Vec::new();
    let mut servers = Vec::new();
    for url in &args.servers {
        let cfg =
            sglang_client::ClientConfig::new(url).api_key_from_env(sglang_client::API_KEY_ENV);
        let client =
            sglang_client::SglangClient::new(cfg).with_context(|| format!("--server {url}"))?;
        let t = Arc::new(Mutex::new(ServerTarget {
            url: url.clone(),
            instance: instance_of(url),
            samples: VecDeque::new(),
            server: None,
            error: None,
        }));
        tasks.push(tokio::spawn(poll_server(
            t.clone(),
            client,
            args.poll,
            args.window.as_secs_f64(),
            stop_rx.clone(),
        )));
        servers.push(t);
    }
    // The diagnosis loop.
    {
        let shared = shared.clone();
        let logs = args.logs.clone();
        let interval = args.interval;
        let mut stop = stop_rx.clone();
        tasks.push(tokio::spawn(async move {
            loop {
                let servers = servers.clone();
                let logs = logs.clone();
                let shared2 = shared.clone();
                // Diagnosis is CPU work: off the async workers.
                let _ = tokio::task::spawn_blocking(move || {
                    let now = unix_now();
                    let mut updates = Vec::new();
                    for t in &servers {
                        let g = lock(t);
                        let report = diagnose_server(&g);
                        updates.push((
                            g.instance.clone(),
                            "server",
                            g.error.clone(),
                            g.samples.len(),
                            report,
                        ));
                    }
                    for p in &logs {
                        let (err, report) = match diagnose_log(p) {
                            Ok(r) => (None, Some(r)),
                            Err(e) => (Some(crate::error_line(&e)), None),
                        };
                        updates.push((p.display().to_string(), "log", err, 0, report));
                    }
                    let mut s = lock(&shared2);
                    for (instance, kind, error, samples, report) in updates {
                        let fresh = report.is_some();
                        let e = s.targets.entry(instance.clone()).or_insert(TargetState {
                            instance,
                            kind: kind.to_string(),
                            up: false,
                            error: None,
                            samples: 0,
                            diagnosed_at: None,
                            report: None,
                        });
                        e.up = error.is_none() && (fresh || samples > 0);
                        e.error = error;
                        e.samples = samples;
                        if let Some(r) = report {
                            e.report = Some(r);
                            e.diagnosed_at = Some(now);
                        }
                        s.diagnoses += u64::from(fresh);
                    }
                })
                .await;
                tokio::select! {
                    _ = tokio::time::sleep(interval) => {}
                    _ = stop.changed() => return,
                }
            }
        }));
    }
    let app = axum::Router::new()
        .route(
            "/metrics",
            axum::routing::get({
                let shared = shared.clone();
                move || {
                    let text = exposition(&lock(&shared));
                    async move {
                        (
                            [(
                                axum::http::header::CONTENT_TYPE,
                                "text/plain; version=0.0.4; charset=utf-8",
                            )],
                            text,
                        )
                    }
                }
            }),
        )
        .route(
            "/report.json",
            axum::routing::get({
                let shared = shared.clone();
                move || {
                    let body = serde_json::to_string_pretty(&*lock(&shared))
                        .unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
                    async move {
                        (
                            [(axum::http::header::CONTENT_TYPE, "application/json")],
                            body,
                        )
                    }
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("--listen {}", args.listen))?;
    let addr = listener.local_addr()?;
    let mut stop = stop_rx.clone();
    tasks.push(tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = stop.changed().await;
            })
            .await;
    }));
    Ok(ServeHandle {
        addr,
        stop: Some(stop_tx),
        tasks,
    })
}

/// Run `serve` until Ctrl-C.
///
/// # Errors
/// See [`start`]; the async runtime cannot start.
pub fn run(args: &ServeArgs) -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(async {
        let h = start(args).await?;
        eprintln!(
            "serving http://{}/metrics and /report.json; Ctrl-C stops",
            h.addr
        );
        let _ = tokio::signal::ctrl_c().await;
        eprintln!("stopping");
        h.shutdown().await;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_labels_are_host_port() {
        assert_eq!(instance_of("http://10.0.0.5:30000"), "10.0.0.5:30000");
        assert_eq!(instance_of("http://u:p@h:1/x"), "h:1");
        assert_eq!(
            instance_of("https://sglang.internal"),
            "sglang.internal:443"
        );
    }

    #[test]
    fn every_kind_is_published_zero_or_one() {
        let ev = diagnosis::Evidence::default();
        let report = diagnosis::diagnose_with(&ev, &Context::default());
        let mut r = ServeReport {
            diagnoses: 1,
            ..Default::default()
        };
        r.targets.insert(
            "h:1".into(),
            TargetState {
                instance: "h:1".into(),
                kind: "server".into(),
                up: true,
                error: None,
                samples: 0,
                diagnosed_at: Some(1.5),
                report: Some(report),
            },
        );
        let text = exposition(&r);
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("throughput_doctor_bottleneck{"))
            .collect();
        assert_eq!(lines.len(), Bottleneck::ALL.len(), "{text}");
        assert!(
            text.contains(
                "throughput_doctor_bottleneck{instance=\"h:1\",kind=\"no_scheduler_lines\"} 1"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "throughput_doctor_bottleneck{instance=\"h:1\",kind=\"kv_cache_bound\"} 0"
            )
        );
        assert!(text.contains("throughput_doctor_target_up{instance=\"h:1\"} 1"));
        // Our own parser reads it whole.
        let e = sglang_client::exposition::Exposition::parse(&text);
        assert!(e.problems.is_empty(), "{:?}", e.problems);
    }
}
