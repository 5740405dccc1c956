//! What-if table: pool size, memory and concurrency under candidate changes.

use serde::Serialize;

use crate::{
    AttentionKind, CellSize, FeasibilityCheck, GIB, Headroom, InFlightLoad, KvDtype, ModelConfig,
    ParallelConfig, PoolModel, cell_size_bytes, check_feasibility,
};

/// Everything [`what_if`] needs, all per rank (per DP group for the pool).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CapacityInput {
    /// Model geometry.
    pub model: Option<ModelConfig>,
    /// Current parallel layout.
    pub parallel: ParallelConfig,
    /// Current `kv_cache_dtype`.
    pub kv_dtype: KvDtype,
    /// Current `mem_fraction_static`.
    pub mem_fraction_static: f64,
    /// Pool model (calibrated on the running server, or from memory figures).
    pub pool: PoolModel,
    /// Room on the GPU for more memory (free memory, where measured, the activation reserve
    /// and margin). `None` = unknown: rows get no feasibility verdict.
    pub headroom: Option<Headroom>,
    /// Observed request lengths, for the concurrency column. `None` leaves it empty.
    pub load: Option<InFlightLoad>,
    /// GPUs on the host, to say whether a larger TP fits on one node. `None` = unknown.
    pub gpus_on_host: Option<u32>,
    /// `--max-total-tokens` (tokens), when set: SGLang takes the smaller of it and what memory
    /// holds (`model_runner.py` `init_memory_pool`), so no row's pool grows past it.
    pub max_total_tokens: Option<u64>,
}

/// What a row changes relative to now.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change {
    /// The current configuration.
    Current,
    /// `mem_fraction_static` set to `to`.
    Fraction {
        /// New fraction.
        to: f64,
    },
    /// `kv_cache_dtype` set to `to` at the current fraction.
    KvDtype {
        /// New KV dtype.
        to: KvDtype,
    },
    /// `tp_size` set to `to` at the current fraction (needs that many GPUs per replica).
    TpSize {
        /// New TP size.
        to: u32,
    },
}

/// One row of the what-if table.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct WhatIfRow {
    /// Human label, e.g. `mem_fraction_static 0.88`.
    pub label: String,
    /// The change.
    pub change: Change,
    /// `mem_fraction_static` in this row.
    pub mem_fraction_static: f64,
    /// Bytes per token slot per rank in this row.
    pub cell_bytes: u64,
    /// Projected `max_total_num_tokens`, tokens.
    pub pool_tokens: u64,
    /// Change of `pool_tokens` versus now, percent.
    pub change_pct: f64,
    /// Extra GPU memory per GPU the row takes versus now, GiB (negative = frees memory).
    pub extra_gib_per_gpu: f64,
    /// Feasibility against the run-time free memory; `None` when that is unknown.
    pub feasibility: Option<FeasibilityCheck>,
    /// Requests that can decode at once: `pool_tokens / H` (see [`InFlightLoad`]); `None` without
    /// observed lengths.
    pub decode_concurrency: Option<f64>,
    /// Caveat specific to the row.
    pub note: Option<String>,
}

/// The what-if table with the assumptions behind it.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct WhatIfTable {
    /// Pool tokens now (per rank / DP group).
    pub current_tokens: u64,
    /// Cell of the current configuration computed from the model, when it can be.
    pub cell: Option<CellSize>,
    /// Tokens added per +0.01 of `mem_fraction_static` (`0.01 × pre / cell`).
    pub tokens_per_hundredth: f64,
    /// Rows: fractions 0.80–0.95 in 0.01 steps (plus the current one), then fp8 KV, then 2× TP.
    pub rows: Vec<WhatIfRow>,
    /// Estimates and simplifications the numbers rest on.
    pub assumptions: Vec<String>,
    /// Rows not produced, and why.
    pub skipped: Vec<String>,
}

const SAME: f64 = 1e-9;

/// `0.8` → `0.80`, `0.855` → `0.855`: two decimals, three when needed.
fn fmt_fraction(f: f64) -> String {
    let three = format!("{f:.3}");
    match three.strip_suffix('0') {
        Some(two) => two.to_string(),
        None => three,
    }
}

/// Build the what-if table (see [`WhatIfTable`] for the rows).
///
/// Per row: fractions use [`PoolModel::tokens_at`] and take `(f − f_now) × pre` more memory;
/// fp8 KV keeps the byte budget and halves a 16-bit cell (no extra memory); 2× TP halves the
/// memory taken since `pre` (weights, an **estimate**: it assumes all of it is sharded) and
/// divides KV heads by the larger attention-TP size (MLA cells are not split), with the same
/// per-GPU total, so no extra memory per GPU but twice the GPUs.
/// Infallible: a row that cannot be computed is listed in `skipped` with the reason.
pub fn what_if(input: &CapacityInput) -> WhatIfTable {
    let pool = &input.pool;
    let f_now = input.mem_fraction_static;
    let mut assumptions = Vec::new();
    let mut skipped = Vec::new();
    let current_tokens = match pool.tokens_at(f_now) {
        Ok(t) => t,
        Err(e) => {
            skipped.push(format!("all rows: {e}"));
            return WhatIfTable {
                current_tokens: 0,
                cell: None,
                tokens_per_hundredth: pool.tokens_per_hundredth(),
                rows: Vec::new(),
                assumptions,
                skipped,
            };
        }
    };
    let model_cell = match &input.model {
        Some(m) => cell_size_bytes(m, &input.parallel, input.kv_dtype),
        None => {
            assumptions.push(format!(
                "no model config: the cell is the log's KV allocation, {} B per token per GPU; no TP row",
                pool.cell_bytes
            ));
            Err(crate::CapacityError::Json("no model config".into()))
        }
    };
    let cell = match model_cell {
        Ok(c) => {
            if c.bytes != pool.cell_bytes {
                assumptions.push(format!(
                    "the pool model uses a cell of {} B but the model config gives {} B; rows use the pool's",
                    pool.cell_bytes, c.bytes
                ));
            }
            Some(c)
        }
        Err(e) => {
            if input.model.is_some() {
                skipped.push(format!("model cell: {e}"));
            }
            None
        }
    };
    match pool.pre_source {
        crate::PreSource::GpuTotal => assumptions.push(format!(
            "pre = GPU total memory ({:.2} GiB), an estimate: SGLang measures free memory after the CUDA context, a little less",
            pool.pre_gib()
        )),
        crate::PreSource::LogLoadWeightLine => assumptions.push(format!(
            "pre = avail mem + mem usage of the Load weight line ({:.2} GiB, each rounded to 0.01 GiB)",
            pool.pre_gib()
        )),
        crate::PreSource::Given => {}
    }
    if let crate::PoolBasis::Calibrated { fraction, tokens } = pool.basis {
        assumptions.push(format!(
            "calibrated on the observed pool: {tokens} tokens at mem_fraction_static {fraction}; each +0.01 adds 0.01 × pre / cell = {:.0} tokens",
            pool.tokens_per_hundredth()
        ));
    }
    let cap = input.max_total_tokens.filter(|&c| c > 0);
    if let Some(c) = cap {
        assumptions.push(format!(
            "--max-total-tokens {c} caps the pool in every row (SGLang takes the smaller of it and what memory holds)"
        ));
    }
    assumptions
        .push("not modelled: page-size rounding, EAGLE draft pools, multimodal reservation".into());
    match input.load.map(|l| (l.method, l.mean_held_tokens)) {
        Some((crate::LoadMethod::LogObserved, h)) => assumptions.push(format!(
            "decode concurrency = pool tokens / H with H = {h:.0} KV tokens held per running request on the log's steady decode lines: a larger pool is filled as today's is (same lengths, same admission reserve)"
        )),
        Some(_) => assumptions.push(
            "decode concurrency = pool tokens / H with H = E[C·(P + C/2)] / E[C] (time-averaged tokens held per in-flight request); the admission reserve (new_token_ratio) lowers it in practice".into(),
        ),
        None => {}
    }
    if let Some(h) = input.headroom {
        assumptions.push(match h.source {
            crate::FreeSource::UnderLoad => format!(
                "feasibility from {:.2} GiB free under load (a GPU snapshot while requests run: the activation peak is already in use): a change likely fits when {:.1} GiB stay free after it, is uncertain down to {:.1} GiB, and likely runs out of memory below; today's configuration and changes that take no more memory fit",
                h.free_bytes / GIB,
                h.fits_at_bytes / GIB,
                h.oom_below_bytes / GIB
            ),
            crate::FreeSource::AfterStartup => format!(
                "feasibility from {:.2} GiB free after start-up (available_gpu_mem), less what a change adds to the pool: a change likely fits when it leaves {:.2} GiB (what runs with this prefill chunk were seen to serve with), is uncertain down to {:.1} GiB and likely runs out of memory below (where runs were seen to fail; the evidence: kv_capacity's feasibility doc); today's configuration and changes that take no more memory fit",
                h.free_bytes / GIB,
                h.fits_at_bytes / GIB,
                h.oom_below_bytes / GIB
            ),
        });
    }

    let row = |label: String,
               change: Change,
               fraction: f64,
               cell_bytes: u64,
               tokens: u64,
               extra_bytes: f64,
               note: Option<String>| {
        // past the cap the pool is allocated at the cap: the rest of the fraction stays free
        let (tokens, extra_bytes, note) = match cap {
            Some(c) if tokens > c => (
                c,
                c as f64 * cell_bytes as f64 - current_tokens as f64 * pool.cell_bytes as f64,
                Some(format!(
                    "capped by --max-total-tokens {c}: the pool does not grow past it"
                )),
            ),
            _ => (tokens, extra_bytes, note),
        };
        let change_pct = if current_tokens > 0 {
            (tokens as f64 - current_tokens as f64) / current_tokens as f64 * 100.0
        } else {
            0.0
        };
        WhatIfRow {
            label,
            change,
            mem_fraction_static: fraction,
            cell_bytes,
            pool_tokens: tokens,
            change_pct,
            extra_gib_per_gpu: extra_bytes / GIB,
            feasibility: input.headroom.map(|h| check_feasibility(&h, extra_bytes)),
            decode_concurrency: input.load.map(|l| l.concurrency(tokens)),
            note,
        }
    };

    // 1. mem_fraction_static grid (hundredths, so 0.88 is exactly 88/100)
    // From 0.05 below today's fraction (at most 0.80) to 0.95: every step up from today shows.
    let low = ((f_now * 100.0).floor() as i64 - 5).clamp(1, 80) as u32;
    let mut fractions: Vec<f64> = (low..=95).map(|k| f64::from(k) / 100.0).collect();
    if !fractions.iter().any(|f| (f - f_now).abs() < SAME) {
        fractions.push(f_now);
        fractions.sort_by(f64::total_cmp);
    }
    let mut rows = Vec::new();
    for f in fractions {
        let is_now = (f - f_now).abs() < SAME;
        let f = if is_now { f_now } else { f };
        match pool.tokens_at(f) {
            Ok(tokens) => {
                let (label, change) = if is_now {
                    (
                        format!("now: mem_fraction_static {}", fmt_fraction(f)),
                        Change::Current,
                    )
                } else {
                    (
                        format!("mem_fraction_static {}", fmt_fraction(f)),
                        Change::Fraction { to: f },
                    )
                };
                let note = (tokens == 0)
                    .then(|| "SGLang would not start: no memory left for the KV pool".to_string());
                rows.push(row(
                    label,
                    change,
                    f,
                    pool.cell_bytes,
                    tokens,
                    pool.extra_bytes(f_now, f),
                    note,
                ));
            }
            Err(e) => skipped.push(format!("mem_fraction_static {f}: {e}")),
        }
    }

    // 2. fp8 KV at the current fraction
    let already_8bit = matches!(
        input.kv_dtype,
        KvDtype::Fp8E4m3 | KvDtype::Fp8E5m2 | KvDtype::Fp4 | KvDtype::Mxfp8
    );
    if already_8bit {
        skipped.push(format!(
            "fp8 KV: the KV cache is already {:?}",
            input.kv_dtype
        ));
    } else {
        // Without a model config, a 16-bit cell halves (the log's dtype is bf16 or fp16).
        let c8 = match &input.model {
            Some(m) => cell_size_bytes(m, &input.parallel, KvDtype::Fp8E4m3).map(|c| c.bytes),
            None => Ok(pool.cell_bytes / 2),
        };
        match c8 {
            Ok(c8_bytes) => match pool.tokens_with_cell(f_now, c8_bytes) {
                Ok(tokens) => rows.push(row(
                    format!("kv_cache_dtype fp8_e4m3 at mem_fraction_static {}", fmt_fraction(f_now)),
                    Change::KvDtype { to: KvDtype::Fp8E4m3 },
                    f_now,
                    c8_bytes,
                    tokens,
                    0.0,
                    Some("same memory, 1-byte KV values: check accuracy and that the attention backend supports fp8 KV for this model".into()),
                )),
                Err(e) => skipped.push(format!("fp8 KV: {e}")),
            },
            Err(e) => skipped.push(format!("fp8 KV: {e}")),
        }
    }

    // 3. twice the TP size
    let new_tp = input.parallel.tp_size.saturating_mul(2);
    if let Some(model) = &input.model
        && !model.num_attention_heads.is_multiple_of(new_tp)
    {
        skipped.push(format!(
            "tp_size {new_tp}: {} attention heads do not split evenly",
            model.num_attention_heads
        ));
    } else if let Some(model) = &input.model {
        let new_parallel = ParallelConfig {
            tp_size: new_tp,
            attn_tp_size: input.parallel.attn_tp_size.map(|a| a.saturating_mul(2)),
            pp_size: input.parallel.pp_size,
        };
        match cell_size_bytes(model, &new_parallel, input.kv_dtype) {
            Ok(c2) => {
                let used = pool.used_since_pre_bytes();
                let kv = f_now * pool.pre_bytes - used / 2.0;
                let tokens = if kv > 0.0 {
                    (kv / c2.bytes as f64).floor() as u64
                } else {
                    0
                };
                let gpus = u64::from(new_tp) * u64::from(input.parallel.pp_size);
                let mut note = format!(
                    "needs {gpus} GPUs per replica; weights per GPU halve (estimate: {:.2} → {:.2} GiB taken since pre)",
                    used / GIB,
                    used / 2.0 / GIB
                );
                if let Some(h) = input.gpus_on_host
                    && u64::from(h) < gpus
                {
                    note.push_str(&format!("; the host has {h} GPUs, so this spans nodes"));
                }
                if model.attention_kind() == AttentionKind::Mla {
                    note.push_str("; MLA: the KV cell is not split by TP, the gain comes only from the freed weight memory");
                } else if c2.kv_heads_replicated {
                    note.push_str("; fewer KV heads than ranks: heads are replicated, the cell does not shrink further");
                }
                rows.push(row(
                    format!(
                        "tp_size {new_tp} at mem_fraction_static {} ({new_tp} GPUs per replica)",
                        fmt_fraction(f_now)
                    ),
                    Change::TpSize { to: new_tp },
                    f_now,
                    c2.bytes,
                    tokens,
                    0.0,
                    Some(note),
                ));
            }
            Err(e) => skipped.push(format!("tp_size {new_tp}: {e}")),
        }
    }

    WhatIfTable {
        current_tokens,
        cell,
        tokens_per_hundredth: pool.tokens_per_hundredth(),
        rows,
        assumptions,
        skipped,
    }
}

impl WhatIfTable {
    /// The row whose change is exactly this `mem_fraction_static` (or the current row when it
    /// equals the current fraction).
    pub fn fraction_row(&self, fraction: f64) -> Option<&WhatIfRow> {
        self.rows.iter().find(|r| {
            matches!(r.change, Change::Fraction { .. } | Change::Current)
                && (r.mem_fraction_static - fraction).abs() < SAME
        })
    }

    /// The first row with this kind of change (fp8 / TP), if produced.
    pub fn row_where(&self, pred: impl Fn(&Change) -> bool) -> Option<&WhatIfRow> {
        self.rows.iter().find(|r| pred(&r.change))
    }
}
