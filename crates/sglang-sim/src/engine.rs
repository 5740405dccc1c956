//! The continuous-batching model (after `tools/sim_sglang_scenario.py`).

use std::collections::VecDeque;
use std::fs::File;
use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;

use crate::metrics::Metrics;
use crate::{SimConfig, SimStats, logfmt};

/// Admission reservation factor bounds and decay per decode step
/// (SGLang defaults: init 0.7, min 0.1–0.2, decay 0.001; the reference
/// model uses 0.7 / 0.2 / 0.0005).
const RATIO_INIT: f64 = 0.7;
const RATIO_MIN: f64 = 0.2;
const RATIO_DECAY: f64 = 0.0005;
/// Prompt tokens admitted per prefill batch (chunked_prefill_size).
const PREFILL_BUDGET: u64 = 8192;
/// Remaining-token estimate cap used for the reservation.
const CLIP_MAX_NEW: u64 = 4096;

pub struct Job {
    /// When it was queued (for `sglang:queue_time_seconds`).
    pub submitted: std::time::Instant,
    pub prompt: u64,
    pub max_new: u64,
    pub target: u64,
    pub generated: u64,
    /// Served as a stream (SGLang's `is_streaming` label).
    pub streamed: bool,
    pub tx: mpsc::UnboundedSender<()>,
}

struct State {
    queue: VecDeque<Job>,
    running: Vec<Job>,
    ratio: f64,
    step: u64,
    gen_since_log: u64,
    /// When the last `Decode batch` line was written (at first, when the engine was made):
    /// its `gen throughput` is the tokens since then over the wall-clock seconds since then,
    /// SGLang's `num_generated_tokens / (now - last_decode_stats_tic)`, on the clock of the
    /// line's timestamp and of the client, whatever `time_scale` is.
    last_log_at: std::time::Instant,
    log: Option<File>,
}

pub struct Engine {
    cfg: Arc<SimConfig>,
    /// `DP{n}` in log prefixes when the server has several DP ranks.
    tag: String,
    metrics: Arc<Metrics>,
    stats: Arc<SimStats>,
    state: Mutex<State>,
    notify: Notify,
}

impl Engine {
    pub fn new(
        cfg: Arc<SimConfig>,
        metrics: Arc<Metrics>,
        stats: Arc<SimStats>,
        dp_rank: Option<u32>,
    ) -> std::io::Result<Self> {
        let tag = match dp_rank {
            Some(r) => format!("DP{r} TP0"),
            None => "TP0".to_string(),
        };
        let mut log = match &cfg.log_path {
            Some(p) => Some(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)?,
            ),
            None => None,
        };
        if let Some(f) = log.as_mut() {
            let ts = logfmt::now();
            let cap = cfg.kv_tokens;
            let text = format!(
                "[{ts} {tag}] KV Cache is allocated. #tokens: {cap}, KV size: {:.2} GB\n\
                 [{ts} {tag}] max_total_num_tokens={cap}, chunked_prefill_size=8192, max_prefill_tokens=16384, \
                 max_running_requests={}, context_len={}, available_gpu_mem=5.16 GB\n",
                cap as f64 * 70272.0 / (1u64 << 30) as f64,
                cfg.max_running_requests,
                crate::CONTEXT_LEN
            );
            f.write_all(text.as_bytes())?;
        }
        Ok(Engine {
            cfg,
            tag,
            metrics,
            stats,
            state: Mutex::new(State {
                queue: VecDeque::new(),
                running: Vec::new(),
                ratio: RATIO_INIT,
                step: 0,
                gen_since_log: 0,
                last_log_at: std::time::Instant::now(),
                log,
            }),
            notify: Notify::new(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Queues a request; one `()` arrives per generated token, the channel
    /// closes when the request finishes.
    pub fn submit(&self, prompt: u64, max_new: u64, target: u64) -> mpsc::UnboundedReceiver<()> {
        self.submit_as(prompt, max_new, target, false)
    }

    /// [`Engine::submit`], saying whether the request is served as a stream.
    pub fn submit_as(
        &self,
        prompt: u64,
        max_new: u64,
        target: u64,
        streamed: bool,
    ) -> mpsc::UnboundedReceiver<()> {
        let (tx, rx) = mpsc::unbounded_channel();
        {
            let mut st = self.lock();
            st.queue.push_back(Job {
                submitted: std::time::Instant::now(),
                prompt,
                max_new,
                target,
                generated: 0,
                streamed,
                tx,
            });
            let q = st.queue.len() as u64;
            self.stats.max_queue.fetch_max(q, Ordering::Relaxed);
        }
        self.notify.notify_one();
        rx
    }

    pub async fn run(self: Arc<Self>) {
        let mut deadline = Instant::now();
        loop {
            let idle = {
                let st = self.lock();
                st.queue.is_empty() && st.running.is_empty()
            };
            if idle {
                self.notify.notified().await;
                deadline = Instant::now();
                continue;
            }
            let (secs, finished) = {
                let mut st = self.lock();
                self.step(&mut st)
            };
            // Closing the finished requests' channels lets their handlers
            // answer; every counter already includes their tokens.
            drop(finished);
            deadline += Duration::from_secs_f64(secs * self.cfg.time_scale);
            let now = Instant::now();
            if deadline > now {
                tokio::time::sleep_until(deadline).await;
            } else {
                // Behind schedule: catch up, but let the handlers run.
                if now - deadline > Duration::from_millis(50) {
                    deadline = now;
                }
                tokio::task::yield_now().await;
            }
        }
    }

    fn log_line(&self, st: &mut State, body: String) {
        if let Some(f) = st.log.as_mut() {
            let line = format!("[{} {}] {body}\n", logfmt::now(), self.tag);
            let _ = f.write_all(line.as_bytes());
        }
    }

    /// One scheduling round: admission (prefill) then one decode pass.
    /// Returns the modelled duration, seconds, and the requests that finished
    /// in this pass. Their senders are still open: the caller drops them once
    /// the counters and the log are up to date, so a client that has seen its
    /// answer end never reads `/metrics` without that answer's tokens.
    fn step(&self, st: &mut State) -> (f64, Vec<Job>) {
        let cap = self.cfg.kv_tokens;
        let mut secs = 0.0;
        // Waiting requests whose client went away are dropped (SGLang aborts them).
        let before = st.queue.len();
        st.queue.retain(|j| !j.tx.is_closed());
        let gone = (before - st.queue.len()) as u64;
        self.metrics
            .num_aborted_requests_total
            .fetch_add(gone, Ordering::Relaxed);

        // Admission, SGLang-style reservation for running requests.
        if !st.queue.is_empty() {
            let used: u64 = st.running.iter().map(|r| r.prompt + r.generated).sum();
            let reserve: f64 = st
                .running
                .iter()
                .map(|r| {
                    (r.max_new.saturating_sub(r.generated)).min(CLIP_MAX_NEW) as f64 * st.ratio
                })
                .sum();
            let mut new_tokens = 0u64;
            let mut streamed_tokens = 0u64;
            let mut admitted = 0u64;
            while let Some(j) = st.queue.front() {
                if st.running.len() >= self.cfg.max_running_requests || new_tokens >= PREFILL_BUDGET
                {
                    break;
                }
                let need =
                    (j.prompt + j.generated) as f64 + j.max_new.min(CLIP_MAX_NEW) as f64 * st.ratio;
                if used as f64 + reserve + new_tokens as f64 + need > cap as f64
                    && !st.running.is_empty()
                {
                    break;
                }
                if (j.prompt + j.generated + 1) > cap {
                    break; // cannot fit even alone; stays queued (never happens with sane configs)
                }
                // ok: front() was Some just above.
                let Some(j) = st.queue.pop_front() else { break };
                let waited = j.submitted.elapsed().as_secs_f64() / self.cfg.time_scale.max(1e-9);
                self.metrics.queue_time.observe(waited);
                new_tokens += j.prompt + j.generated;
                if j.streamed {
                    streamed_tokens += j.prompt + j.generated;
                }
                admitted += 1;
                st.running.push(j);
            }
            if admitted > 0 {
                let t = 0.015 + new_tokens as f64 * 2.5e-6;
                secs += t;
                self.metrics
                    .prompt_tokens_total
                    .fetch_add(new_tokens, Ordering::Relaxed);
                self.metrics
                    .streamed_prompt_tokens
                    .fetch_add(streamed_tokens, Ordering::Relaxed);
                self.metrics.add_forward(t, false);
                self.metrics
                    .realtime_prefill_compute
                    .fetch_add(new_tokens, Ordering::Relaxed);
                let kv: u64 = st.running.iter().map(|r| r.prompt + r.generated).sum();
                self.update_gauges(st, kv, None);
                let body = format!(
                    "Prefill batch, #new-seq: {admitted}, #new-token: {new_tokens}, #cached-token: 0, \
                     token usage: {:.2}, #running-req: {}, #queue-req: {}, #pending-token: 0, \
                     cuda graph: False, input throughput (token/s): {:.2}",
                    kv as f64 / cap as f64,
                    st.running.len(),
                    st.queue.len(),
                    // the pass's modelled seconds on the wall clock, as the timestamps are
                    new_tokens as f64 / (t * self.cfg.time_scale.max(1e-9))
                );
                self.log_line(st, body);
            }
        }
        if st.running.is_empty() {
            if secs == 0.0 {
                // Nothing to run: the scheduler idles, and SGLang's occupancy is NaN.
                self.metrics.add_idle(0.001);
            }
            return (secs.max(0.001), Vec::new());
        }
        // Retract when the next token does not fit.
        let mut kv: u64 = st.running.iter().map(|r| r.prompt + r.generated).sum();
        while kv + st.running.len() as u64 > cap && st.running.len() > 1 {
            let Some(victim) = st.running.pop() else {
                break;
            };
            kv -= victim.prompt + victim.generated;
            let gained = victim.prompt + victim.generated;
            st.queue.push_front(victim);
            let old = st.ratio;
            st.ratio = (st.ratio + 0.2).min(RATIO_INIT);
            self.stats.retractions.fetch_add(1, Ordering::Relaxed);
            self.metrics
                .num_retracted_requests_total
                .fetch_add(1, Ordering::Relaxed);
            let body = format!(
                "KV cache pool is full. Retract requests. #retracted_reqs: 1, #new_tokens_gained: {gained}, \
                 #new_token_ratio: {old:.4} -> {:.4}",
                st.ratio
            );
            self.log_line(st, body);
        }
        let n = st.running.len();
        let dt = 0.026 + 0.00052 * n as f64 + kv as f64 * 9e-8;
        secs += dt;
        self.metrics.add_forward(dt, true);
        st.ratio = (st.ratio - RATIO_DECAY).max(RATIO_MIN);
        let mut produced = 0u64;
        let mut streamed_produced = 0u64;
        let mut aborted = 0u64;
        let mut finished = Vec::new();
        let mut still = Vec::with_capacity(st.running.len());
        for mut r in std::mem::take(&mut st.running) {
            r.generated += 1;
            if r.tx.send(()).is_err() {
                aborted += 1;
                continue;
            }
            produced += 1;
            if r.streamed {
                streamed_produced += 1;
            }
            if r.generated < r.target {
                still.push(r);
            } else {
                finished.push(r);
            }
        }
        st.running = still;
        self.metrics
            .generation_tokens_total
            .fetch_add(produced, Ordering::Relaxed);
        self.metrics
            .streamed_generation_tokens
            .fetch_add(streamed_produced, Ordering::Relaxed);
        self.metrics
            .num_aborted_requests_total
            .fetch_add(aborted, Ordering::Relaxed);
        st.gen_since_log += produced;
        st.step += 1;
        if st.step.is_multiple_of(self.cfg.decode_log_interval.max(1)) {
            let kv: u64 = st.running.iter().map(|r| r.prompt + r.generated).sum();
            // This pass's tokens are sent as it begins (now), and the pass sleeps after: the
            // window from the last line's pass to this one's holds exactly the tokens since.
            let now = std::time::Instant::now();
            let span = (now - st.last_log_at).as_secs_f64().max(1e-9);
            let tput = st.gen_since_log as f64 / span;
            st.gen_since_log = 0;
            st.last_log_at = now;
            self.update_gauges(st, kv, Some(tput));
            let body = format!(
                "Decode batch, #running-req: {}, #token: {kv}, token usage: {:.2}, cuda graph: True, \
                 gen throughput (token/s): {tput:.2}, #queue-req: {}, ",
                st.running.len(),
                kv as f64 / cap as f64,
                st.queue.len()
            );
            self.log_line(st, body);
        }
        (secs, finished)
    }

    fn update_gauges(&self, st: &State, kv: u64, tput: Option<f64>) {
        let m = &self.metrics;
        m.num_running_reqs.set(st.running.len() as f64);
        m.num_queue_reqs.set(st.queue.len() as f64);
        m.num_used_tokens.set(kv as f64);
        m.token_usage
            .set(((kv as f64 / self.cfg.kv_tokens as f64) * 100.0).round() / 100.0);
        if let Some(t) = tput {
            m.gen_throughput.set(t);
            m.last_gen_throughput.set(t);
        }
        m.cache_hit_rate.set(0.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::mpsc::error::TryRecvError;

    /// A request's channel closes (its handler answers) only after the
    /// pass that finished it has counted its tokens: the client can read
    /// `/metrics` the moment its answer ends and see them.
    #[test]
    fn a_finished_request_is_counted_before_its_channel_closes() {
        let cfg = Arc::new(SimConfig::default());
        let metrics = Arc::new(Metrics::new());
        let engine = Engine::new(cfg, metrics.clone(), Arc::new(SimStats::default()), None)
            .expect("no log file");
        let mut one = engine.submit(10, 4, 1);
        let mut two = engine.submit(10, 4, 2);
        let (_, finished) = engine.step(&mut engine.lock());
        assert_eq!(finished.len(), 1);
        assert_eq!(metrics.generation_tokens_total.load(Ordering::Relaxed), 2);
        assert_eq!(metrics.prompt_tokens_total.load(Ordering::Relaxed), 20);
        assert_eq!(one.try_recv(), Ok(()));
        // Counted, and still open until the caller lets go of it.
        assert_eq!(one.try_recv(), Err(TryRecvError::Empty));
        drop(finished);
        assert_eq!(one.try_recv(), Err(TryRecvError::Disconnected));

        let (_, finished) = engine.step(&mut engine.lock());
        assert_eq!(metrics.generation_tokens_total.load(Ordering::Relaxed), 3);
        assert_eq!((two.try_recv(), two.try_recv()), (Ok(()), Ok(())));
        assert_eq!(two.try_recv(), Err(TryRecvError::Empty));
        drop(finished);
        assert_eq!(two.try_recv(), Err(TryRecvError::Disconnected));
        assert!(engine.lock().running.is_empty());
    }
}
