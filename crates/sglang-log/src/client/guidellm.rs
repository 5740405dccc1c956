//! GuideLLM's files: the benchmarks report (`benchmarks.json`).

use serde_json::Value;

use super::ClientRequest;
use super::jsonl::{as_time, as_u64};

/// GuideLLM's report (`benchmarks.json`, GuideLLM 0.8: `{"metadata", "config", "benchmarks":
/// [{"requests": {"successful", "errored", "incomplete"}, …}]}`): the requests of its last
/// benchmark (a sweep's runs are separate benchmarks; the last is the one a log usually ends
/// with), each with `request_start_time` / `request_end_time` (Unix seconds),
/// `time_to_first_token_ms`, `prompt_tokens` and `output_tokens`; `errored` ones failed,
/// `incomplete` ones (cancelled in flight at its time limit) counted apart. `None` when `v`
/// is no such report.
pub(super) fn guidellm_requests(v: &Value) -> Option<(Vec<ClientRequest>, u64)> {
    let bench = v.get("benchmarks")?.as_array()?.last()?;
    let reqs = bench.get("requests")?.as_object()?;
    let list = |k: &str| reqs.get(k).and_then(Value::as_array);
    let read = |r: &Value, ok: bool| -> Option<ClientRequest> {
        let o = r.as_object()?;
        let ms = |k: &str| {
            o.get(k)
                .and_then(Value::as_f64)
                .filter(|x| x.is_finite() && *x >= 0.0)
                .map(|ms| ms / 1000.0)
        };
        Some(ClientRequest {
            end: o.get("request_end_time").and_then(as_time),
            submit: o.get("request_start_time").and_then(as_time),
            permit_wait_s: None,
            ttft_s: ms("time_to_first_token_ms"),
            itl_s: ms("inter_token_latency_ms"),
            prompt_tokens: as_u64(o.get("prompt_tokens")),
            completion_tokens: as_u64(o.get("output_tokens")),
            ok,
            line: 1,
        })
    };
    let mut out: Vec<ClientRequest> = Vec::new();
    for r in list("successful").into_iter().flatten() {
        out.extend(read(r, true));
    }
    for r in list("errored").into_iter().flatten() {
        out.extend(read(r, false));
    }
    let cancelled = list("incomplete").map_or(0, |l| l.len() as u64);
    (list("successful").is_some() || list("errored").is_some()).then_some((out, cancelled))
}

#[cfg(test)]
mod tests {
    use crate::client::{ClientFormat, parse_client};

    /// GuideLLM 0.8.1's report, cut down to a valid document (`tests/data/clients/
    /// guidellm-0.8.1/benchmarks.trimmed.json`): its requests are read (before: the whole
    /// document counted as one request with no fields), the in-flight ones cancelled at its time
    /// limit counted apart.
    #[test]
    fn guidellm_report_requests_are_read() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/data/clients/guidellm-0.8.1/benchmarks.trimmed.json"
        ))
        .expect("test data");
        let c = parse_client("benchmarks.json", &text);
        assert_eq!(c.format, ClientFormat::TimedRecords);
        assert_eq!((c.requests.len(), c.cancelled, c.failed()), (5, 2, 0));
        let r = &c.requests[0];
        assert!(
            (r.submit.unwrap() - 1_796_289_577.104_488).abs() < 1e-3,
            "{r:?}"
        );
        assert!(
            (r.end.unwrap() - 1_796_289_582.610_669).abs() < 1e-3,
            "{r:?}"
        );
        assert!((r.ttft_s.unwrap() - 0.093_008_041).abs() < 1e-6, "{r:?}");
        assert_eq!(
            (r.prompt_tokens, r.completion_tokens),
            (Some(447), Some(129))
        );
        // a JSON object of no record's fields is no record
        let c = parse_client("x", r#"{"metadata": {"version": 2}, "config": {}}"#);
        assert!(c.requests.is_empty());
    }
}
