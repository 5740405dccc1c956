//! Events that end or block serving, collected while the evidence is built: Python tracebacks
//! (a scheduler's `Scheduler hit an exception`, any other traceback), the watchdog's py-spy
//! dumps, the startup step each source reached, and the decode CUDA-graph batch sizes a
//! startup captured. Kept apart from the batch-line evidence: bounded (at most 64 stacks per
//! source, [`sglang_log::StackCollector`]) and owned.

use serde::Serialize;
use sglang_log::{ContextRejection, Event, Record, Stack, StackCollector, StackKind};

use crate::evidence::{Loc, SourceId};
use crate::report::StartupStep;

/// A stack and where it was read.
#[derive(Clone, Debug, Serialize)]
pub struct SourcedStack {
    /// The source (log file).
    pub source: SourceId,
    /// The stack.
    pub stack: Stack,
    /// The startup step the source had reached when the stack opened (`None`: no startup line
    /// before it).
    pub step: Option<StartupStep>,
}

/// What the incident collector found over all sources.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Incidents {
    /// Tracebacks and py-spy dumps, per source in log order.
    pub stacks: Vec<SourcedStack>,
    /// The furthest startup step any source reached, and its first line.
    pub step: Option<(StartupStep, Loc)>,
    /// The largest decode batch size a `Capture … cuda graph begin. … bs=[…]` line lists
    /// (requests).
    pub captured_graph_max_bs: Option<u64>,
    /// `Pyspy failed to dump PID N` lines (py-spy is not installed where the server runs).
    pub pyspy_failed: u64,
    /// The free memory the last CUDA-graph capture line printed (`avail_mem=X GB` of
    /// `Capturing batches (…)`, or `avail mem` of `Capture … graph begin`), GiB.
    pub capture_avail_gib: Option<f64>,
    /// Requests the server turned away (HTTP errors on generation endpoints, context-length
    /// rejections).
    pub rejections: Rejections,
}

/// Requests the server turned away, from uvicorn's access lines and SGLang's context-length
/// messages ([`sglang_log::parse_http_access`], [`sglang_log::parse_context_rejection`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Rejections {
    /// 4xx responses to generation requests (requests).
    pub client_errors: u64,
    /// 5xx responses to generation requests (requests).
    pub server_errors: u64,
    /// The first and last such response line.
    pub first: Option<Loc>,
    /// See [`Rejections::first`].
    pub last: Option<Loc>,
    /// Context-length rejections, when the log prints them.
    pub context: Option<ContextRejections>,
}

/// Context-length rejections seen in the log.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ContextRejections {
    /// Messages that say so (events; a rejection may be printed more than once, e.g. in a
    /// traceback and in an error line).
    pub messages: u64,
    /// The model's context length (tokens).
    pub context_len: u64,
    /// The largest prompt among them (tokens).
    pub largest_input: Option<u64>,
    /// The largest prompt plus requested completion among them (tokens).
    pub largest_requested: Option<u64>,
    /// The first such message.
    pub first: Loc,
}

#[derive(Default)]
struct PerSource {
    stacks: StackCollector,
    step: Option<StartupStep>,
    /// (first line, step) of every stack opened.
    opened: Vec<(u64, Option<StartupStep>)>,
}

/// Builds [`Incidents`] from records (see the module doc).
#[derive(Default)]
pub struct IncidentBuilder {
    sources: Vec<PerSource>,
    inc: Incidents,
    /// The source, if any, on which a batch line changes nothing ([`Self::is_quiet`]), as
    /// the last record pushed left it: the usual batch line (and any record that can only set
    /// a startup step) is then told by one compare
    /// (each condition only changes in a push of that source, or, the overall step, never
    /// back from serving).
    quiet: Option<SourceId>,
}

impl IncidentBuilder {
    /// Take one record of `source`.
    pub fn push(&mut self, source: SourceId, rec: &Record<'_>) {
        // on a quiet source (serving, no stack open) a record that can only set a startup
        // step changes nothing: the step is already the last one, and there is no stack to
        // take it or be ended by it (the usual batch line, a retraction, an access line)
        if self.quiet == Some(source) && !acts_when_serving(&rec.event) {
            return;
        }
        self.take(source, rec);
        self.quiet = self.is_quiet(source).then_some(source);
    }

    /// Whether a batch line of `source` changes nothing: the server is serving (that source
    /// and the furthest step of all), and no stack of `source` is open.
    fn is_quiet(&self, source: SourceId) -> bool {
        self.inc
            .step
            .is_some_and(|(s, _)| s == StartupStep::Serving)
            && self
                .sources
                .get(source)
                .is_some_and(|st| st.step == Some(StartupStep::Serving) && !st.stacks.is_open())
    }

    /// [`Self::push`] of a record that may change something.
    fn take(&mut self, source: SourceId, rec: &Record<'_>) {
        if self.sources.len() <= source {
            self.sources.resize_with(source + 1, PerSource::default);
        }
        let st = &mut self.sources[source];
        let reached = match &rec.event {
            Event::ServerArgs(_) => Some(StartupStep::Launched),
            Event::LoadWeightEnd(_) => Some(StartupStep::WeightsLoaded),
            Event::KvCacheAllocated(_) | Event::MemoryPoolEnd(_) => {
                Some(StartupStep::KvPoolAllocated)
            }
            // the scheduler prints its capacity line once the model runner is built, CUDA
            // graphs included (`scheduler.py` after `TpModelWorker`; its available_gpu_mem is
            // measured after the capture), so it also ends a capture whose end line it was
            // glued to
            Event::Capacity(_) => Some(StartupStep::CudaGraphsCaptured),
            Event::CudaGraphEnd(_) => Some(StartupStep::CudaGraphsCaptured),
            Event::ServerReady | Event::Batch(_) => Some(StartupStep::Serving),
            Event::SchedulerException(_) | Event::TracebackStart => {
                st.opened.push((rec.line_no, st.step));
                None
            }
            Event::WatchdogTimeout(m) if m.starts_with("Pyspy dump for PID") => {
                st.opened.push((rec.line_no, st.step));
                None
            }
            Event::PyspyFailed => {
                self.inc.pyspy_failed += 1;
                None
            }
            Event::GraphCapture(g) => {
                self.inc.captured_graph_max_bs = self.inc.captured_graph_max_bs.max(g.max_bs);
                if g.avail_gib.is_some() {
                    self.inc.capture_avail_gib = g.avail_gib;
                }
                Some(StartupStep::CapturingGraphs)
            }
            Event::HttpAccess(a) if a.status >= 400 && a.is_generation() => {
                count_http_error(&mut self.inc.rejections, source, rec.line_no, a.status);
                None
            }
            Event::ContextRejected(c) => {
                count_context(&mut self.inc.rejections, source, rec.line_no, c);
                None
            }
            _ => None,
        };
        if let Some(step) = reached {
            if st.step < Some(step) {
                st.step = Some(step);
            }
            if self.inc.step.is_none_or(|(s, _)| s < step) {
                self.inc.step = Some((
                    step,
                    Loc {
                        source,
                        line: rec.line_no,
                    },
                ));
            }
        }
        st.stacks.push(rec);
    }
}

impl IncidentBuilder {
    /// A batch line seen through a parsed chunk's facts (`evidence/merge.rs`), where the
    /// record itself is gone: what [`IncidentBuilder::push`] does with a batch record (the
    /// server is serving; an open stack ends before it).
    pub fn push_batch_line(&mut self, source: SourceId, line_no: u64) {
        // the usual line, as in `push`: a serving server with no stack open (without making a
        // record to tell it, ~80 instructions a line)
        if self.quiet == Some(source) {
            return;
        }
        // the ready banner stands for the batch line: same step, same effect on stacks
        let rec = Record {
            line_no,
            timestamp: None,
            ranks: sglang_log::RankTags::default(),
            message: "",
            event: Event::ServerReady,
        };
        self.push(source, &rec);
    }

    /// The incidents so far (stacks still open left out).
    pub fn snapshot(&self) -> Incidents {
        let mut inc = self.inc.clone();
        for (source, st) in self.sources.iter().enumerate() {
            inc.stacks
                .extend(sourced(source, st, st.stacks.completed().to_vec()));
        }
        inc
    }

    /// Close every source and return the incidents.
    pub fn build(self) -> Incidents {
        let mut inc = self.inc;
        for (source, st) in self.sources.into_iter().enumerate() {
            let stacks = st.stacks.clone().finish();
            inc.stacks.extend(sourced(source, &st, stacks));
        }
        inc
    }
}

/// Whether [`IncidentBuilder::take`] does more with `event` than set a startup step: open a
/// stack ([`StackCollector::push`]) or count it.
fn acts_when_serving(event: &Event<'_>) -> bool {
    matches!(
        event,
        Event::SchedulerException(_)
            | Event::TracebackStart
            | Event::WatchdogTimeout(_)
            | Event::PyspyFailed
            | Event::GraphCapture(_)
            | Event::HttpAccess(_)
            | Event::ContextRejected(_)
    )
}

fn sourced(source: SourceId, st: &PerSource, stacks: Vec<Stack>) -> Vec<SourcedStack> {
    stacks
        .into_iter()
        .map(|stack| {
            let step = st
                .opened
                .iter()
                .find(|(l, _)| *l == stack.first_line)
                .and_then(|(_, s)| *s);
            SourcedStack {
                source,
                stack,
                step,
            }
        })
        .collect()
}

impl Incidents {
    /// The scheduler-exception and traceback stacks (py-spy dumps left out).
    pub fn tracebacks(&self) -> impl Iterator<Item = &SourcedStack> {
        self.stacks
            .iter()
            .filter(|s| s.stack.kind != StackKind::PySpyDump)
    }

    /// The py-spy dumps.
    pub fn pyspy_dumps(&self) -> impl Iterator<Item = &SourcedStack> {
        self.stacks
            .iter()
            .filter(|s| s.stack.kind == StackKind::PySpyDump)
    }
}

/// Count a generation request answered with HTTP `status` (400-599) into `r`.
fn count_http_error(r: &mut Rejections, source: SourceId, line: u64, status: u16) {
    let loc = Loc { source, line };
    if status >= 500 {
        r.server_errors += 1;
    } else {
        r.client_errors += 1;
    }
    r.first.get_or_insert(loc);
    r.last = Some(loc);
}

/// Count a context-length rejection message into `r`.
fn count_context(r: &mut Rejections, source: SourceId, line: u64, c: &ContextRejection) {
    let e = r.context.get_or_insert(ContextRejections {
        messages: 0,
        context_len: c.context_len,
        largest_input: None,
        largest_requested: None,
        first: Loc { source, line },
    });
    e.messages += 1;
    e.largest_input = e.largest_input.max(c.input_tokens);
    e.largest_requested = e.largest_requested.max(c.requested_tokens());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::whole;

    /// A record told by the one compare ([`IncidentBuilder::push_batch_line`] and
    /// [`IncidentBuilder::push`] on a quiet source) gives the incidents of the general path
    /// ([`IncidentBuilder::take`] of every record), on logs with tracebacks, py-spy dumps and
    /// startups, read as one source and as two whose lines alternate.
    #[test]
    fn the_quiet_skip_is_the_general_path() {
        let mut skipped = 0;
        for rel in [
            "real-2/107-amd-2x-r9700-qwen36-35b-awq-oom-at-weight-init-unquant-moe.log",
            "real/052-pr20766-multinode-dp-decode-then-pyspy-dump.log",
            "real-3/051-i12076-compose-prefix-pyspy-watchdog-eagle-hicache.log",
            "real/065-nixl-i1983-pd-prefill-transfer-disconnect.log",
            "real-4/122-npu-pd-decode-dp32-cap26-usage-near-full-096.log",
            "real-long/ascend-dsr1-pd-client-router.log",
            "real-long/ascend-qwen3next-80b-hybrid-mamba.log",
        ] {
            let text = whole(rel);
            for sources in [1, 2] {
                let mut fast = IncidentBuilder::default();
                let mut merged = IncidentBuilder::default();
                let mut general = IncidentBuilder::default();
                let mut reader = sglang_log::LogReader::from_reader(rel, text.as_bytes());
                reader
                    .for_each(|rec| {
                        let source = (rec.line_no % sources) as SourceId;
                        let batch = matches!(rec.event, Event::Batch(_));
                        skipped += u64::from(batch && fast.quiet == Some(source));
                        fast.push(source, rec);
                        if batch {
                            merged.push_batch_line(source, rec.line_no);
                        } else {
                            merged.push(source, rec);
                        }
                        general.take(source, rec);
                    })
                    .unwrap();
                let general = format!("{:?}", general.build());
                assert_eq!(format!("{:?}", fast.build()), general, "{rel}, {sources}");
                assert_eq!(format!("{:?}", merged.build()), general, "{rel}, {sources}");
            }
        }
        assert!(skipped > 100, "{skipped} batch lines skipped");
    }
}
