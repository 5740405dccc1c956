//! The batch runner's one writer task: records appended to the output in whole lines, progress
//! snapshots and tallies.

use super::*;

/// Writer-side tallies, returned when the writer ends.
#[derive(Default)]
pub(super) struct Tally {
    pub(super) ok: u64,
    pub(super) failed: u64,
    pub(super) completion_tokens: u64,
}

pub(super) struct Writer<P: ProgressSink> {
    pub(super) file: File,
    pub(super) path: PathBuf,
    pub(super) sink: P,
    pub(super) started: Instant,
    pub(super) total: u64,
    pub(super) resumed: u64,
    pub(super) window: Duration,
    pub(super) recent: VecDeque<(Instant, u64)>,
    pub(super) tally: Tally,
}

impl<P: ProgressSink> Writer<P> {
    pub(super) fn write_batch(
        &mut self,
        recs: &mut Vec<BatchRecord>,
        buf: &mut Vec<u8>,
    ) -> Result<(), BatchError> {
        buf.clear();
        for r in recs.iter() {
            // ok: serialising a struct of strings/numbers cannot fail; a NaN
            // float is written as null by serde_json.
            if serde_json::to_writer(&mut *buf, r).is_err() {
                continue;
            }
            buf.push(b'\n');
        }
        // One write of whole lines; a kill can tear only the last line, which
        // the next run cuts off.
        self.file.write_all(buf).map_err(io_err(&self.path))?;
        let now = Instant::now();
        for r in recs.drain(..) {
            let toks = if r.ok {
                r.usage.completion_tokens.unwrap_or(0)
            } else {
                0
            };
            if r.ok {
                self.tally.ok += 1;
                self.tally.completion_tokens += toks;
            } else {
                self.tally.failed += 1;
            }
            self.recent.push_back((now, toks));
            self.sink.on_completion(&CompletionEvent {
                t_s: (now - self.started).as_secs_f64(),
                end_unix_s: r.end_unix_s,
                ok: r.ok,
                completion_tokens: r.usage.completion_tokens,
                latency_s: r.latency_s,
                ttft_s: r.ttft_s,
                attempts: r.attempts,
            });
        }
        Ok(())
    }

    pub(super) fn snapshot(&mut self, live: &Live) -> ProgressSnapshot {
        let now = Instant::now();
        while let Some(&(t, _)) = self.recent.front() {
            if now - t > self.window {
                self.recent.pop_front();
            } else {
                break;
            }
        }
        let elapsed = (now - self.started).as_secs_f64();
        let window_s = self.window.as_secs_f64().min(elapsed).max(1e-9);
        let n = self.recent.len() as f64;
        let toks: u64 = self.recent.iter().map(|x| x.1).sum();
        let done = self.tally.ok + self.tally.failed;
        let window_req_per_s = n / window_s;
        let remaining = self.total.saturating_sub(done) as f64;
        ProgressSnapshot {
            elapsed_s: elapsed,
            total: self.total,
            resumed: self.resumed,
            completed: self.tally.ok,
            failed: self.tally.failed,
            in_flight: live.in_flight.load(Ordering::Relaxed),
            retries: live.retries.load(Ordering::Relaxed),
            completion_tokens: self.tally.completion_tokens,
            window_s,
            window_req_per_s,
            window_tok_per_s: toks as f64 / window_s,
            lifetime_req_per_s: if elapsed > 0.0 {
                done as f64 / elapsed
            } else {
                0.0
            },
            lifetime_tok_per_s: if elapsed > 0.0 {
                self.tally.completion_tokens as f64 / elapsed
            } else {
                0.0
            },
            eta_s: (window_req_per_s > 0.0).then(|| remaining / window_req_per_s),
        }
    }
}

pub(super) async fn writer_task<P: ProgressSink>(
    mut w: Writer<P>,
    mut rx: mpsc::Receiver<BatchRecord>,
    ctx: Arc<Ctx>,
    interval: Duration,
) -> (Result<(), BatchError>, Writer<P>) {
    let mut tick = tokio::time::interval(interval.max(Duration::from_millis(10)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut recs = Vec::with_capacity(256);
    let mut buf = Vec::with_capacity(64 * 1024);
    loop {
        tokio::select! {
            got = rx.recv_many(&mut recs, 256) => {
                if got == 0 {
                    break;
                }
                if let Err(e) = w.write_batch(&mut recs, &mut buf) {
                    return (Err(e), w);
                }
            }
            _ = tick.tick() => {
                let s = w.snapshot(&ctx.live);
                w.sink.on_snapshot(&s);
            }
        }
    }
    let s = w.snapshot(&ctx.live);
    w.sink.on_snapshot(&s);
    (Ok(()), w)
}
