//! `throughput-doctor serve`: a sidecar that re-diagnoses its targets every interval and
//! publishes the findings for Prometheus to scrape (`/metrics`, OpenMetrics text via
//! `prometheus-client`, [`expose`]) and as JSON (`/report.json`).
//!
//! Targets are SGLang servers (`--server URL`: `/metrics` polled every `--poll`, the samples
//! of the last `--window` diagnosed, the pool size from `/server_info`) and logs (`--log
//! PATH`: read whole at each diagnosis). Each target is diagnosed on a task of its own, each
//! diagnosis bounded by one `--interval`: a log that blocks (a FIFO, a hung network mount)
//! is published down with that reason and holds up no other target. A target that cannot be
//! read is published as `throughput_doctor_target_up{instance} 0` with the reason in
//! `/report.json`, and publishes no verdict, no findings and no rate: its samples age out of
//! the window by time, not only when a poll succeeds, and its last diagnosis time stays the
//! time of its last diagnosis. Ctrl-C stops the listener and the pollers.
//!
//! Safe to put on a network ([`http`]): what is published never carries a server URL's
//! password or the API key (URLs are shown without credentials, and both bodies are redacted
//! of every form of them, [`sglang_client::redact`]); `--auth-token-file` requires a bearer
//! token; every connection must send its request head within `--header-timeout`, and at most
//! `--max-connections` are open at once.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, Result};
use clap::Args;
use diagnosis::{Context, EvidenceBuilder, MetricsFacts, MetricsSample, Report};
use serde::Serialize;

pub mod expose;
pub mod http;

pub use expose::exposition;

/// Arguments of `serve`: its targets and timing.
#[derive(Debug, Args, Clone)]
pub struct ServeArgs {
    /// Address to serve /metrics and /report.json on (e.g. 127.0.0.1:9464; port 0 picks one, printed on stderr). 0.0.0.0 serves every network: use --auth-token-file there.
    #[arg(long, value_name = "ADDR")]
    pub listen: SocketAddr,
    /// An SGLang server to poll (base URL; may repeat). Its instance label is its host:port, as Prometheus names the target.
    #[arg(long = "server", value_name = "URL")]
    pub servers: Vec<String>,
    /// A server log to diagnose (may repeat); read whole at each diagnosis. Its instance label is the path.
    #[arg(long = "log", value_name = "PATH")]
    pub logs: Vec<PathBuf>,
    /// Time between diagnoses (a duration: 15s, 1m); also the longest one diagnosis may take.
    #[arg(long, value_name = "DURATION", value_parser = crate::watch::parse_duration, default_value = "15s")]
    pub interval: Duration,
    /// Time between /metrics polls of each server.
    #[arg(long, value_name = "DURATION", value_parser = crate::watch::parse_duration, default_value = "1s")]
    pub poll: Duration,
    /// The rolling window a server's verdict is judged over.
    #[arg(long, value_name = "DURATION", value_parser = crate::watch::parse_duration, default_value = "10m")]
    pub window: Duration,
}

/// The `serve` command: [`ServeArgs`] and how it faces the network ([`http::NetArgs`]).
#[derive(Debug, Args, Clone)]
pub struct ServeCmd {
    /// Targets and timing.
    #[command(flatten)]
    pub args: ServeArgs,
    /// Authentication and connection limits.
    #[command(flatten)]
    pub net: http::NetArgs,
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

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
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

/// A server target: its URL as shown (no credentials: the client alone holds the URL as
/// given), and its polls.
struct ServerTarget {
    shown: String,
    instance: String,
    samples: VecDeque<MetricsSample>,
    server: Option<diagnosis::ServerFacts>,
    error: Option<String>,
}

impl ServerTarget {
    /// Drops the samples older than `window_s` before `now`: samples age out by time, whether
    /// or not the server still answers.
    fn age_out(&mut self, now: f64, window_s: f64) {
        let cut = now - window_s;
        while self.samples.front().is_some_and(|x| x.t < cut) {
            self.samples.pop_front();
        }
    }
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
    /// Stop the listener, the pollers and the targets' tasks, and wait for them (a log read
    /// still blocked on its file is left to its thread).
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
        let mut g = lock(t);
        let shown = g.shown.clone();
        g.server = Some(crate::sources::server_facts(&info, &shown));
    }
    let res = client.metrics().await;
    let mut g = lock(t);
    match res {
        Ok(m) => {
            g.samples.push_back(crate::sources::metrics_sample(&m));
            g.error = None;
        }
        Err(e) => g.error = Some(e.to_string()),
    }
    g.age_out(unix_now(), window_s);
}

/// The diagnosis of a server's samples (at least two), under its shown URL.
fn diagnose_server(
    shown: String,
    server: Option<diagnosis::ServerFacts>,
    samples: Vec<MetricsSample>,
) -> Option<Report> {
    if samples.len() < 2 {
        return None;
    }
    let ctx = Context {
        server,
        metrics: Some(MetricsFacts {
            source: shown,
            samples,
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

/// One diagnosis' outcome for a target.
struct Outcome {
    instance: String,
    kind: &'static str,
    /// Whether the target was read.
    up: bool,
    /// Why the target is down.
    error: Option<String>,
    samples: usize,
    /// The verdict of this diagnosis; `None` withdraws the last one (a target down, a
    /// server whose samples aged out of the window).
    report: Option<Report>,
}

/// Publishes `o` into the shared report.
fn publish(shared: &Shared, o: Outcome) {
    let now = unix_now();
    let mut s = lock(shared);
    let fresh = o.report.is_some();
    let e = s.targets.entry(o.instance.clone()).or_insert(TargetState {
        instance: o.instance,
        kind: o.kind.to_string(),
        up: false,
        error: None,
        samples: 0,
        diagnosed_at: None,
        report: None,
    });
    e.up = o.up;
    e.samples = o.samples;
    e.error = o.error;
    // No verdict without a diagnosis: the last diagnosis time stays the time of the last one.
    if o.report.is_some() {
        e.diagnosed_at = Some(now);
    }
    e.report = o.report;
    s.diagnoses += u64::from(fresh);
}

/// Waits `interval` or the stop; true on stop.
async fn pause(interval: Duration, stop: &mut tokio::sync::watch::Receiver<bool>) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(interval) => false,
        _ = stop.changed() => true,
    }
}

/// A diagnosis that took longer than its deadline, as an error.
fn overran(what: &str, deadline: Duration) -> String {
    format!(
        "{what} did not finish within {} (the --interval); it is published down until it does",
        diagnosis::narrative::fmt_duration(deadline.as_secs_f64())
    )
}

/// Diagnoses one server every `interval`, each diagnosis on a blocking thread within `interval`.
async fn server_task(
    t: Arc<Mutex<ServerTarget>>,
    shared: Shared,
    interval: Duration,
    window_s: f64,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        let (instance, error, shown, server, samples) = {
            let mut g = lock(&t);
            g.age_out(unix_now(), window_s);
            let samples: Vec<MetricsSample> = g.samples.iter().copied().collect();
            (
                g.instance.clone(),
                g.error.clone(),
                g.shown.clone(),
                g.server.clone(),
                samples,
            )
        };
        let n = samples.len();
        let (error, report) = if error.is_some() {
            (error, None)
        } else {
            let job = tokio::task::spawn_blocking(move || diagnose_server(shown, server, samples));
            match tokio::time::timeout(interval, job).await {
                Ok(Ok(r)) => (None, r),
                Ok(Err(e)) => (Some(format!("the diagnosis failed: {e}")), None),
                Err(_) => (Some(overran("the diagnosis", interval)), None),
            }
        };
        publish(
            &shared,
            Outcome {
                instance,
                kind: "server",
                up: error.is_none() && n > 0,
                error,
                samples: n,
                report,
            },
        );
        if pause(interval, &mut stop).await {
            return;
        }
    }
}

/// Diagnoses one log every `interval`, each read on a blocking thread within `interval`; a
/// read past it is left to finish (a blocking read cannot be cancelled) and none is started
/// until it has.
async fn log_task(
    path: PathBuf,
    shared: Shared,
    interval: Duration,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let instance = path.display().to_string();
    let mut pending: Option<tokio::task::JoinHandle<Result<Report>>> = None;
    loop {
        let mut job = match pending.take() {
            Some(j) => j,
            None => {
                let p = path.clone();
                tokio::task::spawn_blocking(move || diagnose_log(&p))
            }
        };
        let (error, report) = match tokio::time::timeout(interval, &mut job).await {
            Ok(Ok(Ok(r))) => (None, Some(r)),
            Ok(Ok(Err(e))) => (Some(crate::error_line(&e)), None),
            Ok(Err(e)) => (Some(format!("the diagnosis failed: {e}")), None),
            Err(_) => {
                pending = Some(job);
                (Some(overran("reading the log", interval)), None)
            }
        };
        publish(
            &shared,
            Outcome {
                instance: instance.clone(),
                kind: "log",
                up: error.is_none(),
                error,
                samples: 0,
                report,
            },
        );
        if pause(interval, &mut stop).await {
            return;
        }
    }
}

/// Start serving in the current tokio runtime with the default network settings
/// ([`http::NetArgs::default`]: no token, the default limits).
///
/// # Errors
/// See [`start_with`].
pub async fn start(args: &ServeArgs) -> Result<ServeHandle> {
    start_with(args, &http::NetArgs::default()).await
}

/// Start serving in the current tokio runtime.
///
/// # Errors
/// No target, a server URL the client refuses, an unreadable or empty `--auth-token-file`,
/// or the address cannot be bound.
pub async fn start_with(args: &ServeArgs, net: &http::NetArgs) -> Result<ServeHandle> {
    anyhow::ensure!(
        !args.servers.is_empty() || !args.logs.is_empty(),
        "serve needs a target: --server URL or --log PATH"
    );
    let token = net.token()?;
    let shared: Shared = Arc::new(Mutex::new(ServeReport::default()));
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut tasks = Vec::new();
    // Published bodies are redacted of the API key and every server URL's password.
    let mut secrets = sglang_client::Secrets::new();
    if let Ok(k) = std::env::var(sglang_client::API_KEY_ENV) {
        secrets.add(k.trim());
    }
    let window_s = args.window.as_secs_f64();
    for url in &args.servers {
        let cfg =
            sglang_client::ClientConfig::new(url).api_key_from_env(sglang_client::API_KEY_ENV);
        let shown = sglang_client::error::redact_url(url);
        secrets.add_url_password(url);
        let client =
            sglang_client::SglangClient::new(cfg).with_context(|| format!("--server {shown}"))?;
        let t = Arc::new(Mutex::new(ServerTarget {
            instance: instance_of(url),
            shown,
            samples: VecDeque::new(),
            server: None,
            error: None,
        }));
        tasks.push(tokio::spawn(poll_server(
            t.clone(),
            client,
            args.poll,
            window_s,
            stop_rx.clone(),
        )));
        tasks.push(tokio::spawn(server_task(
            t,
            shared.clone(),
            args.interval,
            window_s,
            stop_rx.clone(),
        )));
    }
    for p in &args.logs {
        tasks.push(tokio::spawn(log_task(
            p.clone(),
            shared.clone(),
            args.interval,
            stop_rx.clone(),
        )));
    }
    let app = http::router(shared, token, secrets);
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("--listen {}", args.listen))?;
    let addr = listener.local_addr()?;
    tasks.push(tokio::spawn(http::serve(
        listener,
        app,
        http::Limits::of(net),
        stop_rx.clone(),
    )));
    Ok(ServeHandle {
        addr,
        stop: Some(stop_tx),
        tasks,
    })
}

/// Run `serve` until Ctrl-C.
///
/// # Errors
/// See [`start_with`]; the async runtime cannot start.
pub fn run(cmd: &ServeCmd) -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let res = rt.block_on(async {
        let h = start_with(&cmd.args, &cmd.net).await?;
        if !h.addr.ip().is_loopback() && cmd.net.auth_token_file.is_none() {
            eprintln!(
                "warning: serving {} without --auth-token-file: anyone who can reach it reads the verdicts and /report.json",
                h.addr
            );
        }
        eprintln!(
            "serving http://{}/metrics and /report.json; Ctrl-C stops",
            h.addr
        );
        let _ = tokio::signal::ctrl_c().await;
        eprintln!("stopping");
        h.shutdown().await;
        Ok(())
    });
    // A log read blocked on its file (a FIFO) must not hold the exit up.
    rt.shutdown_timeout(Duration::from_secs(1));
    res
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
        use diagnosis::Bottleneck;
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
