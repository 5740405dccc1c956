//! Pool model, feasibility, in-flight load and HiCache on constructed numbers.

use kv_capacity::{
    CapacityError, Feasibility, GIB, Headroom, HiCacheInput, HiCacheSizing, InFlightLoad,
    LoadMethod, MemInfo, PoolModel, PreSource, PrefixReuse, activation_estimate_bytes,
    check_feasibility, hicache_verdict, startup_need_bytes,
};

#[test]
fn spec_worked_example_llama_3_8b_a100() {
    // spec §5.1: pre 78.5 GiB, 0.88, ~15 GiB weights → rest 54.08 GiB → 54.08 × 8192 tokens
    let pool = PoolModel::from_memory(78.5 * GIB, PreSource::Given, 63.5 * GIB, 131_072).unwrap();
    assert_eq!(pool.tokens_at(0.88).unwrap(), 443_023); // floor(443,023.36)
    // fp8 cell: same bytes, twice the tokens (floor(886,046.72))
    assert_eq!(pool.tokens_with_cell(0.88, 65_536).unwrap(), 886_046);
    // +0.01 adds 0.785 GiB = 6,430.72 tokens, not 1 % of the pool
    assert!((pool.tokens_per_hundredth() - 6_430.72).abs() < 1e-6);
    assert_eq!(pool.tokens_at(0.89).unwrap(), 449_454); // floor(443,023.36 + 6,430.72)
    assert!((pool.used_since_pre_bytes() / GIB - 15.0).abs() < 1e-12);
    // too small a fraction: SGLang would not start
    assert_eq!(pool.tokens_at(0.15).unwrap(), 0);
    assert!(matches!(
        pool.tokens_at(1.2),
        Err(CapacityError::Invalid(_))
    ));
    assert!(PoolModel::from_memory(10.0 * GIB, PreSource::Given, 11.0 * GIB, 1).is_err());
}

#[test]
fn calibrated_pool_is_exact_at_the_observation() {
    let pre = 80.0 * GIB;
    let pool = PoolModel::calibrated(0.80, 100_000, pre, PreSource::Given, 131_072).unwrap();
    assert_eq!(pool.tokens_at(0.80).unwrap(), 100_000);
    // + 0.05 × 80 GiB = 4 GiB = 32,768 tokens of 128 KiB
    assert_eq!(pool.tokens_at(0.85).unwrap(), 132_768);
    assert_eq!(pool.tokens_at(0.75).unwrap(), 67_232);
    assert!((pool.extra_bytes(0.80, 0.85) / GIB - 4.0).abs() < 1e-9);
    // used since pre = 0.8 × 80 GiB − 100,000 × 128 KiB = 64 GiB − 12.207… GiB
    assert!(
        (pool.used_since_pre_bytes() / GIB - (64.0 - 100_000.0 * 131_072.0 / GIB)).abs() < 1e-9
    );
    assert!(PoolModel::calibrated(0.0, 1, pre, PreSource::Given, 1).is_err());
    assert!(PoolModel::calibrated(0.8, 1, pre, PreSource::Given, 0).is_err());
}

#[test]
fn feasibility_keeps_a_margin_and_trusts_what_runs() {
    let h = Headroom::under_load(5.0 * GIB);
    let c = check_feasibility(&h, 3.0 * GIB);
    assert_eq!((c.verdict, c.free_after_gib), (Feasibility::Fits, 2.0));
    // boundary: exactly the 1.5 GiB margin left fits, a little less is uncertain
    assert_eq!(check_feasibility(&h, 3.5 * GIB).verdict, Feasibility::Fits);
    let c = check_feasibility(&h, 4.0 * GIB);
    assert_eq!((c.verdict, c.free_after_gib), (Feasibility::Uncertain, 1.0));
    // boundary: 0.5 GiB left is uncertain, less is likely out of memory
    assert_eq!(
        check_feasibility(&h, 4.5 * GIB).verdict,
        Feasibility::Uncertain
    );
    assert_eq!(
        check_feasibility(&h, 4.6 * GIB).verdict,
        Feasibility::OomLikely
    );
    let c = check_feasibility(&h, 6.0 * GIB);
    assert_eq!(
        (c.verdict, c.free_after_gib),
        (Feasibility::OomLikely, -1.0)
    );
    // The running configuration, and a change that frees memory, fit whatever is free: a
    // 24 GB card serving a 4B model runs with 1.91 GiB left.
    let small = Headroom::after_startup(1.91 * GIB, startup_need_bytes(2048, None));
    assert_eq!(check_feasibility(&small, 0.0).verdict, Feasibility::Fits);
    assert_eq!(
        check_feasibility(&small, -2.0 * GIB).verdict,
        Feasibility::Fits
    );
    // 1 GiB more leaves 0.91 GiB: below the 1.0 GiB floor, above 0.5 → uncertain, not forbidden
    let c = check_feasibility(&small, GIB);
    assert_eq!(c.verdict, Feasibility::Uncertain);
    assert!((c.free_after_gib - 0.91).abs() < 1e-9);
    // 8192-token chunks of hidden size 2560 (Qwen3-4B): 8192 × 2560 × 2 × 16 B = 0.625 GiB
    assert_eq!(activation_estimate_bytes(8192, 2560) / GIB, 0.625);
}

/// One real outcome the start-up band rests on (`feasibility.rs`' table).
struct Outcome {
    case: &'static str,
    /// `chunked_prefill_size` (tokens).
    chunk: u64,
    /// A wide model's activation estimate per GPU (bytes), when its config is known.
    activation: Option<f64>,
    /// Free memory left after start-up at the fraction that ran or failed (GiB).
    left_gib: f64,
    /// Whether it served under load (else it ran out of memory).
    ran: bool,
    /// The band it must fall in.
    band: Feasibility,
}

/// The start-up band reproduces each real outcome it rests on: no case that ran is called out
/// of memory, no case that failed is called a fit, and the thin middle is uncertain.
#[test]
fn startup_band_reproduces_real_outcomes() {
    use Feasibility::*;
    let kimi = Some(activation_estimate_bytes(8192, 7168) / 8.0);
    let cases = [
        // the founding case: 5.16 GiB at 0.85, pre 95.0 GiB: 0.88 leaves 5.16 − 3 × 0.95
        Outcome {
            case: "kimi-k25 8×RTX PRO 6000 TP8 at 0.88",
            chunk: 8192,
            activation: kimi,
            left_gib: 5.16 - 3.0 * 0.95,
            ran: true,
            band: Fits,
        },
        Outcome {
            case: "kimi-k25 at 0.93",
            chunk: 8192,
            activation: kimi,
            left_gib: 5.16 - 8.0 * 0.95,
            ran: false,
            band: OomLikely,
        },
        // real-long/rtx4090-qwen3-4b-*: 1.91 GiB after start-up, the pool full, 2048-token chunks
        Outcome {
            case: "Qwen3-4B on an RTX 4090 at 0.85",
            chunk: 2048,
            activation: Some(activation_estimate_bytes(2048, 2560)),
            left_gib: 1.91,
            ran: true,
            band: Fits,
        },
        // a hybrid model with MTP on a 96 GB card, 4096-token chunks (public report)
        Outcome {
            case: "hybrid + MTP, 96 GB, 1.37 GiB left",
            chunk: 4096,
            activation: None,
            left_gib: 1.37,
            ran: true,
            band: Fits,
        },
        Outcome {
            case: "hybrid + MTP, 96 GB, 0.72 GiB left",
            chunk: 4096,
            activation: None,
            left_gib: 0.72,
            ran: false,
            band: Uncertain,
        },
        Outcome {
            case: "hybrid + MTP, 96 GB, 0.45 GiB left",
            chunk: 4096,
            activation: None,
            left_gib: 0.45,
            ran: false,
            band: OomLikely,
        },
        // Qwen3-4B with 0.45 GiB left ran out of memory on a 29k-token prefill (public report)
        Outcome {
            case: "Qwen3-4B, 0.45 GiB left",
            chunk: 2048,
            activation: None,
            left_gib: 0.45,
            ran: false,
            band: OomLikely,
        },
        // a 27B hybrid on a 48 GB card served long prompts with 0.52 GiB left (public report):
        // not ruled out, so not forbidden
        Outcome {
            case: "27B hybrid, 48 GB, 0.52 GiB left",
            chunk: 2048,
            activation: None,
            left_gib: 0.52,
            ran: true,
            band: Uncertain,
        },
        // real-4/100-101: a GB10 with 6.22 GiB after start-up ran 8192-token chunks
        Outcome {
            case: "GB10 Laguna INT4, 8192-token chunks",
            chunk: 8192,
            activation: None,
            left_gib: 6.22,
            ran: true,
            band: Fits,
        },
    ];
    for o in cases {
        // a change that leaves `left_gib` of a server that had 10 GiB free after start-up
        let h = Headroom::after_startup(10.0 * GIB, startup_need_bytes(o.chunk, o.activation));
        let c = check_feasibility(&h, (10.0 - o.left_gib) * GIB);
        assert_eq!(c.verdict, o.band, "{}: {:.2} GiB left", o.case, o.left_gib);
        if o.ran {
            assert_ne!(c.verdict, OomLikely, "{}", o.case);
        } else {
            assert_ne!(c.verdict, Fits, "{}", o.case);
        }
    }
    // the calibrated need: 0.25 GiB per 1,024 chunk tokens, at least 1 GiB
    assert_eq!(startup_need_bytes(8192, None) / GIB, 2.0);
    assert_eq!(startup_need_bytes(2048, None) / GIB, 1.0);
    assert_eq!(startup_need_bytes(256, None) / GIB, 1.0);
    // a wide model at TP1 needs more than the calibrated figure: its estimate wins
    let wide = activation_estimate_bytes(8192, 8192);
    assert_eq!(startup_need_bytes(8192, Some(wide)), wide);
}

#[test]
fn in_flight_requests_are_length_biased() {
    // two requests: (P=100, C=100) and (P=100, C=900)
    // H = [100·(100+50) + 900·(100+450)] / 1000 = (15,000 + 495,000) / 1000 = 510
    let l = InFlightLoad::from_samples(&[(100, 100), (100, 900)]).unwrap();
    assert_eq!(l.method, LoadMethod::Samples);
    assert_eq!(l.mean_held_tokens, 510.0);
    assert_eq!(l.naive_held_tokens(), Some(350.0)); // E[P] + E[C]/2 under-counts
    assert_eq!(l.concurrency(51_000), 100.0);
    // moments, independent: E[P]=100, E[C]=500, E[C²]=(100²+900²)/2=410,000 → 100 + 410 = 510
    let m = InFlightLoad::from_moments(100.0, 500.0, 410_000.0).unwrap();
    assert_eq!(m.mean_held_tokens, 510.0);
    assert!(InFlightLoad::from_moments(100.0, 500.0, 1000.0).is_err()); // E[C²] < E[C]²
    assert!(InFlightLoad::from_samples(&[]).is_err());
    assert!(InFlightLoad::from_samples(&[(10, 0)]).is_err());
    // zero-completion requests weigh nothing
    let z = InFlightLoad::from_samples(&[(100, 100), (100, 900), (5000, 0)]).unwrap();
    assert_eq!(z.mean_held_tokens, 510.0);
}

#[test]
fn in_flight_load_from_the_log() {
    // kimi-k25-b2-early's steady decode lines: token usage 0.88 of 116,171 tokens over 42
    // running requests holds 2,434 tokens each; the records of the same run give 2,446.
    let l = InFlightLoad::observed(2434.1).unwrap();
    assert_eq!(l.method, LoadMethod::LogObserved);
    assert_eq!(l.naive_held_tokens(), None);
    // at 0.88's pool of 159,990 tokens: 65.7 requests at today's fill
    assert_eq!(format!("{:.1}", l.concurrency(159_990)), "65.7");
    assert!(InFlightLoad::observed(0.0).is_err());
    assert!(InFlightLoad::observed(f64::NAN).is_err());
    assert!(InFlightLoad::observed(-5.0).is_err());
}

const MEMINFO: &str = "MemTotal:       1056467156 kB
MemFree:        700000000 kB
MemAvailable:   900000000 kB
Buffers:          123456 kB
HugePages_Total:       0
";

#[test]
fn meminfo_parse() {
    let m = MemInfo::parse(MEMINFO).unwrap();
    assert_eq!(m.mem_total_bytes, 1_056_467_156 * 1024);
    assert_eq!(m.mem_free_bytes, 700_000_000 * 1024);
    assert_eq!(m.available_bytes(), 900_000_000 * 1024);
    let e = MemInfo::parse("MemTotal: lots kB\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "/proc/meminfo line 1: MemTotal is not a number: \"lots kB\""
    );
    assert!(MemInfo::parse("MemTotal: 1 kB\n").is_err()); // MemFree missing
}

#[test]
fn hicache_extends_prefix_cache_not_decode() {
    // Kimi-K2.5-like: MLA cell 70,272 B per rank, device pool 116,171, TP8 on one host
    let mem = MemInfo::parse(MEMINFO).unwrap();
    let mut input = HiCacheInput {
        sizing: HiCacheSizing::from_server_args(0.0, 2.0),
        device_pool_tokens: 116_171,
        host_bytes_per_token: 70_272,
        ranks_on_host: 8,
        page_size: 1,
        cached_token_share: Some(0.024),
        meminfo: Some(mem),
    };
    let v = hicache_verdict(&input).unwrap();
    assert_eq!(v.host_tokens_per_rank, 232_342);
    assert_eq!(v.host_bytes_per_rank, 232_342 * 70_272);
    assert_eq!(v.host_bytes_all_ranks, 8 * 232_342 * 70_272); // 121.65 GiB
    assert_eq!(
        v.host_limit_bytes,
        Some(900_000_000 * 1024 - 10 * (1 << 30))
    );
    assert_eq!(v.fits_host_ram, Some(true));
    assert!(!v.raises_decode_concurrency);
    assert_eq!(v.decode_pool_tokens, 116_171);
    assert_eq!(v.prefix_reuse, PrefixReuse::Low);
    assert!(!v.smaller_than_device_pool);

    // hicache_size 100 GB per rank × 8 ranks = 800 GB > 858 GiB − 10 GiB? 800e9 B = 745 GiB: fits;
    // 120 GB per rank = 894 GiB: does not
    input.sizing = HiCacheSizing::from_server_args(120.0, 2.0);
    input.cached_token_share = Some(0.6);
    input.page_size = 64;
    let v = hicache_verdict(&input).unwrap();
    // floor(120e9 / 70,272) = 1,707,650 → rounded down to a multiple of 64 = 1,707,648
    assert_eq!(v.host_tokens_per_rank, 1_707_648);
    assert_eq!(v.fits_host_ram, Some(false));
    assert_eq!(v.prefix_reuse, PrefixReuse::Useful);
    assert!(!v.raises_decode_concurrency);
    assert!(
        v.summary
            .iter()
            .any(|s| s.starts_with("does NOT fit in host RAM"))
    );

    input.sizing = HiCacheSizing::Ratio(0.5);
    input.meminfo = None;
    input.cached_token_share = None;
    let v = hicache_verdict(&input).unwrap();
    assert!(v.smaller_than_device_pool);
    assert_eq!(v.fits_host_ram, None);
    assert_eq!(v.prefix_reuse, PrefixReuse::Unknown);
    input.ranks_on_host = 0;
    assert!(hicache_verdict(&input).is_err());
}
