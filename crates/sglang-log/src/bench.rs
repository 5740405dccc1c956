//! Summary blocks of SGLang's benchmark clients, read from any text that holds them: a saved
//! `python -m sglang.bench_serving` output, a CI log that runs server and benchmark together, a
//! bug report's paste.
//!
//! Two shapes are recognised (spec `sglang-observables.md` §7):
//! - the `Serving Benchmark Result` block of `sglang.bench_serving` (≤ v0.5.14) and
//!   `sglang.benchmark.serving` (v0.5.15+): a title centred in `=`, one `Label: value` line per
//!   metric, sub-headers centred in `-`, a closing line of `=`. vLLM's `bench serve` prints the
//!   same block with a few other labels (`Failed requests`, `Maximum request concurrency`);
//!   every version's labels are read, including the `Max reqeuest concurrency` typo of
//!   v0.3.6.post1 – v0.4.6.post3. Latencies there are in milliseconds.
//! - the `Performance metrics summary:` of SGLang's multi-turn benchmark
//!   (`benchmark/hicache/bench_multiturn.py`): indented `Label: value [unit words]` lines with
//!   latencies in seconds.
//!
//! Nothing is lost: a `Label: value` line inside a block whose label has no typed field (or
//! whose value does not parse) is kept in [`BenchSummary::other`] with its line number. A block
//! cut short (a paste that ends mid-block) ends at its last metric line.
//!
//! The `--num-prompts N` of a benchmark command line (or `num_prompts=N` of its printed
//! arguments) seen before a block is attached to it, so that "1,648 successful" can be read
//! against "3,000 requested".

use serde::Serialize;

/// Which benchmark printed a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BenchTool {
    /// `====== Serving Benchmark Result ======` (sglang.bench_serving, vLLM bench serve).
    ServingBenchmark,
    /// `Performance metrics summary:` (SGLang's multi-turn benchmark).
    MultiTurnSummary,
    /// A client's own run summary read from its result file or console tables (AIPerf,
    /// GuideLLM, `vllm bench serve --save-result`, an llm-d Benchmark Report): the same
    /// whole-run figures under the client's own names.
    RunSummary,
}

/// Which client program printed a `Serving Benchmark Result` block, told from what each one
/// prints (their own source: SGLang's `bench_serving.py` / `benchmark/serving.py`, vLLM's
/// `benchmarks/benchmark_serving.py` and `vllm/benchmarks/serve.py`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BenchClient {
    /// SGLang's `bench_serving`: its block opens with `Backend:`.
    SglangBenchServing,
    /// vLLM's `benchmark_serving.py` / `vllm bench serve`: no `Backend:` line; `Failed
    /// requests`, `Maximum request concurrency`, `Request goodput`, `Total Token throughput`,
    /// or the `Traffic request rate` / `Burstiness factor` lines printed before the block.
    VllmBenchServe,
    /// SGLang's multi-turn benchmark (`Performance metrics summary:`).
    SglangMultiTurn,
    /// NVIDIA AIPerf (`profile_export_aiperf.json` / `.csv`, its console tables).
    Aiperf,
    /// GuideLLM (`benchmarks.json` / `.yaml` / `.csv`, its console tables).
    Guidellm,
    /// An llm-d Benchmark Report (v0.2), written by llm-d-benchmark for any harness.
    LlmdReport,
    /// Nothing in the block tells.
    Unknown,
}

/// Statistics of one latency metric over the benchmark's requests (seconds; `None` where the
/// block does not print that statistic).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct LatencyStats {
    /// Mean (seconds).
    pub mean_s: Option<f64>,
    /// Median (seconds).
    pub median_s: Option<f64>,
    /// 90th percentile (seconds).
    pub p90_s: Option<f64>,
    /// 95th percentile (seconds).
    pub p95_s: Option<f64>,
    /// 99th percentile (seconds).
    pub p99_s: Option<f64>,
    /// Maximum (seconds).
    pub max_s: Option<f64>,
}

impl LatencyStats {
    /// Whether any statistic is present.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// A `Label: value` line of a block that has no typed field, kept as printed.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct BenchField {
    /// 1-based line number in the text.
    pub line_no: u64,
    /// The label, without its colon.
    pub label: String,
    /// The value, as printed (trimmed).
    pub value: String,
}

/// One benchmark summary block. Every metric is `None` when the block does not print it (the
/// set of lines differs by version, spec §7).
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct BenchSummary {
    /// Which benchmark printed it.
    pub tool: BenchTool,
    /// Which client program printed it ([`BenchClient`]).
    pub client: BenchClient,
    /// 1-based line number of the title line.
    pub first_line: u64,
    /// 1-based line number of the block's last line read.
    pub last_line: u64,
    /// `--num-prompts` of the benchmark command (or `num_prompts=` of its printed arguments)
    /// seen before the block: the requests the benchmark was asked to send.
    pub num_prompts: Option<u64>,
    /// `Backend:` (e.g. `sglang`, `sglang-oai`, `vllm`).
    pub backend: Option<String>,
    /// `Traffic request rate:` as printed: a number (req/s), `inf` (all at once) or `trace`.
    pub request_rate: Option<String>,
    /// `Max request concurrency:` (requests); `None` when `not set` or absent.
    pub max_concurrency: Option<u64>,
    /// `Successful requests:`.
    pub successful_requests: Option<u64>,
    /// `Failed requests:` (vLLM's block prints it; SGLang's counts only successes).
    pub failed_requests: Option<u64>,
    /// `Total requests:` of the multi-turn summary.
    pub total_requests: Option<u64>,
    /// `Benchmark duration (s):` wall time of the whole run, ramp and drain included (seconds).
    pub duration_s: Option<f64>,
    /// `Total input tokens:` (tokens).
    pub total_input_tokens: Option<u64>,
    /// `Total input vision tokens:` (tokens): image or video tokens among the input (SGLang's
    /// bench_serving v0.5.x, vLLM's multimodal runs).
    pub total_input_vision_tokens: Option<u64>,
    /// The lines before the block name a PD-disaggregated deployment: a router started with
    /// `--pd-disaggregation`, or the benchmark's `--pd-separated` / `pd_separated=True`.
    pub pd_disaggregation: bool,
    /// `Total generated tokens:` as the server counted them (tokens).
    pub total_generated_tokens: Option<u64>,
    /// `Total generated tokens (retokenized):` (tokens).
    pub total_generated_tokens_retokenized: Option<u64>,
    /// `Request throughput (req/s):` successful requests / duration: a whole-run average.
    pub request_throughput: Option<f64>,
    /// `Input token throughput (tok/s):` prompt tokens / duration.
    pub input_tok_per_s: Option<f64>,
    /// `Output token throughput (tok/s):` generated tokens / duration: a whole-run average.
    pub output_tok_per_s: Option<f64>,
    /// `Peak output token throughput (tok/s):` the best 1-second bucket (v0.5.6+).
    pub peak_output_tok_per_s: Option<f64>,
    /// `Peak concurrent requests:` the most requests in flight in a 1-second bucket (v0.5.6+).
    pub peak_concurrent_requests: Option<f64>,
    /// `Total token throughput (tok/s):` (input + output) / duration.
    pub total_tok_per_s: Option<f64>,
    /// `Concurrency:` Σ end-to-end latency / duration, the mean requests in flight (Little's law).
    pub concurrency: Option<f64>,
    /// `Accept length:` mean accepted tokens per speculative-decoding step.
    pub accept_length: Option<f64>,
    /// `Average Prompt Length:` of the multi-turn summary (tokens).
    pub mean_prompt_tokens: Option<f64>,
    /// `Average Output Length:` of the multi-turn summary (tokens).
    pub mean_output_tokens: Option<f64>,
    /// `Cache Hit Rate:` of the multi-turn summary (fraction of prompt tokens).
    pub cache_hit_rate: Option<f64>,
    /// End-to-end latency: send to last byte.
    pub e2e: LatencyStats,
    /// Time to first token: send to the first streamed chunk.
    pub ttft: LatencyStats,
    /// Time per output token after the first: (e2e − TTFT) / (output tokens − 1) per request.
    pub tpot: LatencyStats,
    /// Inter-token latency: gaps between streamed chunks, pooled over requests.
    pub itl: LatencyStats,
    /// `Label: value` lines without a typed field (or whose value did not parse), kept.
    pub other: Vec<BenchField>,
    /// Which run of the file this is, as the client names it (GuideLLM's strategy
    /// `concurrent@64`, an llm-d report's harness), when it names one.
    pub label: Option<String>,
    /// The client's version, when its file states one (`aiperf_version`, `guidellm_version`).
    pub client_version: Option<String>,
    /// Requests the client cancelled in flight, at its time limit (GuideLLM's `incomplete`,
    /// an llm-d report's `incomplete`): neither completed nor failed on the server's side.
    pub cancelled_requests: Option<u64>,
}

impl BenchSummary {
    /// The summary of `sglang.bench_serving --output-file` (one JSON object per run: the block's
    /// figures under snake-case names, latencies in milliseconds, beside per-request arrays),
    /// as its console block would give it; `None` when `v` is no such object (it needs
    /// `completed` and `duration`). Line numbers are the object's line.
    pub fn from_bench_serving_json(v: &serde_json::Value, line_no: u64) -> Option<Self> {
        let o = v.as_object()?;
        let f = |k: &str| {
            o.get(k)
                .and_then(serde_json::Value::as_f64)
                .filter(|x| x.is_finite() && *x >= 0.0)
        };
        let u = |k: &str| f(k).map(|x| x as u64);
        let completed = u("completed")?;
        let duration = f("duration")?;
        let mut b = BenchSummary::new(BenchTool::ServingBenchmark, line_no, None);
        // vLLM's `--save-result` holds the same figures under a few other names (`failed`,
        // `*_e2el_ms`, `burstiness`, `endpoint_type`, `label`: `vllm/benchmarks/serve.py`)
        let vllm = ["failed", "burstiness", "endpoint_type", "mean_e2el_ms"]
            .iter()
            .any(|k| o.contains_key(*k));
        b.client = if vllm {
            BenchClient::VllmBenchServe
        } else {
            BenchClient::SglangBenchServing
        };
        b.failed_requests = u("failed");
        if vllm {
            b.num_prompts = u("num_prompts");
            b.label = o.get("label").and_then(|x| x.as_str()).map(str::to_string);
        }
        b.last_line = line_no;
        b.backend = o
            .get("backend")
            .and_then(|x| x.as_str())
            .map(str::to_string);
        b.request_rate = o.get("request_rate").map(|r| match r {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        });
        b.max_concurrency = u("max_concurrency");
        b.successful_requests = Some(completed);
        b.duration_s = Some(duration);
        b.total_input_tokens = u("total_input_tokens");
        b.total_input_vision_tokens = u("total_input_vision_tokens");
        b.total_generated_tokens = u("total_output_tokens");
        b.total_generated_tokens_retokenized = u("total_output_tokens_retokenized");
        b.request_throughput = f("request_throughput");
        b.input_tok_per_s = f("input_throughput");
        b.output_tok_per_s = f("output_throughput");
        b.total_tok_per_s = f("total_throughput").or_else(|| f("total_token_throughput"));
        b.peak_output_tok_per_s = f("max_output_tokens_per_s");
        b.peak_concurrent_requests = f("max_concurrent_requests");
        b.concurrency = f("concurrency");
        b.accept_length = f("accept_length");
        let ms = |k: &str| f(k).map(|x| x / 1000.0);
        let stats = |m: &str| LatencyStats {
            mean_s: ms(&format!("mean_{m}_ms")),
            median_s: ms(&format!("median_{m}_ms")),
            p90_s: ms(&format!("p90_{m}_ms")),
            p95_s: ms(&format!("p95_{m}_ms")),
            p99_s: ms(&format!("p99_{m}_ms")),
            max_s: ms(&format!("max_{m}_ms")),
        };
        b.e2e = if vllm {
            stats("e2el")
        } else {
            stats("e2e_latency")
        };
        b.ttft = stats("ttft");
        b.tpot = stats("tpot");
        b.itl = stats("itl");
        Some(b)
    }

    fn new(tool: BenchTool, line_no: u64, num_prompts: Option<u64>) -> Self {
        BenchSummary {
            tool,
            client: match tool {
                BenchTool::ServingBenchmark => BenchClient::Unknown,
                BenchTool::MultiTurnSummary => BenchClient::SglangMultiTurn,
                BenchTool::RunSummary => BenchClient::Unknown,
            },
            first_line: line_no,
            last_line: line_no,
            num_prompts,
            backend: None,
            request_rate: None,
            max_concurrency: None,
            successful_requests: None,
            failed_requests: None,
            total_requests: None,
            duration_s: None,
            total_input_tokens: None,
            total_input_vision_tokens: None,
            pd_disaggregation: false,
            total_generated_tokens: None,
            total_generated_tokens_retokenized: None,
            request_throughput: None,
            input_tok_per_s: None,
            output_tok_per_s: None,
            peak_output_tok_per_s: None,
            peak_concurrent_requests: None,
            total_tok_per_s: None,
            concurrency: None,
            accept_length: None,
            mean_prompt_tokens: None,
            mean_output_tokens: None,
            cache_hit_rate: None,
            e2e: LatencyStats::default(),
            ttft: LatencyStats::default(),
            tpot: LatencyStats::default(),
            itl: LatencyStats::default(),
            other: Vec::new(),
            label: None,
            client_version: None,
            cancelled_requests: None,
        }
    }

    /// An empty run summary of `client` read from a result file or console tables, its first
    /// line `line_no` (every figure `None`, filled by the client's reader).
    pub fn run_summary(client: BenchClient, line_no: u64) -> Self {
        let mut b = Self::new(BenchTool::RunSummary, line_no, None);
        b.client = client;
        b
    }

    /// Requests the benchmark meant to complete: successful + failed when the block prints
    /// failures, else `--num-prompts`, else the multi-turn `Total requests`.
    pub fn requested(&self) -> Option<u64> {
        match (self.successful_requests, self.failed_requests) {
            (Some(ok), Some(failed)) => Some(ok + failed),
            _ => self.num_prompts.or(self.total_requests),
        }
    }

    /// Requests that did not complete successfully: `Failed requests`, else requested minus
    /// successful when both are known. `None` when it cannot be told.
    pub fn failed(&self) -> Option<u64> {
        if self.failed_requests.is_some() {
            return self.failed_requests;
        }
        Some(self.requested()?.saturating_sub(self.successful_requests?))
    }

    /// The traffic request rate as a number (req/s); `None` for `inf`, `trace` or absent.
    pub fn request_rate_per_s(&self) -> Option<f64> {
        self.request_rate
            .as_deref()?
            .parse::<f64>()
            .ok()
            .filter(|r| r.is_finite())
    }

    /// Mean output tokens per successful request: `Total generated tokens / Successful requests`,
    /// else the multi-turn `Average Output Length` (tokens).
    pub fn mean_completion_tokens(&self) -> Option<f64> {
        match (self.total_generated_tokens, self.successful_requests) {
            (Some(t), Some(n)) if n > 0 => Some(t as f64 / n as f64),
            _ => self.mean_output_tokens,
        }
    }

    /// Mean prompt tokens per successful request: `Total input tokens / Successful requests`, else
    /// the multi-turn `Average Prompt Length` (tokens).
    pub fn mean_prompt_tokens(&self) -> Option<f64> {
        match (self.total_input_tokens, self.successful_requests) {
            (Some(t), Some(n)) if n > 0 => Some(t as f64 / n as f64),
            _ => self.mean_prompt_tokens,
        }
    }

    /// What a label says of the client that printed it: `Backend:` is SGLang's alone; labels
    /// only vLLM's block prints (`Total Token throughput` with its capital T) are vLLM's.
    fn note_client(&mut self, label: &str, key: &str) {
        if self.tool != BenchTool::ServingBenchmark {
            return;
        }
        if key == "backend" {
            self.client = BenchClient::SglangBenchServing;
        } else if self.client == BenchClient::Unknown
            && (matches!(
                key,
                "failed requests" | "maximum request concurrency" | "request goodput (req/s)"
            ) || label.starts_with("Total Token throughput"))
        {
            self.client = BenchClient::VllmBenchServe;
        }
    }

    /// The block's `Label: value` lines read into typed fields: `false` when the label is not
    /// one this tool knows (the caller keeps it in `other`).
    fn apply(&mut self, label: &str, value: &str) -> Apply {
        let key = label
            .trim()
            .to_ascii_lowercase()
            .replace("reqeuest", "request");
        self.note_client(label.trim(), &key);
        let num = first_token(value);
        let f = || {
            num.and_then(|s| s.parse::<f64>().ok())
                .filter(|x| x.is_finite())
        };
        let u = || num.and_then(|s| s.parse::<u64>().ok());
        let set_f = |slot: &mut Option<f64>| match f() {
            Some(x) => {
                *slot = Some(x);
                Apply::Typed
            }
            None => Apply::BadValue,
        };
        let set_u = |slot: &mut Option<u64>| match u() {
            Some(x) => {
                *slot = Some(x);
                Apply::Typed
            }
            None => Apply::BadValue,
        };
        match key.as_str() {
            "backend" => {
                self.backend = num.map(str::to_string);
                Apply::Typed
            }
            "traffic request rate" => {
                self.request_rate = num.map(str::to_string);
                Apply::Typed
            }
            "max request concurrency" | "maximum request concurrency" => {
                if value.trim().eq_ignore_ascii_case("not set") {
                    self.max_concurrency = None;
                    Apply::Typed
                } else {
                    set_u(&mut self.max_concurrency)
                }
            }
            "successful requests" => set_u(&mut self.successful_requests),
            "failed requests" => set_u(&mut self.failed_requests),
            "total requests" => {
                // multi-turn: "75 at 10 requests per second"
                if let Some(rate) = value.split(" at ").nth(1).and_then(first_token) {
                    self.request_rate = Some(rate.to_string());
                }
                set_u(&mut self.total_requests)
            }
            "benchmark duration (s)" => set_f(&mut self.duration_s),
            "total input tokens" => set_u(&mut self.total_input_tokens),
            "total input vision tokens" => set_u(&mut self.total_input_vision_tokens),
            "total generated tokens" => set_u(&mut self.total_generated_tokens),
            "total generated tokens (retokenized)" => {
                set_u(&mut self.total_generated_tokens_retokenized)
            }
            "request throughput (req/s)" | "request throughput" => {
                set_f(&mut self.request_throughput)
            }
            "input token throughput (tok/s)" | "input token throughput" => {
                set_f(&mut self.input_tok_per_s)
            }
            "output token throughput (tok/s)" | "output token throughput" => {
                set_f(&mut self.output_tok_per_s)
            }
            "peak output token throughput (tok/s)" => set_f(&mut self.peak_output_tok_per_s),
            "peak concurrent requests" => set_f(&mut self.peak_concurrent_requests),
            "total token throughput (tok/s)" | "total token throughput" => {
                set_f(&mut self.total_tok_per_s)
            }
            "concurrency" => set_f(&mut self.concurrency),
            "accept length" => set_f(&mut self.accept_length),
            "average prompt length" => set_f(&mut self.mean_prompt_tokens),
            "average output length" => set_f(&mut self.mean_output_tokens),
            "cache hit rate" => set_f(&mut self.cache_hit_rate),
            // The multi-turn summary's length percentiles: known, kept untyped.
            k if k.ends_with("prompt length") || k.ends_with("output length") => Apply::Kept,
            _ => {
                let default_unit_s = match self.tool {
                    BenchTool::ServingBenchmark | BenchTool::RunSummary => 1e-3,
                    BenchTool::MultiTurnSummary => 1.0,
                };
                match latency_slot(self, &key, default_unit_s) {
                    Some((slot, scale)) => match f() {
                        Some(x) => {
                            *slot = Some(x * scale);
                            Apply::Typed
                        }
                        None => Apply::BadValue,
                    },
                    None => Apply::Unknown,
                }
            }
        }
    }
}

/// What [`BenchSummary::apply`] made of a line.
enum Apply {
    /// Read into a typed field.
    Typed,
    /// A label this tool knows, kept in `other` as printed.
    Kept,
    /// A known label whose value did not parse (kept in `other`).
    BadValue,
    /// A label this tool does not know.
    Unknown,
}

/// `Mean TTFT (ms)`, `P99 E2E Latency (ms)`, `Average ITL`, `Max latency`: the statistic's slot
/// and the factor to seconds.
fn latency_slot<'s>(
    s: &'s mut BenchSummary,
    key: &str,
    default_unit_s: f64,
) -> Option<(&'s mut Option<f64>, f64)> {
    let (key, scale) = if let Some(k) = key.strip_suffix("(ms)") {
        (k.trim_end(), 1e-3)
    } else if let Some(k) = key.strip_suffix("(s)") {
        (k.trim_end(), 1.0)
    } else {
        (key, default_unit_s)
    };
    let (stat, metric) = key.split_once(' ')?;
    let stats = match metric.trim() {
        "e2e latency" | "latency" => &mut s.e2e,
        "ttft" => &mut s.ttft,
        "tpot" => &mut s.tpot,
        "itl" => &mut s.itl,
        _ => return None,
    };
    let slot = match stat {
        "mean" | "average" => &mut stats.mean_s,
        "median" | "p50" => &mut stats.median_s,
        "p90" => &mut stats.p90_s,
        "p95" => &mut stats.p95_s,
        "p99" => &mut stats.p99_s,
        "max" => &mut stats.max_s,
        _ => return None,
    };
    Some((slot, scale))
}

/// The first whitespace-separated token of a value.
fn first_token(v: &str) -> Option<&str> {
    v.split_whitespace().next()
}

/// `Label: value`, split at the first `: ` (or a final `:`); the label must start with a
/// letter or `#` and hold no `=` (that is a Python repr, not a metric line).
fn split_label(t: &str) -> Option<(&str, &str)> {
    let (label, value) = t.split_once(':')?;
    let first = label.chars().next()?;
    if !(first.is_ascii_alphabetic() || first == '#') || label.contains('=') || label.len() > 60 {
        return None;
    }
    if !(value.is_empty() || value.starts_with(' ')) {
        return None;
    }
    Some((label.trim(), value.trim()))
}

/// Whether the trimmed line `t` opens a benchmark summary block (a `Serving Benchmark Result`
/// title or a `Performance metrics summary:` line).
pub(crate) fn is_block_header(t: &str) -> bool {
    is_title(t) || t.ends_with("Performance metrics summary:")
}

/// `===== Serving Benchmark Result =====` (any run of `=` either side).
fn is_title(t: &str) -> bool {
    t.starts_with("==")
        && t.ends_with("==")
        && t.trim_matches('=').trim() == "Serving Benchmark Result"
}

/// A sub-header such as `----------------End-to-End Latency----------------`.
fn is_subheader(t: &str) -> bool {
    t.starts_with("---") && t.ends_with("---") && t.chars().any(|c| c.is_ascii_alphabetic())
}

/// A closing line: ten or more `=` and nothing else.
fn is_closing(t: &str) -> bool {
    t.len() >= 10 && t.bytes().all(|b| b == b'=')
}

/// Whether [`BenchCollector::push`] trims `c` off a line's ends: blanks, quotes and backticks.
fn is_block_trim(c: char) -> bool {
    c.is_whitespace() || c == '\'' || c == '"' || c == '`'
}

/// `line` with the characters [`is_block_trim`] names trimmed off both ends: the ASCII ones by
/// bytes, and through `str::trim_matches` (which decodes each character) only when a
/// non-ASCII byte is reached from an end, where a Unicode blank may stand.
fn trim_block_line(line: &str) -> &str {
    let b = line.as_bytes();
    let keep = |c: &u8| !(c.is_ascii() && is_block_trim(char::from(*c)));
    let (Some(start), Some(end)) = (b.iter().position(keep), b.iter().rposition(keep)) else {
        // all ASCII blanks and quotes (or empty)
        return "";
    };
    if !b[start].is_ascii() || !b[end].is_ascii() {
        return line.trim_matches(is_block_trim);
    }
    // both ends are ASCII bytes, so character boundaries
    &line[start..=end]
}

/// Whether `t` holds `pd` or `prompts`, which every needle [`BenchCollector::push`] looks for
/// outside a block holds (`prompts` with `num`; `pd-disaggregation`, `--pd-separated`,
/// `pd_separated=True`).
fn mentions_pd_or_prompts(t: &str) -> bool {
    let b = t.as_bytes();
    memchr::memchr_iter(b'p', b).any(|i| {
        let after = &b[i + 1..];
        after.first() == Some(&b'd') || after.starts_with(b"rompts")
    })
}

/// `--num-prompts 3000`, `--num-prompts=3000` or `num_prompts=3000` anywhere in a line.
fn num_prompts_in(line: &str) -> Option<u64> {
    for pat in ["--num-prompts", "num_prompts=", "num-prompts"] {
        if let Some(i) = line.find(pat) {
            let rest = line[i + pat.len()..].trim_start_matches([' ', '=']);
            let digits: &str = &rest[..rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len())];
            if let Ok(n) = digits.parse() {
                return Some(n);
            }
        }
    }
    None
}

/// Finds benchmark summary blocks in a stream of lines. Feed every line with
/// [`push`](Self::push) (or only the lines that are not scheduler lines: a block never holds
/// one), then take the blocks with [`finish`](Self::finish). Holds one block at a time; the
/// cost per line outside a block is a few byte compares.
#[derive(Debug, Default)]
pub struct BenchCollector {
    cur: Option<BenchSummary>,
    done: Vec<BenchSummary>,
    num_prompts: Option<u64>,
    /// A line before the block named a PD deployment ([`BenchSummary::pd_disaggregation`]).
    pd: bool,
    preamble: Preamble,
}

/// What vLLM's benchmark prints before its block (`Traffic request rate: inf`, `Burstiness
/// factor: 1.0 (Poisson process)`, `Maximum request concurrency: 10`): the settings of the run
/// whose block follows. SGLang's block prints its own inside.
#[derive(Debug, Default)]
struct Preamble {
    request_rate: Option<String>,
    max_concurrency: Option<u64>,
    seen: bool,
}

impl Preamble {
    /// Reads one line outside a block; `true` when it was a preamble line.
    fn read(&mut self, t: &str) -> bool {
        // a label below starts the line (`split_label` keeps its first character): the other
        // lines need no split
        if !matches!(t.as_bytes().first(), Some(b'T' | b'M' | b'B')) {
            return false;
        }
        let Some((label, value)) = split_label(t) else {
            return false;
        };
        match label {
            "Traffic request rate" => self.request_rate = first_token(value).map(str::to_string),
            "Maximum request concurrency" | "Max request concurrency" => {
                self.max_concurrency = first_token(value).and_then(|v| v.parse().ok())
            }
            "Burstiness factor" => {}
            _ => return false,
        }
        self.seen = true;
        true
    }
}

impl BenchCollector {
    /// An empty collector.
    pub fn new() -> Self {
        Self::default()
    }

    /// Blocks completed so far.
    pub fn completed(&self) -> &[BenchSummary] {
        &self.done
    }

    fn close(&mut self) {
        if let Some(b) = self.cur.take() {
            self.done.push(b);
        }
    }

    /// Feed one line (`line_no` 1-based). Leading and trailing blanks, quotes and `\r` are
    /// ignored, so pasted and indented blocks are read too.
    pub fn push(&mut self, line_no: u64, line: &str) {
        let t = trim_block_line(line);
        if is_title(t) {
            self.close();
            let mut b = BenchSummary::new(BenchTool::ServingBenchmark, line_no, self.num_prompts);
            b.pd_disaggregation = self.pd;
            let pre = std::mem::take(&mut self.preamble);
            if pre.seen {
                b.client = BenchClient::VllmBenchServe;
                b.request_rate = pre.request_rate;
                b.max_concurrency = pre.max_concurrency;
            }
            self.cur = Some(b);
            return;
        }
        if t.ends_with("Performance metrics summary:") {
            self.close();
            self.cur = Some(BenchSummary::new(
                BenchTool::MultiTurnSummary,
                line_no,
                self.num_prompts,
            ));
            return;
        }
        let Some(cur) = self.cur.as_mut() else {
            if self.preamble.read(t) {
                return;
            }
            // most lines outside a block (a traceback's, a client's) say neither: one scan
            // for their `p` instead of five substring searches
            if !mentions_pd_or_prompts(t) {
                return;
            }
            if t.contains("num") && t.contains("prompts") {
                self.num_prompts = num_prompts_in(t).or(self.num_prompts);
            }
            if t.contains("pd-disaggregation")
                || t.contains("--pd-separated")
                || t.contains("pd_separated=True")
            {
                self.pd = true;
            }
            return;
        };
        if cur.tool == BenchTool::ServingBenchmark && (is_closing(t) || is_subheader(t)) {
            cur.last_line = line_no;
            if is_closing(t) {
                self.close();
            }
            return;
        }
        let Some((label, value)) = split_label(t) else {
            self.close();
            return;
        };
        match cur.apply(label, value) {
            Apply::Typed => cur.last_line = line_no,
            // A multi-turn summary has no closing line: an unknown label is what follows it.
            Apply::Unknown if cur.tool == BenchTool::MultiTurnSummary => self.close(),
            Apply::Unknown | Apply::Kept | Apply::BadValue => {
                cur.last_line = line_no;
                cur.other.push(BenchField {
                    line_no,
                    label: label.to_string(),
                    value: value.to_string(),
                });
            }
        }
    }

    /// The blocks found, in order of appearance (a block still open at the end is included).
    pub fn finish(mut self) -> Vec<BenchSummary> {
        self.close();
        self.done
    }
}

/// Every benchmark summary block in `text`, in order (see [`BenchCollector`]).
pub fn parse_bench_summaries(text: &str) -> Vec<BenchSummary> {
    let mut c = BenchCollector::new();
    for (i, line) in text.lines().enumerate() {
        c.push(i as u64 + 1, line);
    }
    c.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_units() {
        assert_eq!(
            split_label("Mean TTFT (ms):   12.5  "),
            Some(("Mean TTFT (ms)", "12.5"))
        );
        assert_eq!(split_label("http://x:30000"), None);
        assert_eq!(split_label("benchmark_args=Namespace(a: 1)"), None);
        assert!(is_title(
            "============ Serving Benchmark Result ============"
        ));
        assert!(is_subheader(
            "-----Time per Output Token (excl. 1st token)------"
        ));
        assert!(is_closing(
            "=================================================="
        ));
        assert_eq!(
            num_prompts_in("python3 -m sglang.bench_serving --num-prompts 3000 --x"),
            Some(3000)
        );
        assert_eq!(
            num_prompts_in("Namespace(num_prompts=1024, seed=1)"),
            Some(1024)
        );
        assert_eq!(num_prompts_in("--num-prompts=64"), Some(64));
    }

    /// The byte trim is `trim_matches` of the same characters, Unicode blanks included.
    #[test]
    fn the_byte_trim_is_trim_matches() {
        for t in [
            "",
            " ",
            "  \t'\"`  ",
            "  File \"x.py\", line 3  ",
            "'Mean TTFT (ms): 1.0'",
            "\u{a0}x\u{a0}",
            "\u{3000} x \u{2003}",
            " \u{a0} x",
            "x \u{85}",
            "\x0bx\x0c",
            "\x1fx\x1f",
            "é",
            " é ",
            "\u{a0}",
            "\"\u{3000}\"",
        ] {
            assert_eq!(trim_block_line(t), t.trim_matches(is_block_trim), "{t:?}");
        }
    }

    /// The `p` screen passes every line either search outside a block would match.
    #[test]
    fn the_p_screen_misses_no_needle() {
        for t in [
            "--num-prompts 10",
            "num_prompts=3",
            "Namespace(pd_separated=True)",
            "--pd-separated",
            "pd-disaggregation",
            "p",
            "prompt",
            "prompts",
            "pdd",
            "xp",
            "RuntimeError: CUDA error: an illegal memory access was encountered",
            "File \"/usr/lib/python3/dist-packages/sglang/srt/managers/scheduler.py\"",
        ] {
            let searched = t.contains("pd") || t.contains("prompts");
            assert_eq!(mentions_pd_or_prompts(t), searched, "{t:?}");
        }
    }
}
