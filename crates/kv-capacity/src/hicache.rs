//! Hierarchical cache (HiCache): host-RAM pool sizing and what it can and cannot do.

use serde::Serialize;

use crate::{CapacityError, GIB};

/// The parts of `/proc/meminfo` the HiCache check needs, bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct MemInfo {
    /// `MemTotal`, bytes.
    pub mem_total_bytes: u64,
    /// `MemFree`, bytes.
    pub mem_free_bytes: u64,
    /// `MemAvailable`, bytes (kernels ≥ 3.14); `None` when absent.
    pub mem_available_bytes: Option<u64>,
}

impl MemInfo {
    /// Parse `/proc/meminfo` text (`Key:   value kB` per line; the caller reads the file).
    /// Unknown keys are ignored; values are in kB (1024 bytes) as the kernel prints them.
    ///
    /// # Errors
    /// [`CapacityError::MemInfo`] with the line when a `MemTotal`/`MemFree`/`MemAvailable`
    /// value is not a number or has a unit other than `kB`, and (line 0) when `MemTotal` or
    /// `MemFree` is missing.
    pub fn parse(text: &str) -> Result<MemInfo, CapacityError> {
        let (mut total, mut free, mut avail) = (None, None, None);
        for (i, line) in text.lines().enumerate() {
            let Some((key, rest)) = line.split_once(':') else {
                continue;
            };
            let slot = match key.trim() {
                "MemTotal" => &mut total,
                "MemFree" => &mut free,
                "MemAvailable" => &mut avail,
                _ => continue,
            };
            let mut parts = rest.split_whitespace();
            let value = parts
                .next()
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or_else(|| CapacityError::MemInfo {
                    line: i + 1,
                    problem: format!("{} is not a number: {:?}", key.trim(), rest.trim()),
                })?;
            let mult = match parts.next() {
                Some("kB") => 1024,
                None => 1,
                Some(u) => {
                    return Err(CapacityError::MemInfo {
                        line: i + 1,
                        problem: format!("unexpected unit {u:?}"),
                    });
                }
            };
            *slot = Some(value * mult);
        }
        let missing = |k: &str| CapacityError::MemInfo {
            line: 0,
            problem: format!("{k} missing"),
        };
        Ok(MemInfo {
            mem_total_bytes: total.ok_or_else(|| missing("MemTotal"))?,
            mem_free_bytes: free.ok_or_else(|| missing("MemFree"))?,
            mem_available_bytes: avail,
        })
    }

    /// `MemAvailable`, or `MemFree` on kernels without it, bytes.
    pub fn available_bytes(&self) -> u64 {
        self.mem_available_bytes.unwrap_or(self.mem_free_bytes)
    }
}

/// How the host pool is sized (server args `hicache_size`, `hicache_ratio`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HiCacheSizing {
    /// `--hicache-size` in GB (decimal, 10^9 bytes) **per rank**.
    SizeGb(f64),
    /// `--hicache-ratio`: host tokens = device pool tokens × ratio (default 2.0).
    Ratio(f64),
}

impl HiCacheSizing {
    /// As SGLang decides: `hicache_size > 0` wins, else the ratio.
    pub fn from_server_args(hicache_size_gb: f64, hicache_ratio: f64) -> HiCacheSizing {
        if hicache_size_gb > 0.0 {
            HiCacheSizing::SizeGb(hicache_size_gb)
        } else {
            HiCacheSizing::Ratio(hicache_ratio)
        }
    }
}

/// Inputs of the HiCache check.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct HiCacheInput {
    /// Host pool sizing.
    pub sizing: HiCacheSizing,
    /// Device pool per rank, tokens (`max_total_num_tokens`).
    pub device_pool_tokens: u64,
    /// Host bytes per token per rank: the same formula as the device cell
    /// ([`crate::cell_size_bytes`]) for the host dtype.
    pub host_bytes_per_token: u64,
    /// SGLang ranks (processes) on this host, each allocating its own host pool (e.g. TP8 → 8).
    pub ranks_on_host: u32,
    /// `page_size` (tokens); the host pool is rounded down to a multiple of it.
    pub page_size: u32,
    /// Share of prompt tokens served from the prefix cache now
    /// (`Σ #cached-token / Σ (#new-token + #cached-token)` over Prefill lines), 0–1.
    pub cached_token_share: Option<f64>,
    /// Host memory, from `/proc/meminfo` on the server host.
    pub meminfo: Option<MemInfo>,
}

/// Whether prompts share enough prefixes for a bigger prefix cache to matter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PrefixReuse {
    /// Cached-token share below [`MIN_USEFUL_CACHED_SHARE`]: prompts share almost nothing, a
    /// larger prefix cache has little to keep.
    Low,
    /// Prompts share prefixes: HiCache keeps prefixes evicted from the GPU in host RAM and can
    /// raise hits when the prefix working set outgrows the GPU pool.
    Useful,
    /// No cached-token share given.
    Unknown,
}

/// Cached-token share (0–1) from which a larger prefix cache is worth considering. 10 %: below
/// it, even doubling the hit rate saves under a tenth of prefill work.
pub const MIN_USEFUL_CACHED_SHARE: f64 = 0.10;

/// Host RAM SGLang leaves to the OS when checking the host pool, bytes (10 GiB;
/// `mem_cache/memory_pool_host.py`: "Not enough host memory available").
pub const HOST_RESERVE_BYTES: u64 = 10 * (1 << 30);

/// The HiCache verdict with its numbers.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct HiCacheVerdict {
    /// Host pool per rank, tokens.
    pub host_tokens_per_rank: u64,
    /// Host pool per rank, bytes (pinned RAM).
    pub host_bytes_per_rank: u64,
    /// Host pool over all ranks on the host, bytes.
    pub host_bytes_all_ranks: u64,
    /// `MemAvailable − 10 GiB`, bytes, when host memory is known.
    pub host_limit_bytes: Option<u64>,
    /// Whether all ranks' pools fit under that limit; `None` when host memory is unknown.
    pub fits_host_ram: Option<bool>,
    /// Host tokens / device tokens per rank.
    pub host_to_device_ratio: f64,
    /// The host pool is smaller than the device pool (v0.4.x refuses to start; main warns).
    pub smaller_than_device_pool: bool,
    /// Always false: HiCache extends the prefix cache behind the radix tree; running requests'
    /// KV stays in the device pool, whose size (`max_total_num_tokens`) HiCache does not change.
    pub raises_decode_concurrency: bool,
    /// Decode pool per rank with HiCache on, tokens (= the device pool).
    pub decode_pool_tokens: u64,
    /// Prefix reuse judged from the cached-token share.
    pub prefix_reuse: PrefixReuse,
    /// One sentence per finding, for reports.
    pub summary: Vec<String>,
}

/// Size the HiCache host pool and say what it buys (spec §5.5; SGLang
/// `mem_cache/memory_pool_host.py`, `managers/cache_controller.py`).
///
/// `host_tokens = floor(hicache_size × 10^9 / host_bytes_per_token)` with `hicache_size`, else
/// `device_pool_tokens × hicache_ratio`; rounded down to `page_size`. Each rank allocates its
/// own pool, so the host needs `ranks_on_host ×` that, and SGLang wants it under
/// `MemAvailable − 10 GiB`.
///
/// # Errors
/// [`CapacityError::Invalid`] for zero bytes per token, zero ranks, a zero page size, a
/// negative size/ratio, or a cached share outside 0–1.
pub fn hicache_verdict(input: &HiCacheInput) -> Result<HiCacheVerdict, CapacityError> {
    if input.host_bytes_per_token == 0 || input.ranks_on_host == 0 || input.page_size == 0 {
        return Err(CapacityError::Invalid(
            "host bytes per token, ranks on host and page size must be ≥ 1".into(),
        ));
    }
    let raw = match input.sizing {
        HiCacheSizing::SizeGb(gb) if gb.is_finite() && gb > 0.0 => {
            (gb * 1e9 / input.host_bytes_per_token as f64).floor()
        }
        HiCacheSizing::Ratio(r) if r.is_finite() && r > 0.0 => {
            (input.device_pool_tokens as f64 * r).floor()
        }
        other => {
            return Err(CapacityError::Invalid(format!(
                "HiCache sizing must be > 0: {other:?}"
            )));
        }
    };
    if let Some(s) = input.cached_token_share
        && !(0.0..=1.0).contains(&s)
    {
        return Err(CapacityError::Invalid(format!(
            "cached token share must be in 0–1, got {s}"
        )));
    }
    let page = u64::from(input.page_size);
    let host_tokens_per_rank = (raw as u64) / page * page;
    let host_bytes_per_rank = host_tokens_per_rank.saturating_mul(input.host_bytes_per_token);
    let host_bytes_all_ranks = host_bytes_per_rank.saturating_mul(u64::from(input.ranks_on_host));
    let host_limit_bytes = input
        .meminfo
        .map(|m| m.available_bytes().saturating_sub(HOST_RESERVE_BYTES));
    let fits_host_ram = host_limit_bytes.map(|lim| host_bytes_all_ranks <= lim);
    let host_to_device_ratio = if input.device_pool_tokens > 0 {
        host_tokens_per_rank as f64 / input.device_pool_tokens as f64
    } else {
        0.0
    };
    let smaller_than_device_pool = host_tokens_per_rank < input.device_pool_tokens;
    let prefix_reuse = match input.cached_token_share {
        None => PrefixReuse::Unknown,
        Some(s) if s < MIN_USEFUL_CACHED_SHARE => PrefixReuse::Low,
        Some(_) => PrefixReuse::Useful,
    };
    let mut summary = vec![format!(
        "host pool {host_tokens_per_rank} tokens per rank ({:.2} GiB), {:.2} GiB for {} ranks",
        host_bytes_per_rank as f64 / GIB,
        host_bytes_all_ranks as f64 / GIB,
        input.ranks_on_host
    )];
    match (fits_host_ram, host_limit_bytes) {
        (Some(true), Some(l)) => summary.push(format!(
            "fits in host RAM (limit {:.2} GiB = available − 10 GiB)",
            l as f64 / GIB
        )),
        (Some(false), Some(l)) => summary.push(format!(
            "does NOT fit in host RAM: needs {:.2} GiB, limit {:.2} GiB (available − 10 GiB)",
            host_bytes_all_ranks as f64 / GIB,
            l as f64 / GIB
        )),
        _ => summary.push("host RAM unknown: fit not checked".into()),
    }
    if smaller_than_device_pool {
        summary.push("host pool is smaller than the device pool: v0.4.x refuses to start, later versions warn".into());
    }
    summary.push(format!(
        "decode concurrency unchanged: running requests still fit in the {}-token device pool",
        input.device_pool_tokens
    ));
    summary.push(match prefix_reuse {
        PrefixReuse::Low => format!(
            "prompts share little ({:.1} % of prompt tokens cached): a bigger prefix cache has little to keep",
            input.cached_token_share.unwrap_or(0.0) * 100.0
        ),
        PrefixReuse::Useful => format!(
            "prompts share prefixes ({:.1} % cached): HiCache can raise hits once shared prefixes are evicted from the GPU",
            input.cached_token_share.unwrap_or(0.0) * 100.0
        ),
        PrefixReuse::Unknown => "prefix reuse unknown: give the cached-token share".into(),
    });
    Ok(HiCacheVerdict {
        host_tokens_per_rank,
        host_bytes_per_rank,
        host_bytes_all_ranks,
        host_limit_bytes,
        fits_host_ram,
        host_to_device_ratio,
        smaller_than_device_pool,
        raises_decode_concurrency: false,
        decode_pool_tokens: input.device_pool_tokens,
        prefix_reuse,
        summary,
    })
}
