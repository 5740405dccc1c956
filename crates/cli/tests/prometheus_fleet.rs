//! A real Prometheus (Debian's `prometheus` package) scrapes simulated SGLang servers
//! (KV-bound with two DP ranks, pinned at its running cap, nearly idle), each kind twice: once
//! writing SGLang v0.5.9's `/metrics` names and once main's (`--metrics-generation old|new`:
//! `cache_config_info` or `page_size`/`num_pages`, `gpu_execution_seconds_total` or
//! `forward_execution_seconds_total`, `is_streaming` splits, the scheduler's idle counter),
//! and `serve` every second for about a minute; then `diagnose --prometheus` must name each
//! instance's bottleneck in the fleet table, the same for both generations with the same pool,
//! and the verdict `serve` published must come back from Prometheus.
//!
//! Without a `prometheus` binary the test says loudly that it was skipped and passes, unless
//! `THROUGHPUT_DOCTOR_REQUIRE_PROMETHEUS=1` (set by `.ci/run`), which makes it fail.
//! `THROUGHPUT_DOCTOR_PROMETHEUS` may name the binary.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sglang_sim::{MetricsGeneration, SimConfig};

/// Seconds of samples to collect before diagnosing.
const COLLECT_S: u64 = 60;

fn prometheus_binary() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("THROUGHPUT_DOCTOR_PROMETHEUS") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("prometheus"))
        .find(|p| p.is_file())
}

/// Kills Prometheus when the test ends, however it ends.
struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

fn doctor(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_throughput-doctor"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn prometheus_fleet_diagnosis_and_published_verdicts() {
    let Some(bin) = prometheus_binary() else {
        let required =
            std::env::var("THROUGHPUT_DOCTOR_REQUIRE_PROMETHEUS").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "THROUGHPUT_DOCTOR_REQUIRE_PROMETHEUS=1 but no prometheus binary is on PATH (or in THROUGHPUT_DOCTOR_PROMETHEUS)"
        );
        eprintln!(
            "\n========================================================================\n\
             SKIPPED prometheus_fleet_diagnosis_and_published_verdicts: no `prometheus` binary.\n\
             Install it to run this test, e.g. on Debian/Ubuntu:\n    \
             sudo apt-get update && sudo apt-get install -y prometheus\n\
             or point THROUGHPUT_DOCTOR_PROMETHEUS at a prometheus binary.\n\
             ========================================================================\n"
        );
        return;
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut kv = SimConfig::kv_bound();
    kv.dp_size = 2;
    // The three kinds in the old generation of names, then the same three in the new one.
    let mut cfgs = Vec::new();
    for generation in [MetricsGeneration::Old, MetricsGeneration::New] {
        for c in [
            kv.clone(),
            SimConfig::running_cap_bound(),
            SimConfig::nearly_idle(),
        ] {
            cfgs.push(SimConfig {
                metrics_generation: generation,
                ..c
            });
        }
    }
    // The new-names KV-bound server runs with SGLANG_ENABLE_METRICS_DEVICE_TIMER=1.
    cfgs[3].device_timer = true;
    let fleet = rt.block_on(sglang_sim::spawn_fleet(cfgs)).unwrap();
    let addrs: Vec<String> = fleet.iter().map(|h| h.addr.to_string()).collect();
    let serve_args = throughput_doctor_cli::serve::ServeArgs {
        listen: "127.0.0.1:0".parse().unwrap(),
        servers: fleet.iter().map(|h| h.base_url()).collect(),
        logs: Vec::new(),
        interval: Duration::from_secs(2),
        poll: Duration::from_secs(1),
        window: Duration::from_secs(600),
    };
    let served = rt
        .block_on(throughput_doctor_cli::serve::start(&serve_args))
        .unwrap();

    let dir = tempfile::tempdir().unwrap();
    let quoted = |v: &[String]| {
        v.iter()
            .map(|a| format!("\"{a}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let config = format!(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
         scrape_configs:\n\
         \x20 - job_name: sglang\n    static_configs:\n      - targets: [{}]\n\
         \x20 - job_name: throughput-doctor\n    honor_labels: true\n    static_configs:\n      - targets: [\"{}\"]\n",
        quoted(&addrs),
        served.addr
    );
    let cfg_path = dir.path().join("prometheus.yml");
    std::fs::write(&cfg_path, config).unwrap();
    let port = free_port();
    let prom_url = format!("http://127.0.0.1:{port}");
    let log = std::fs::File::create(dir.path().join("prometheus.log")).unwrap();
    let _prom = Killed(
        Command::new(&bin)
            .arg(format!("--config.file={}", cfg_path.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--log.level=warn")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap(),
    );
    // Ready, then about a minute of 1 s scrapes.
    let deadline = Instant::now() + Duration::from_secs(60);
    let ready = loop {
        let ok = std::net::TcpStream::connect(("127.0.0.1", port)).is_ok();
        if ok || Instant::now() > deadline {
            break ok;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let prom_log =
        || std::fs::read_to_string(dir.path().join("prometheus.log")).unwrap_or_default();
    assert!(ready, "prometheus did not listen: {}", prom_log());
    std::thread::sleep(Duration::from_secs(COLLECT_S));

    // diagnose --prometheus, as JSON...
    let since = format!("{}s", COLLECT_S);
    let (code, out, err) = doctor(&[
        "diagnose",
        "--prometheus",
        &prom_url,
        "--selector",
        "{job=\"sglang\"}",
        "--since",
        &since,
        "--step",
        "1s",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}\n{}", prom_log());
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let verdict = |inst: &str| {
        v["instances"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["instance"] == inst)
            .map(|i| i["bottleneck"].as_str().unwrap_or("").to_string())
    };
    assert_eq!(v["totals"]["instances"], 6, "{out}");
    assert_eq!(v["totals"]["dp_ranks"], 8, "{out}");
    let row = |inst: &str| {
        v["instances"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["instance"] == inst)
            .unwrap()
            .clone()
    };
    // addrs[k] (old names) and addrs[k + 3] (new names): the same verdict, pool and ranks.
    for (k, want, pool) in [
        (0, "kv_cache_bound", 24_000),
        (1, "running_cap_bound", 400_000),
        (2, "client_bound", 400_000),
    ] {
        for a in [&addrs[k], &addrs[k + 3]] {
            assert_eq!(verdict(a).as_deref(), Some(want), "{a}: {out}");
            let r = row(a);
            assert!(r["points"].as_u64().unwrap() >= 30, "{r}");
            assert_eq!(r["rejected_points"], 0, "{r}");
        }
        let (old, new) = (row(&addrs[k]), row(&addrs[k + 3]));
        assert_eq!(old["kv_pool_tokens"], new["kv_pool_tokens"], "{out}");
        assert_eq!(old["kv_pool_tokens"], pool, "{out}");
        assert_eq!(
            old["ranks"].as_array().map(Vec::len),
            new["ranks"].as_array().map(Vec::len)
        );
        // The device timer is off but on the new KV-bound server: SGLang declares its counter
        // without samples, so Prometheus holds no series and nothing is reported, never a
        // measured zero.
        for r in [&old, &new] {
            let timer = &r["report"]["server_metrics"]["forward_timer"];
            if r["instance"] == addrs[3].as_str() {
                assert_eq!(timer["state"], "measured", "{r}");
                assert!(timer["forward_s_per_s"].as_f64().unwrap() > 0.0, "{r}");
                let occ = &r["report"]["server_metrics"]["fwd_occupancy"];
                assert!(occ["busy_mean_pct"].as_f64().unwrap() > 0.0, "{r}");
            } else {
                assert!(timer.is_null(), "{r}");
            }
        }
        // Only main's names say how idle the scheduler was.
        assert!(old["report"]["server_metrics"]["scheduler_idle_s_per_s"].is_null());
        assert!(
            new["report"]["server_metrics"]["scheduler_idle_s_per_s"]
                .as_f64()
                .is_some(),
            "{new}"
        );
    }
    for k in [0, 3] {
        assert!(
            row(&addrs[k])["steady_gen_throughput"]["value"]
                .as_f64()
                .unwrap()
                > 0.0
        );
    }
    assert!(v["problems"].as_array().unwrap().is_empty(), "{out}");

    // ...and as text: one row per instance, named as Prometheus labels it, with its verdict.
    let (code, text, err) = doctor(&[
        "diagnose",
        "--prometheus",
        &prom_url,
        "--since",
        &since,
        "--step",
        "1s",
    ]);
    assert_eq!(code, 0, "{err}");
    let labels = [
        "KV-cache bound",
        "running-request cap bound",
        "client too slow / not enough load",
    ];
    for (addr, label) in addrs.iter().zip(labels.iter().chain(&labels)) {
        let row = text
            .lines()
            .find(|l| l.trim_start().starts_with(addr.as_str()))
            .unwrap_or_else(|| panic!("no row for {addr}:\n{text}"));
        assert!(row.contains(label), "{row}");
    }
    assert!(text.contains("Fleet from"), "{text}");
    assert!(text.contains("6 instance(s), 8 DP rank(s)"), "{text}");

    // The verdicts serve published, scraped by Prometheus, queried back.
    let client = sglang_client::PrometheusClient::new(&prom_url, Duration::from_secs(10)).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let series = rt
        .block_on(client.query_range("throughput_doctor_bottleneck == 1", now - 10.0, now, 1.0))
        .unwrap();
    let published = |inst: &str| {
        series
            .iter()
            .find(|s| s.labels.get("instance").map(String::as_str) == Some(inst))
            .and_then(|s| s.labels.get("kind").cloned())
    };
    for (k, want) in ["kv_cache_bound", "running_cap_bound", "client_bound"]
        .iter()
        .enumerate()
    {
        for a in [&addrs[k], &addrs[k + 3]] {
            assert_eq!(published(a).as_deref(), Some(*want), "{a}: {series:?}");
        }
    }

    rt.block_on(async {
        served.shutdown().await;
        for h in fleet {
            h.shutdown().await;
        }
    });
}
