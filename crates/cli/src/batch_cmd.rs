//! `throughput-doctor run-batch`: the bounded-concurrency batch client with honest progress.
//!
//! Progress goes to stderr (indicatif): the windowed request and token rates with exact Poisson
//! intervals from `throughput-stats`, the lifetime figures beside them for comparison, and an ETA
//! with an interval. Ctrl-C stops submitting, waits for in-flight requests up to the grace period,
//! and exits 130.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use sglang_client::batch::{
    BatchApi, BatchConfig, CancelToken, CompletionEvent, ProgressSink, ProgressSnapshot,
};
use sglang_client::{API_KEY_ENV, ClientConfig};

use crate::flags::one_line;

/// Arguments of `run-batch`.
#[derive(Debug, Args)]
pub struct RunBatchArgs {
    /// Server base URL, e.g. http://127.0.0.1:30000. The API key, if any, comes from SGLANG_API_KEY.
    #[arg(long, value_name = "URL", value_parser = crate::flags::server_url)]
    pub server: String,
    /// Input prompts, JSONL: {"id": ..., "prompt": ...} or {"id": ..., "messages": [...]}.
    #[arg(long, value_name = "FILE")]
    pub prompts: PathBuf,
    /// Output records, JSONL (appended; ids already there with a success are skipped: resume; ids whose record is a failure are sent again). One run at a time per file (OUT.lock).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// On resume, keep the failed records as they are instead of sending their ids again (they still count as failed).
    #[arg(long)]
    pub no_retry_failed: bool,
    /// Requests in flight at once (1 to 100000); the others wait for a slot.
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000))]
    pub concurrency: usize,
    /// max_tokens sent with every request (tokens, 1 to 10000000; without it none is sent and the server's default applies).
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub max_tokens: Option<u64>,
    /// Longest a request may take in all, streamed answer included (seconds, or with ms/s/m/h; 1 s to 30 days). A request past it is recorded as failed (kind timeout), not retried.
    #[arg(long, value_name = "SECONDS", default_value = "600", value_parser = crate::flags::duration_between(1.0, crate::flags::MAX_DURATION_S))]
    pub timeout: Duration,
    /// A stream that sends no byte for this long after its first one is stalled (seconds, or with ms/s/m/h; 1 s to 1 h): retried, then recorded as failed.
    #[arg(long, value_name = "SECONDS", default_value = "60", value_parser = crate::flags::duration_between(1.0, 3600.0))]
    pub stall_timeout: Duration,
    /// Use /v1/chat/completions (default /v1/completions).
    #[arg(long)]
    pub chat: bool,
    /// Use SGLang's native /generate.
    #[arg(long, conflicts_with = "chat")]
    pub native: bool,
    /// Stream responses (server-sent events) and record the time to first token (TTFT) of each.
    #[arg(long)]
    pub stream: bool,
    /// Create every request at t=0 (they then wait for a slot), like an asyncio.gather script.
    #[arg(long)]
    pub burst: bool,
    /// Length of the sliding window the progress rates (req/s, tok/s) are measured over (seconds, 1 s to 1 day).
    #[arg(long, value_name = "SECONDS", default_value_t = 60.0, value_parser = crate::flags::seconds_between(1.0, 86_400.0))]
    pub window: f64,
    /// After Ctrl-C, how long in-flight requests may still finish before the client exits (seconds, 0 to 1 h).
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0, value_parser = crate::flags::seconds_between(0.0, 3600.0))]
    pub grace: f64,
}

/// Progress on stderr with windowed rates and intervals.
struct Progress {
    bar: ProgressBar,
    /// Plain lines instead of a bar (stderr is not a terminal).
    plain: bool,
    last_plain_s: f64,
    plain_every_s: f64,
    window_s: f64,
    /// (t since start, completion tokens) of recent successful completions.
    recent: VecDeque<(f64, u64)>,
    /// Redacted from every warning printed.
    key: Option<sglang_client::ApiKey>,
}

impl Progress {
    /// A message line above the bar, or on its own line without a terminal.
    fn say(&self, m: String) {
        if self.plain {
            eprintln!("{m}");
        } else {
            self.bar.println(m);
        }
    }

    fn line(&mut self, s: &ProgressSnapshot) -> String {
        let now = s.elapsed_s;
        while self
            .recent
            .front()
            .map(|x| now - x.0 > self.window_s)
            .unwrap_or(false)
        {
            self.recent.pop_front();
        }
        let window = self.window_s.min(now).max(1e-3);
        let n = self.recent.len() as u64;
        let tokens: u64 = self.recent.iter().map(|x| x.1).sum();
        let win = throughput_stats::RateEstimate::from_count(n, window, 0.95).ok();
        let mut out = match &win {
            Some(r) => format!(
                "{:.2} req/s [{:.2}-{:.2}] {:.0} tok/s over the last {:.0} s",
                r.rate_per_s,
                r.ci_low,
                r.ci_high,
                tokens as f64 / window,
                window
            ),
            None => "rate: n/a".into(),
        };
        out.push_str(&format!(
            " | lifetime {:.2} req/s {:.0} tok/s | {} ok {} failed {} in flight",
            s.lifetime_req_per_s, s.lifetime_tok_per_s, s.completed, s.failed, s.in_flight
        ));
        if let Some(r) = &win {
            let remaining = s.total.saturating_sub(s.completed + s.failed) as f64;
            if let Ok(e) = throughput_stats::eta(remaining, r) {
                out.push_str(&format!(" | {e}"));
            }
        }
        out
    }
}

impl ProgressSink for Progress {
    fn on_start(&mut self, total: u64, resumed: u64) {
        self.bar.set_length(total);
        if resumed > 0 {
            self.say(format!(
                "resuming: {resumed} ids already in the output are skipped"
            ));
        }
    }
    fn on_completion(&mut self, e: &CompletionEvent) {
        if e.ok {
            self.recent
                .push_back((e.t_s, e.completion_tokens.unwrap_or(0)));
        }
        self.bar.inc(1);
    }
    fn on_snapshot(&mut self, s: &ProgressSnapshot) {
        let msg = self.line(s);
        if self.plain {
            // stderr is not a terminal (nohup, a file, a pipe): one plain line every `plain_every_s`.
            if s.elapsed_s - self.last_plain_s >= self.plain_every_s {
                self.last_plain_s = s.elapsed_s;
                eprintln!(
                    "[{:.0} s] {}/{} {msg}",
                    s.elapsed_s,
                    s.completed + s.failed,
                    s.total
                );
            }
        } else {
            self.bar.set_message(msg);
        }
    }
    fn on_warning(&mut self, m: &str) {
        self.say(format!(
            "warning: {}",
            one_line(&redact(self.key.as_ref(), m))
        ));
    }
}

/// Run the batch; returns the exit code (0 all ok, 1 some failed, 130 interrupted).
///
/// # Errors
/// Input/output files that cannot be read or written, a bad server URL.
pub fn run(args: &RunBatchArgs) -> Result<i32> {
    let mut client = ClientConfig::new(args.server.clone()).api_key_from_env(API_KEY_ENV);
    client.generate_timeout = args.timeout;
    client.stall_timeout = args.stall_timeout;
    let key = client.api_key.clone();
    // What is printed never carries the URL's password or the API key.
    let server = sglang_client::error::redact_url(&args.server);
    let mut cfg = BatchConfig::new(client, &args.prompts, &args.out);
    cfg.retry_failed_on_resume = !args.no_retry_failed;
    cfg.api = if args.native {
        BatchApi::Generate
    } else if args.chat {
        BatchApi::Chat
    } else {
        BatchApi::Completions
    };
    if let Some(m) = args.max_tokens {
        let key = if args.native {
            "max_new_tokens"
        } else {
            "max_tokens"
        };
        cfg.params.insert(key.into(), m.into());
    }
    cfg.stream = args.stream;
    cfg.concurrency = args.concurrency;
    cfg.burst = args.burst;
    cfg.grace = Duration::from_secs_f64(args.grace);
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{pos}/{len} {wide_msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let plain = !std::io::IsTerminal::is_terminal(&std::io::stderr());
    let progress = Progress {
        bar: bar.clone(),
        plain,
        last_plain_s: f64::NEG_INFINITY,
        plain_every_s: 10.0,
        window_s: args.window,
        key: key.clone(),
        recent: VecDeque::new(),
    };
    let cancel = CancelToken::new();
    let grace = args.grace;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let summary = rt.block_on(async {
        let c = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("Ctrl-C: no new requests; waiting up to {grace:.0} s for those in flight (rerun with the same --out to resume)");
                c.cancel();
            }
        });
        sglang_client::batch::run_batch(cfg, progress, cancel.clone()).await
    });
    bar.finish();
    let summary = summary
        .map_err(|e| anyhow::anyhow!(redact(key.as_ref(), &e.to_string())))
        .with_context(|| format!("batch run against {server}"))?;
    eprintln!(
        "done: {} ok, {} failed, {} retries, {} not finished, {} resumed; {} completion tokens in {:.1} s ({:.0} tok/s)",
        summary.ok,
        summary.failed,
        summary.retries,
        summary.not_finished,
        summary.resumed,
        summary.completion_tokens,
        summary.elapsed_s,
        summary.completion_tokens as f64 / summary.elapsed_s.max(1e-9)
    );
    for (line, why) in summary.input_problems.iter().take(20) {
        eprintln!(
            "input {}:{line}: {}",
            one_line(&args.prompts.display().to_string()),
            one_line(why)
        );
    }
    for p in summary.output_problems.iter().take(20) {
        eprintln!(
            "output {}: {}",
            one_line(&args.out.display().to_string()),
            one_line(p)
        );
    }
    let kept = summary.failed_in_file.saturating_sub(summary.failed);
    if kept > 0 {
        eprintln!(
            "note {}: {kept} earlier failed record(s) kept and not sent again (--no-retry-failed); {} failed in the file in all",
            one_line(&args.out.display().to_string()),
            summary.failed_in_file
        );
    }
    Ok(if summary.cancelled {
        130
    } else if summary.failed_in_file > 0 {
        1
    } else {
        0
    })
}

/// `text` with the API key (when set) replaced by `<redacted>`.
fn redact(key: Option<&sglang_client::ApiKey>, text: &str) -> String {
    match key {
        Some(k) => k.redact(text).into_owned(),
        None => text.to_string(),
    }
}
