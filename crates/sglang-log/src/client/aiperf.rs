//! NVIDIA AIPerf's files: the per-request export (`profile_export.jsonl`).

use serde_json::Value;

use super::ClientRequest;
use super::jsonl::{as_time, as_u64};

/// A duration of AIPerf's `{"value": X, "unit": "ms"}` (seconds).
fn aiperf_seconds(m: &serde_json::Map<String, Value>, key: &str) -> Option<f64> {
    let o = m.get(key)?.as_object()?;
    let x = o
        .get("value")?
        .as_f64()
        .filter(|x| x.is_finite() && *x >= 0.0)?;
    let scale = match o.get("unit").and_then(Value::as_str).unwrap_or("ms") {
        "ns" => 1e-9,
        "us" => 1e-6,
        "ms" => 1e-3,
        "s" | "sec" => 1.0,
        _ => return None,
    };
    Some(x * scale)
}

/// One record of AIPerf's per-request export (`profile_export.jsonl`, AIPerf 0.13): its
/// `metadata` holds the request's start and end (`request_start_ns`, `request_end_ns`) and
/// whether it was cancelled; its `metrics` each metric as `{"value", "unit"}`: the prompt's
/// `input_sequence_length`, the output's `output_sequence_length` (AIPerf's own token count,
/// which its output throughput counts), `time_to_first_token`. A record with an `error` failed.
pub(super) fn aiperf_record(obj: &serde_json::Map<String, Value>) -> Option<ClientRequest> {
    let meta = obj.get("metadata")?.as_object()?;
    if !(meta.contains_key("request_end_ns") || meta.contains_key("request_start_ns")) {
        return None;
    }
    let metrics = obj.get("metrics").and_then(Value::as_object);
    let count = |k: &str| {
        metrics
            .and_then(|m| m.get(k))
            .and_then(|o| as_u64(o.get("value")))
    };
    let cancelled = meta.get("was_cancelled").and_then(Value::as_bool) == Some(true);
    let failed = obj.get("error").is_some_and(|e| !e.is_null());
    Some(ClientRequest {
        end: meta.get("request_end_ns").and_then(as_time),
        submit: meta.get("request_start_ns").and_then(as_time),
        permit_wait_s: None,
        ttft_s: metrics.and_then(|m| aiperf_seconds(m, "time_to_first_token")),
        itl_s: metrics.and_then(|m| aiperf_seconds(m, "inter_token_latency")),
        prompt_tokens: count("input_sequence_length").or_else(|| count("usage_prompt_tokens")),
        completion_tokens: count("output_sequence_length")
            .or_else(|| count("usage_completion_tokens")),
        ok: !(cancelled || failed),
        line: 0,
    })
}

#[cfg(test)]
mod tests {
    use crate::client::{ClientFormat, parse_client};

    /// AIPerf 0.13's per-request export (the first records of `tests/data/clients/aiperf-0.13.0/
    /// profile_export.head20.jsonl`, from one run against the simulator): times in the metadata,
    /// metrics as `{value, unit}` (issue 32; before, read as records with no times or tokens).
    #[test]
    fn aiperf_records_are_read() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/data/clients/aiperf-0.13.0/profile_export.head20.jsonl"
        ))
        .expect("test data");
        let c = parse_client("profile_export.jsonl", &text);
        assert_eq!(c.format, ClientFormat::TimedRecords);
        assert_eq!(c.requests.len(), 20);
        let r = &c.requests[0];
        // request_start_ns 1796289423201047261, request_end_ns 1796289428531869306
        assert!(
            (r.end.unwrap() - 1_796_289_428.531_869).abs() < 1e-3,
            "{r:?}"
        );
        assert!(
            (r.submit.unwrap() - 1_796_289_423.201_047).abs() < 1e-3,
            "{r:?}"
        );
        // time_to_first_token 111.572948 ms; input 512, output 142 (AIPerf's own count)
        assert!((r.ttft_s.unwrap() - 0.111_572_948).abs() < 1e-9, "{r:?}");
        // inter_token_latency 37.01595104255319 ms
        assert!((r.itl_s.unwrap() - 0.037_015_951).abs() < 1e-9, "{r:?}");
        assert_eq!(
            (r.prompt_tokens, r.completion_tokens, r.ok),
            (Some(512), Some(142), true)
        );
        let cancelled = r#"{"metadata":{"request_start_ns":1796289423201047261,"request_end_ns":1796289428531869306,"was_cancelled":true},"metrics":{}}"#;
        assert!(!parse_client("x", cancelled).requests[0].ok);
    }
}
