//! Minimal stand-alone batch runner over [`sglang_client::batch::run_batch`]
//! (the full CLI is `throughput-doctor run-batch`). Used by the kill -9
//! test as the child process.
//!
//! `sglang-batch --url http://127.0.0.1:30000 --input prompts.jsonl --out out.jsonl
//!  [--concurrency 64] [--burst] [--stream] [--api chat|completions|generate]
//!  [--max-tokens N] [--retries N] [--backoff-ms N]`
//!
//! Prints a one-line summary on stderr; exit 0 when every request
//! succeeded, 1 when some failed, 2 on bad arguments, 130 when interrupted.

use std::time::Duration;

use sglang_client::batch::{BatchApi, BatchConfig, CancelToken, NoProgress, run_batch};
use sglang_client::{API_KEY_ENV, ClientConfig};

fn usage(msg: &str) -> ! {
    eprintln!("sglang-batch: {msg}");
    eprintln!(
        "usage: sglang-batch --url URL --input FILE --out FILE [--concurrency N] [--burst] [--stream] \
         [--api chat|completions|generate] [--max-tokens N] [--retries N] [--backoff-ms N]"
    );
    std::process::exit(2);
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let (mut url, mut input, mut out) = (None, None, None);
    let mut concurrency = 64usize;
    let (mut burst, mut stream) = (false, false);
    let mut api = BatchApi::Chat;
    let mut max_tokens: Option<u64> = None;
    let mut retries: Option<u32> = None;
    let mut backoff_ms: Option<u64> = None;
    while let Some(a) = args.next() {
        let mut val = || {
            args.next()
                .unwrap_or_else(|| usage(&format!("{a} needs a value")))
        };
        match a.as_str() {
            "--url" => url = Some(val()),
            "--input" => input = Some(val()),
            "--out" => out = Some(val()),
            "--concurrency" => {
                concurrency = val().parse().unwrap_or_else(|_| usage("bad --concurrency"))
            }
            "--burst" => burst = true,
            "--stream" => stream = true,
            "--api" => {
                api = match val().as_str() {
                    "chat" => BatchApi::Chat,
                    "completions" => BatchApi::Completions,
                    "generate" => BatchApi::Generate,
                    other => usage(&format!("unknown --api {other}")),
                }
            }
            "--max-tokens" => {
                max_tokens = Some(val().parse().unwrap_or_else(|_| usage("bad --max-tokens")))
            }
            "--retries" => retries = Some(val().parse().unwrap_or_else(|_| usage("bad --retries"))),
            "--backoff-ms" => {
                backoff_ms = Some(val().parse().unwrap_or_else(|_| usage("bad --backoff-ms")))
            }
            other => usage(&format!("unknown argument {other}")),
        }
    }
    let (Some(url), Some(input), Some(out)) = (url, input, out) else {
        usage("--url, --input and --out are required")
    };
    let client = ClientConfig::new(url).api_key_from_env(API_KEY_ENV);
    let mut cfg = BatchConfig::new(client, input, out);
    cfg.api = api;
    cfg.concurrency = concurrency;
    cfg.burst = burst;
    cfg.stream = stream;
    if let Some(m) = max_tokens {
        let key = if api == BatchApi::Generate {
            "max_new_tokens"
        } else {
            "max_tokens"
        };
        cfg.params.insert(key.into(), m.into());
    }
    if let Some(r) = retries {
        cfg.retry.max_attempts = r + 1;
    }
    if let Some(b) = backoff_ms {
        cfg.retry.base_delay = Duration::from_millis(b);
    }
    let cancel = CancelToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            c2.cancel();
        }
    });
    match run_batch(cfg, NoProgress, cancel).await {
        Ok(s) => {
            eprintln!(
                "sglang-batch: {} ok, {} failed, {} resumed, {} retries, {} not finished, {:.2} s",
                s.ok, s.failed, s.resumed, s.retries, s.not_finished, s.elapsed_s
            );
            for (line, why) in &s.input_problems {
                eprintln!("sglang-batch: input line {line}: {why}");
            }
            for p in &s.output_problems {
                eprintln!("sglang-batch: warning: {p}");
            }
            std::process::exit(if s.cancelled {
                130
            } else if s.failed_in_file > 0 {
                1
            } else {
                0
            });
        }
        Err(e) => {
            eprintln!("sglang-batch: {e}");
            std::process::exit(1);
        }
    }
}
