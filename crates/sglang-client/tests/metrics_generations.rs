//! The two generations of SGLang's `/metrics` names read alike.
//!
//! The texts are written as `prometheus_client` (0.0.4 text format, multiprocess
//! mode) writes SGLang's collectors: `python/sglang/srt/observability/metrics_collector.py`
//! (`SchedulerMetricsCollector`, `TokenizerMetricsCollector`) and, for the v0.5.9 info gauge,
//! `python/sglang/srt/metrics/collector.py` (`emit_cache_config_info`: labels `page_size`,
//! `num_pages`, value 1).

use sglang_client::{ForwardTimer, MetricsSnapshot, Occupancy};

const SCHED: &str =
    r#"engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="0""#;

/// v0.5.9-style: `cache_config_info`, `gpu_execution_seconds_total` (device timer off:
/// declared, no sample), the removed `gpu_overlap_wait_seconds_total`, no `is_streaming`.
fn old_text() -> String {
    format!(
        r#"# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{{{SCHED}}} 12.0
# HELP sglang:max_total_num_tokens Maximum total number of tokens in the KV cache pool.
# TYPE sglang:max_total_num_tokens gauge
sglang:max_total_num_tokens{{{SCHED}}} 24000.0
# HELP sglang:cache_config_info Information of the cache config
# TYPE sglang:cache_config_info gauge
sglang:cache_config_info{{num_pages="1500",page_size="16"}} 1.0
# HELP sglang:gpu_execution_seconds_total Total time that GPU is busy executing model forward passes.
# TYPE sglang:gpu_execution_seconds_total counter
# HELP sglang:gpu_overlap_wait_seconds_total GPU forward stream idle time.
# TYPE sglang:gpu_overlap_wait_seconds_total counter
sglang:gpu_overlap_wait_seconds_total{{{SCHED},category="forward"}} 3.5
# HELP sglang:generation_tokens_total Number of generation tokens processed.
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{{model_name="m"}} 9000.0
# HELP sglang:num_requests_total Number of requests processed.
# TYPE sglang:num_requests_total counter
sglang:num_requests_total{{model_name="m"}} 30.0
# HELP sglang:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE sglang:time_to_first_token_seconds histogram
sglang:time_to_first_token_seconds_bucket{{le="0.1",model_name="m"}} 10.0
sglang:time_to_first_token_seconds_bucket{{le="1.0",model_name="m"}} 30.0
sglang:time_to_first_token_seconds_bucket{{le="+Inf",model_name="m"}} 30.0
sglang:time_to_first_token_seconds_sum{{model_name="m"}} 9.0
sglang:time_to_first_token_seconds_count{{model_name="m"}} 30.0
"#
    )
}

/// main-style: `page_size`/`num_pages` gauges, `forward_execution_seconds_total{category}`,
/// `fwd_occupancy`, the scheduler's idle / CPU / stage counters (PR #37461, #37636),
/// `prefill_effective_tokens_total{mode}` and the tokenizer's `is_streaming` split.
fn new_text(occupancy: &str, forward_s: &str) -> String {
    format!(
        r#"# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{{{SCHED}}} 12.0
# HELP sglang:max_total_num_tokens Maximum total number of tokens in the KV cache pool.
# TYPE sglang:max_total_num_tokens gauge
sglang:max_total_num_tokens{{{SCHED}}} 24000.0
# HELP sglang:page_size KV cache page size in tokens.
# TYPE sglang:page_size gauge
sglang:page_size{{{SCHED}}} 16.0
# HELP sglang:num_pages Number of KV cache pages.
# TYPE sglang:num_pages gauge
sglang:num_pages{{{SCHED}}} 1500.0
# HELP sglang:fwd_occupancy Forward pass GPU occupancy percentage.
# TYPE sglang:fwd_occupancy gauge
sglang:fwd_occupancy{{{SCHED}}} {occupancy}
# HELP sglang:forward_execution_seconds_total Total time that GPU is busy executing model forward passes. Refer to ForwardMode for category labels.
# TYPE sglang:forward_execution_seconds_total counter
sglang:forward_execution_seconds_total{{{SCHED},category="decode"}} {forward_s}
sglang:forward_execution_seconds_total{{{SCHED},category="extend"}} 0.0
# HELP sglang:scheduler_idle_seconds_total Scheduler idle wall time.
# TYPE sglang:scheduler_idle_seconds_total counter
sglang:scheduler_idle_seconds_total{{{SCHED}}} 41.5
# HELP sglang:scheduler_process_cpu_seconds_total Scheduler process CPU time.
# TYPE sglang:scheduler_process_cpu_seconds_total counter
sglang:scheduler_process_cpu_seconds_total{{{SCHED}}} 77.25
# HELP sglang:scheduler_stage_seconds_total Scheduler wall time by stage.
# TYPE sglang:scheduler_stage_seconds_total counter
sglang:scheduler_stage_seconds_total{{{SCHED},category="run_batch"}} 50.0
sglang:scheduler_stage_seconds_total{{{SCHED},category="idle"}} 41.5
sglang:scheduler_stage_seconds_total{{{SCHED},category="recv_requests"}} 1.25
# HELP sglang:prefill_effective_tokens_total Effective prefill tokens.
# TYPE sglang:prefill_effective_tokens_total counter
sglang:prefill_effective_tokens_total{{{SCHED},mode="input"}} 6000.0
sglang:prefill_effective_tokens_total{{{SCHED},mode="device_hit"}} 2000.0
sglang:prefill_effective_tokens_total{{{SCHED},mode="host_hit"}} 0.0
sglang:prefill_effective_tokens_total{{{SCHED},mode="storage_hit"}} 0.0
# HELP sglang:generation_tokens_total Number of generation tokens processed.
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{{is_streaming="true",model_name="m"}} 8000.0
sglang:generation_tokens_total{{is_streaming="false",model_name="m"}} 1000.0
# HELP sglang:num_requests_total Number of requests processed.
# TYPE sglang:num_requests_total counter
sglang:num_requests_total{{is_streaming="true",model_name="m"}} 25.0
sglang:num_requests_total{{is_streaming="false",model_name="m"}} 5.0
# HELP sglang:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE sglang:time_to_first_token_seconds histogram
sglang:time_to_first_token_seconds_bucket{{is_streaming="true",le="0.1",model_name="m"}} 8.0
sglang:time_to_first_token_seconds_bucket{{is_streaming="true",le="1.0",model_name="m"}} 25.0
sglang:time_to_first_token_seconds_bucket{{is_streaming="true",le="+Inf",model_name="m"}} 25.0
sglang:time_to_first_token_seconds_sum{{is_streaming="true",model_name="m"}} 7.0
sglang:time_to_first_token_seconds_count{{is_streaming="true",model_name="m"}} 25.0
sglang:time_to_first_token_seconds_bucket{{is_streaming="false",le="0.1",model_name="m"}} 2.0
sglang:time_to_first_token_seconds_bucket{{is_streaming="false",le="1.0",model_name="m"}} 5.0
sglang:time_to_first_token_seconds_bucket{{is_streaming="false",le="+Inf",model_name="m"}} 5.0
sglang:time_to_first_token_seconds_sum{{is_streaming="false",model_name="m"}} 2.0
sglang:time_to_first_token_seconds_count{{is_streaming="false",model_name="m"}} 5.0
"#
    )
}

#[test]
fn both_generations_give_the_same_pool_requests_tokens_and_ttft() {
    let old = MetricsSnapshot::parse(&old_text());
    let new = MetricsSnapshot::parse(&new_text("72.5", "30.5"));
    for m in [&old, &new] {
        assert_eq!(m.problems, Vec::<String>::new());
        assert_eq!(m.pool_tokens(), Some(24_000.0));
        assert_eq!(m.total(|x| x.generation_tokens_total), Some(9000.0));
        assert_eq!(m.total(|x| x.num_requests_total), Some(30.0));
        // The tokenizer's series are one label set, `is_streaming` summed over.
        let tok: Vec<_> = m
            .sets
            .iter()
            .filter(|s| s.time_to_first_token_seconds.is_some())
            .collect();
        assert_eq!(tok.len(), 1, "{:?}", m.sets);
        let h = tok[0].time_to_first_token_seconds.as_ref().unwrap();
        assert_eq!(h.buckets, [(0.1, 10.0), (1.0, 30.0), (f64::INFINITY, 30.0)]);
        assert_eq!((h.sum, h.count), (Some(9.0), Some(30.0)));
        assert_eq!(h.quantile(0.5), Some(0.1 + 0.9 * 5.0 / 20.0));
        // cache_config_info's labels and the gauges give the same page figures.
        let (_, pages) = m.first(|x| Some((x.page_size?, x.num_pages?))).unwrap();
        assert_eq!(pages, (16.0, 1500.0));
    }
    // The removed overlap-wait counter is not required, only kept.
    assert!(
        old.unknown
            .iter()
            .any(|u| u.name == "sglang:gpu_overlap_wait_seconds_total")
    );
    assert_eq!(old.forward_timer(), ForwardTimer::NotEnabled);
    assert_eq!(old.total(|x| x.scheduler_idle_seconds_total), None);
}

#[test]
fn the_new_scheduler_counters_are_typed() {
    let m = MetricsSnapshot::parse(&new_text("72.5", "30.5"));
    let s = m
        .sets
        .iter()
        .find(|s| s.scheduler_idle_seconds_total.is_some())
        .unwrap();
    assert_eq!(s.scheduler_idle_seconds_total, Some(41.5));
    assert_eq!(s.scheduler_process_cpu_seconds_total, Some(77.25));
    assert_eq!(s.scheduler_stage_seconds_total["run_batch"], 50.0);
    assert_eq!(s.scheduler_stage_seconds_total["recv_requests"], 1.25);
    assert_eq!(s.prefill_effective_tokens_total["device_hit"], 2000.0);
    assert_eq!(s.prefill_effective_tokens_total["input"], 6000.0);
    assert_eq!(s.fwd_occupancy, Some(Occupancy::Percent(72.5)));
    assert_eq!(s.forward_execution_seconds_total["decode"], 30.5);
    assert_eq!(m.forward_timer(), ForwardTimer::Measured(30.5));
}

#[test]
fn an_idle_occupancy_and_a_zero_timer_are_not_numbers() {
    let m = MetricsSnapshot::parse(&new_text("NaN", "0.0"));
    assert_eq!(m.problems_total, 0, "{:?}", m.problems);
    let (_, occ) = m.first(|x| x.fwd_occupancy).unwrap();
    assert_eq!(occ, Occupancy::Idle);
    // Zero in every category: the device timer is off, not a measured zero.
    assert_eq!(m.forward_timer(), ForwardTimer::NotEnabled);
    // Without either name declared, the timer is absent.
    let bare = MetricsSnapshot::parse(&format!("sglang:num_running_reqs{{{SCHED}}} 1.0\n"));
    assert_eq!(bare.forward_timer(), ForwardTimer::Absent);
    // An occupancy above 100 % is rejected and counted.
    let bad = MetricsSnapshot::parse(&new_text("250.0", "1.0"));
    assert_eq!(bad.problems_total, 1, "{:?}", bad.problems);
    assert_eq!(bad.first(|x| x.fwd_occupancy), None);
}

#[test]
fn the_pool_falls_back_to_pages_and_bad_info_labels_are_counted() {
    // A scrape without max_total_num_tokens: page_size × num_pages.
    let text = format!(
        "# TYPE sglang:page_size gauge\nsglang:page_size{{{SCHED}}} 64.0\n\
         # TYPE sglang:num_pages gauge\nsglang:num_pages{{{SCHED}}} 375.0\n"
    );
    assert_eq!(MetricsSnapshot::parse(&text).pool_tokens(), Some(24_000.0));
    let info = "# TYPE sglang:cache_config_info gauge\n\
                sglang:cache_config_info{num_pages=\"375\",page_size=\"64\"} 1.0\n";
    assert_eq!(MetricsSnapshot::parse(info).pool_tokens(), Some(24_000.0));
    let junk = "# TYPE sglang:cache_config_info gauge\n\
                sglang:cache_config_info{num_pages=\"-3\",page_size=\"sixteen\"} 1.0\n";
    let m = MetricsSnapshot::parse(junk);
    assert_eq!(m.pool_tokens(), None);
    assert_eq!(m.problems_total, 1);
    assert!(
        m.problems[0].starts_with("line 2: sglang:cache_config_info"),
        "{:?}",
        m.problems
    );
}

/// The simulator's two generations of one state read to the same figures; only the new
/// one carries the scheduler's time counters.
#[test]
fn the_simulators_generations_read_alike() {
    use sglang_sim::{MetricsGeneration, sample_exposition};
    let old = MetricsSnapshot::parse(&sample_exposition(MetricsGeneration::Old, true));
    let new = MetricsSnapshot::parse(&sample_exposition(MetricsGeneration::New, true));
    for m in [&old, &new] {
        assert_eq!(m.problems, Vec::<String>::new());
        assert_eq!(m.pool_tokens(), Some(24_000.0));
        assert_eq!(m.total(|x| x.num_running_reqs), Some(60.0));
        assert_eq!(m.total(|x| x.num_queue_reqs), Some(8.0));
        assert_eq!(m.total(|x| x.generation_tokens_total), Some(9000.0));
        assert_eq!(m.total(|x| x.num_requests_total), Some(30.0));
        assert_eq!(m.forward_timer(), ForwardTimer::Measured(52.5));
        let ttft = m
            .first(|x| x.time_to_first_token_seconds.clone())
            .unwrap()
            .1;
        assert_eq!(ttft.count, Some(6.0));
        assert_eq!(ttft.quantile(0.5), Some(0.6));
        let (_, pages) = m.first(|x| Some((x.page_size?, x.num_pages?))).unwrap();
        assert_eq!(pages, (16.0, 1500.0));
    }
    assert_eq!(old.total(|x| x.scheduler_idle_seconds_total), None);
    assert_eq!(new.total(|x| x.scheduler_idle_seconds_total), Some(7.5));
    assert_eq!(
        new.total(|x| x.scheduler_process_cpu_seconds_total),
        Some(52.5)
    );
    // Rank 0 ran 26.25 s of passes and idled 7.5 s: 77.8 %.
    let occ: Vec<_> = new.sets.iter().filter_map(|s| s.fwd_occupancy).collect();
    assert_eq!(occ.len(), 2);
    assert_eq!(occ[0], Occupancy::Percent(100.0 * 26.25 / 33.75));
    assert_eq!(occ[1], Occupancy::Percent(100.0));
    // Without the device timer: declared, zero, not enabled; occupancy idle (NaN).
    for g in [MetricsGeneration::Old, MetricsGeneration::New] {
        let m = MetricsSnapshot::parse(&sample_exposition(g, false));
        assert_eq!(m.forward_timer(), ForwardTimer::NotEnabled, "{g:?}");
        assert!(
            m.sets
                .iter()
                .all(|s| s.fwd_occupancy.is_none_or(|o| o == Occupancy::Idle))
        );
    }
}
