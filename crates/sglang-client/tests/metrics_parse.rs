//! `/metrics` parsing: the real PD dump from SGLang PR #7944 and a
//! histogram with known quantiles.

use sglang_client::MetricsSnapshot;

#[test]
fn real_pr7944_dump() {
    let p = format!(
        "{}/../../tests/data/real/040-pr7944-prometheus-metrics-pd.log",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(p).unwrap();
    let m = MetricsSnapshot::parse(&text);
    assert!(m.problems.is_empty(), "{:?}", m.problems);
    // Tokenizer counters are labelled model_name only; scheduler gauges add engine_type.
    assert_eq!(m.sets.len(), 2, "{:?}", m.sets);
    let model = "/home/user/models/deepseek-ai__DeepSeek-R1";
    let tok = m
        .sets
        .iter()
        .find(|s| !s.labels.contains_key("engine_type"))
        .unwrap();
    assert_eq!(
        tok.labels.get("model_name").map(String::as_str),
        Some(model)
    );
    assert_eq!(tok.num_requests_total, Some(217.0));
    assert_eq!(tok.cached_tokens_total, Some(2688.0));
    assert_eq!(tok.num_aborted_requests_total, Some(157.0));
    let sch = m
        .sets
        .iter()
        .find(|s| s.labels.get("engine_type").map(String::as_str) == Some("unified"))
        .unwrap();
    assert_eq!(sch.num_running_reqs, Some(0.0));
    assert_eq!(sch.num_used_tokens, Some(0.0));
    assert_eq!(sch.token_usage, Some(0.0));
    // The dump is cut after `# TYPE sglang:gen_throughput gauge`: no sample, so unknown.
    assert_eq!(sch.gen_throughput, None);
    assert_eq!(m.total(|s| s.num_requests_total), Some(217.0));
    // abort ratio 157/217 = 72 %
    let ratio = m.total(|s| s.num_aborted_requests_total).unwrap()
        / m.total(|s| s.num_requests_total).unwrap();
    assert!((ratio - 0.7235).abs() < 1e-3);
}

const HIST: &str = r#"# HELP sglang:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE sglang:time_to_first_token_seconds histogram
sglang:time_to_first_token_seconds_bucket{le="0.1",model_name="m"} 10.0
sglang:time_to_first_token_seconds_bucket{le="0.2",model_name="m"} 30.0
sglang:time_to_first_token_seconds_bucket{le="0.4",model_name="m"} 90.0
sglang:time_to_first_token_seconds_bucket{le="1.0",model_name="m"} 100.0
sglang:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 100.0
sglang:time_to_first_token_seconds_sum{model_name="m"} 25.5
sglang:time_to_first_token_seconds_count{model_name="m"} 100.0
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{model_name="m"} 123456.0
# TYPE sglang:realtime_tokens_total counter
sglang:realtime_tokens_total{mode="decode",model_name="m"} 99.0
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 12.5
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="m",engine_type="unified",dp_rank="0"} 3.0
sglang:num_queue_reqs{model_name="m",engine_type="unified",dp_rank="1"} 5.0
sglang:broken_line{model_name="m"} not-a-number
sglang:weird{model_name="a,b"} 1.0
"#;

#[test]
fn histogram_sum_count_and_quantiles() {
    let m = MetricsSnapshot::parse(HIST);
    let (_, h) = m.first(|s| s.time_to_first_token_seconds.clone()).unwrap();
    assert_eq!(h.buckets.len(), 5);
    assert_eq!(h.sum, Some(25.5));
    assert_eq!(h.count, Some(100.0));
    assert_eq!(h.mean(), Some(0.255));
    // p50: rank 50 in (0.2, 0.4] holding 30..90 -> 0.2 + 0.2 * 20/60
    assert!((h.quantile(0.5).unwrap() - (0.2 + 0.2 * 20.0 / 60.0)).abs() < 1e-12);
    // p05: rank 5 in the first bucket (0, 0.1] -> 0.05
    assert!((h.quantile(0.05).unwrap() - 0.05).abs() < 1e-12);
    // p100 = upper bound of the last non-empty finite bucket
    assert_eq!(h.quantile(1.0), Some(1.0));
    assert_eq!(h.quantile(1.5), None);
    // the _sum/_count companions are not reported as unknown samples
    assert!(
        m.unknown
            .iter()
            .all(|u| !u.name.ends_with("_sum") && !u.name.ends_with("_count"))
    );
}

#[test]
fn per_label_set_unknown_kept_bad_lines_reported() {
    let m = MetricsSnapshot::parse(HIST);
    assert_eq!(m.total(|s| s.num_queue_reqs), Some(8.0));
    let per_rank: Vec<_> = m
        .sets
        .iter()
        .filter_map(|s| Some((s.labels.get("dp_rank")?.clone(), s.num_queue_reqs?)))
        .collect();
    assert_eq!(
        per_rank,
        vec![("0".to_string(), 3.0), ("1".to_string(), 5.0)]
    );
    assert_eq!(m.total(|s| s.generation_tokens_total), Some(123_456.0));
    let names: Vec<&str> = m.unknown.iter().map(|u| u.name.as_str()).collect();
    assert!(names.contains(&"process_cpu_seconds_total"), "{names:?}");
    // A label value holding ',' is read whole (prometheus-parse split it).
    assert!(names.contains(&"sglang:weird"), "{names:?}");
    let weird = m.unknown.iter().find(|u| u.name == "sglang:weird").unwrap();
    assert_eq!(
        weird.labels.get("model_name").map(String::as_str),
        Some("a,b")
    );
    // realtime_tokens_total is typed by mode, its mode label not part of the set.
    let (labels, rt) = m
        .first(|s| (!s.realtime_tokens_total.is_empty()).then(|| s.realtime_tokens_total.clone()))
        .unwrap();
    assert_eq!(labels.get("mode"), None);
    assert_eq!(rt.get("decode"), Some(&99.0));
    assert_eq!(m.problems.len(), 1, "{:?}", m.problems);
    assert!(m.problems[0].contains("line 19") && m.problems[0].contains("not a number"));
}

/// Issue 13 item 7: an HTML error page, or junk, is no data (not zeros).
#[test]
fn html_or_junk_is_no_data() {
    let html = "<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>\n<body>nginx</body></html>\n";
    let m = MetricsSnapshot::parse(html);
    assert!(!m.has_data());
    assert_eq!(m.problems_total, 3);
    assert!(
        m.problems[0].starts_with("line 1: bad metric name"),
        "{:?}",
        m.problems
    );
    assert_eq!(m.total(|s| s.num_running_reqs), None);
    let junk = MetricsSnapshot::parse("\u{0}\u{1}garbage 12 34 56\nok\n");
    assert!(!junk.has_data());
    assert_eq!(junk.problems_total, 2);
}

/// Issue 13 item 7: a duplicated series, NaN, +Inf and 1.8e19 are rejected
/// with a warning naming the line, and the sound series are still used.
#[test]
fn absurd_values_are_rejected_with_a_warning() {
    let text = "# TYPE sglang:num_running_reqs gauge\n\
        sglang:num_running_reqs{dp_rank=\"0\"} 12.0\n\
        sglang:num_running_reqs{dp_rank=\"0\"} 18446744073709551616\n\
        sglang:num_running_reqs{dp_rank=\"1\"} 1.8e19\n\
        # TYPE sglang:token_usage gauge\n\
        sglang:token_usage{dp_rank=\"0\"} NaN\n\
        sglang:token_usage{dp_rank=\"1\"} 0.93\n\
        # TYPE sglang:gen_throughput gauge\n\
        sglang:gen_throughput{dp_rank=\"0\"} +Inf\n\
        # TYPE sglang:num_requests_total counter\n\
        sglang:num_requests_total 1.8e19\n\
        # TYPE sglang:num_queue_reqs gauge\n\
        sglang:num_queue_reqs{dp_rank=\"1\"} -3\n";
    let m = MetricsSnapshot::parse(text);
    assert_eq!(m.total(|s| s.num_running_reqs), Some(12.0));
    assert_eq!(
        m.sets
            .iter()
            .filter_map(|s| s.token_usage)
            .collect::<Vec<_>>(),
        [0.93]
    );
    assert_eq!(m.total(|s| s.gen_throughput), None);
    assert_eq!(m.total(|s| s.num_requests_total), None);
    assert_eq!(m.total(|s| s.num_queue_reqs), None);
    let lines: Vec<&str> = m
        .problems
        .iter()
        .map(|p| p.split(':').next().unwrap())
        .collect();
    assert_eq!(
        lines,
        ["line 3", "line 4", "line 6", "line 9", "line 11", "line 13"],
        "{:?}",
        m.problems
    );
    assert!(m.problems[0].contains("duplicate series"));
    assert!(m.problems[1].contains("beyond what a server reports"));
    assert!(m.problems[2].contains("not a finite number"));
    assert!(m.problems[5].contains("negative"));
    assert_eq!(m.problems_total, 6);
}

/// Issue 13 item 3: 40,000 series (5,000 DP ranks x 8 gauges) parse into
/// 5,000 label sets in one pass (the old parser searched the sets linearly
/// per sample; its cost is measured in the note, not asserted here).
#[test]
fn many_series_are_grouped_by_label_set() {
    let mut text = String::new();
    for name in [
        "num_running_reqs",
        "num_queue_reqs",
        "token_usage",
        "gen_throughput",
        "num_used_tokens",
        "kv_used_tokens",
        "kv_available_tokens",
        "kv_evictable_tokens",
    ] {
        text.push_str(&format!("# TYPE sglang:{name} gauge\n"));
        for r in 0..5000 {
            text.push_str(&format!(
                "sglang:{name}{{dp_rank=\"{r}\",instance=\"h:1\"}} 0.5\n"
            ));
        }
    }
    let m = MetricsSnapshot::parse(&text);
    assert!(
        m.problems.is_empty(),
        "{:?}",
        &m.problems[..3.min(m.problems.len())]
    );
    assert_eq!(m.samples, 40_000);
    assert_eq!(m.sets.len(), 5000);
    assert_eq!(m.total(|s| s.kv_evictable_tokens), Some(2500.0));
}

/// PD transfer metrics: histograms from v0.5.10, gauges before (`sglang-observables.md` §3.3).
#[test]
fn kv_transfer_histograms_and_gauges() {
    let text = "# TYPE sglang:kv_transfer_latency_ms histogram\n\
        sglang:kv_transfer_latency_ms_bucket{engine_type=\"prefill\",le=\"10.0\"} 3.0\n\
        sglang:kv_transfer_latency_ms_bucket{engine_type=\"prefill\",le=\"100.0\"} 9.0\n\
        sglang:kv_transfer_latency_ms_bucket{engine_type=\"prefill\",le=\"+Inf\"} 10.0\n\
        sglang:kv_transfer_latency_ms_sum{engine_type=\"prefill\"} 420.0\n\
        sglang:kv_transfer_latency_ms_count{engine_type=\"prefill\"} 10.0\n\
        # TYPE sglang:kv_transfer_speed_gb_s gauge\n\
        sglang:kv_transfer_speed_gb_s{engine_type=\"prefill\"} 12.5\n";
    let m = MetricsSnapshot::parse(text);
    assert!(m.problems.is_empty(), "{:?}", m.problems);
    assert_eq!(m.sets.len(), 1);
    let h = &m.sets[0].kv_transfer["latency_ms"];
    assert_eq!(
        h.buckets,
        vec![(10.0, 3.0), (100.0, 9.0), (f64::INFINITY, 10.0)]
    );
    assert_eq!(
        (h.sum, h.count, h.mean()),
        (Some(420.0), Some(10.0), Some(42.0))
    );
    assert_eq!(m.sets[0].kv_transfer_gauges.get("speed_gb_s"), Some(&12.5));
}

/// The OpenMetrics shape of a counter (`# TYPE x counter`, samples `x_total` and
/// `x_created`) is typed like the 0.0.4 shape (`# TYPE x_total counter`).
#[test]
fn openmetrics_counter_shape() {
    let text = "# TYPE sglang:generation_tokens counter\n\
        sglang:generation_tokens_total{model_name=\"m\"} 900.0\n\
        sglang:generation_tokens_created{model_name=\"m\"} 1.7e9\n\
        # TYPE sglang:realtime_tokens counter\n\
        sglang:realtime_tokens_total{model_name=\"m\",mode=\"decode\"} 12.0\n\
        # EOF\n";
    let m = MetricsSnapshot::parse(text);
    assert!(m.problems.is_empty(), "{:?}", m.problems);
    assert_eq!(m.total(|s| s.generation_tokens_total), Some(900.0));
    let (_, rt) = m
        .first(|s| s.realtime_tokens_total.get("decode").copied())
        .unwrap();
    assert_eq!(rt, 12.0);
}
