//! Generic JSONL records: a time field, token counts, `ok`; and Python's JSON dialect.

use serde_json::Value;

use super::ClientRequest;
use super::progress::parse_datetime_prefix;

const TIME_KEYS: &[&str] = &[
    "end_unix_s",
    "end_time",
    "completed_at",
    "finished_at",
    "timestamp",
    "ts",
    "time",
    "created",
];

/// Unix times above these are milliseconds, microseconds, nanoseconds (seconds reach 10^11 only
/// in the year 5138).
const MS_FROM: f64 = 1e11;
const US_FROM: f64 = 1e14;
const NS_FROM: f64 = 1e17;

/// The most tokens one request can carry (a count above it is a broken record, not a request).
pub const MAX_REQUEST_TOKENS: u64 = 100_000_000;

pub(super) fn as_time(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64().filter(|x| x.is_finite() && *x > 0.0).map(|x| {
            if x >= NS_FROM {
                x / 1e9
            } else if x >= US_FROM {
                x / 1e6
            } else if x >= MS_FROM {
                x / 1e3
            } else {
                x
            }
        }),
        Value::String(s) => parse_datetime_prefix(s).map(|x| x.0),
        _ => None,
    }
}

pub(super) fn as_u64(v: Option<&Value>) -> Option<u64> {
    v.and_then(|v| {
        v.as_u64()
            .or_else(|| v.as_f64().filter(|x| *x >= 0.0).map(|x| x as u64))
    })
    .filter(|&n| n <= MAX_REQUEST_TOKENS)
}

pub(super) fn record_from_json(v: &Value) -> Option<ClientRequest> {
    let obj = v.as_object()?;
    if obj.contains_key("metadata") {
        return super::aiperf::aiperf_record(obj);
    }
    let usage = obj.get("usage").and_then(|u| u.as_object());
    let tok = |k: &str| as_u64(obj.get(k)).or_else(|| as_u64(usage.and_then(|u| u.get(k))));
    let end = TIME_KEYS.iter().find_map(|k| obj.get(*k).and_then(as_time));
    // an object with none of a record's fields is no record (a whole report's JSON, a config)
    let known = end.is_some()
        || [
            "submit_unix_s",
            "ttft_s",
            "ok",
            "prompt_tokens",
            "completion_tokens",
            "usage",
        ]
        .iter()
        .any(|k| obj.contains_key(*k));
    if !known {
        return None;
    }
    Some(ClientRequest {
        end,
        submit: obj.get("submit_unix_s").and_then(as_time),
        permit_wait_s: obj.get("permit_wait_s").and_then(|v| v.as_f64()),
        ttft_s: obj.get("ttft_s").and_then(|v| v.as_f64()),
        itl_s: None,
        prompt_tokens: tok("prompt_tokens"),
        completion_tokens: tok("completion_tokens"),
        ok: obj.get("ok").and_then(|v| v.as_bool()).unwrap_or(true),
        line: 0,
    })
}

/// `line` with the bare `NaN`, `Infinity` and `-Infinity` that Python's `json.dumps` writes
/// (outside strings) as JSON: `null`, `"inf"`, `"-inf"` (bench_serving's `--output-file` holds
/// `"request_rate": Infinity` for a run at rate inf); `None` when it has none.
pub(super) fn python_json(line: &str) -> Option<String> {
    let b = line.as_bytes();
    let mut out = String::with_capacity(line.len());
    let (mut in_str, mut esc, mut changed, mut i) = (false, false, false, 0);
    while i < b.len() {
        let c = b[i];
        if in_str {
            in_str = esc || c != b'"';
            esc = !esc && c == b'\\';
        } else if c == b'"' {
            in_str = true;
        } else {
            let rest = &line[i..];
            let word = [
                ("-Infinity", "\"-inf\""),
                ("Infinity", "\"inf\""),
                ("NaN", "null"),
            ]
            .into_iter()
            .find(|(w, _)| rest.starts_with(w));
            if let Some((w, to)) = word {
                out.push_str(to);
                i += w.len();
                changed = true;
                continue;
            }
        }
        // whole UTF-8 characters: the bytes of one are copied together
        let ch = line[i..].chars().next()?;
        out.push(ch);
        i += ch.len_utf8();
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use crate::client::ClientFormat;
    use crate::client::parse_client;
    use crate::client::progress::parse_datetime_prefix;

    #[test]
    fn records_with_and_without_times() {
        let text = "{\"id\": \"a\", \"prompt_tokens\": 207, \"completion_tokens\": 1775}\n{\"id\":\"b\",\"ok\":false,\"end_unix_s\": 100.5, \"usage\": {\"prompt_tokens\": 3, \"completion_tokens\": null}}\nnot json\n";
        let c = parse_client("x", text);
        assert_eq!(c.lines, 3);
        assert_eq!(c.requests.len(), 2);
        assert_eq!(c.unparsed_lines, 1);
        assert_eq!(c.unparsed[0].0, 3);
        assert_eq!(c.format, ClientFormat::TimedRecords);
        assert_eq!(c.lengths(), vec![(207, 1775)]);
        assert_eq!(c.failed(), 1);
        assert_eq!(c.requests[1].end, Some(100.5));
    }

    #[test]
    fn millisecond_times_and_absurd_counts() {
        let c = parse_client(
            "x",
            "{\"end_unix_s\": 1767225600123, \"completion_tokens\": 1000000000000000}\n",
        );
        assert_eq!(c.requests[0].end, Some(1_767_225_600.123));
        assert_eq!(c.requests[0].completion_tokens, None);
    }

    #[test]
    fn iso_time_field() {
        let c = parse_client(
            "x",
            "{\"timestamp\": \"2026-02-10T14:00:30.250Z\", \"completion_tokens\": 5}\n",
        );
        let t0 = parse_datetime_prefix("2026-02-10 14:00:30").expect("t").0;
        assert_eq!(c.requests[0].end, Some(t0 + 0.25));
    }
}
