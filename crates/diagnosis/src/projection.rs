//! Decode step time as a function of the batch, and the throughput it projects for each
//! what-if row.
//!
//! Step time per decode step is read from each Decode line as `running × accept_len / gen
//! throughput` (each running request gains `accept_len` tokens per step, 1 without speculative
//! decoding), then fitted as `step_s = a + b × running + c × kv_tokens` by least squares
//! (`throughput_stats::least_squares_2`). SGLang's logged throughput counts wall time, prefill
//! passes included (spec §2.1.2), so the fit describes the mix as it ran.

use crate::evidence::DecodeSample;
use crate::report::{CapacityModel, NoCeiling, Projection, ProjectionRow};
use crate::thresholds as th;

/// Fit decode step time and project throughput for the what-if rows (none without a
/// capacity model). `None` when the fit fails (too few lines, a batch that never varies).
pub fn projection(decode: &[DecodeSample], cap: Option<&CapacityModel>) -> Option<Projection> {
    let rows: Vec<(f64, f64, f64)> = decode
        .iter()
        .filter_map(|d| {
            let r = d.running? as f64;
            let g = d.gen_tps?;
            let k = d.tokens? as f64;
            (r > 0.0 && g > 0.0).then(|| (r, k, r * d.accept_len.unwrap_or(1.0) / g))
        })
        .collect();
    let fit = throughput_stats::least_squares_2(&rows)?;
    let rmin = rows.iter().map(|r| r.0).fold(f64::INFINITY, f64::min);
    let rmax = rows.iter().map(|r| r.0).fold(f64::NEG_INFINITY, f64::max);
    let rmean = rows.iter().map(|r| r.0).sum::<f64>() / rows.len() as f64;
    let kmean = rows.iter().map(|r| r.1).sum::<f64>() / rows.len() as f64;
    let held = kmean / rmean;
    let tps = |n: f64| -> f64 {
        let step = fit.a + fit.b * n + fit.c * n * held;
        if step > 0.0 { n / step } else { f64::NAN }
    };
    let current = tps(rmean);
    let mut out = Vec::new();
    for row in cap.map(|c| c.what_if.rows.as_slice()).unwrap_or_default() {
        let Some(n) = row.decode_concurrency else {
            continue;
        };
        let t = tps(n);
        if !t.is_finite() {
            continue;
        }
        out.push(ProjectionRow {
            label: row.label.clone(),
            change: row.change,
            concurrency: n,
            tok_per_s: t,
            gain_pct: (t / current - 1.0) * 100.0,
            extrapolated: n > rmax * (1.0 + th::EXTRAPOLATION_MARGIN)
                || n < rmin * (1.0 - th::EXTRAPOLATION_MARGIN),
            feasibility: row.feasibility.as_ref().map(|f| f.verdict),
        });
    }
    let per_request = fit.b + fit.c * held;
    // A ceiling only from a fit that describes the lines: a positive fixed step time (a
    // negative one is no step time), most of the variance explained, batches of several sizes,
    // and an asymptote above the rate the fit gives now.
    let no_ceiling = if per_request <= 0.0 {
        Some(NoCeiling::NoLimit)
    } else if fit.a <= 0.0 {
        Some(NoCeiling::NegativeFixedStep)
    } else if fit.r2 < th::MIN_CEILING_FIT_R2 {
        Some(NoCeiling::PoorFit { r2: fit.r2 })
    } else if rmax < rmin * th::MIN_CEILING_RUNNING_SPREAD {
        Some(NoCeiling::NarrowBatchSizes {
            low: rmin,
            high: rmax,
        })
    } else if 1.0 / per_request <= current {
        Some(NoCeiling::NotAboveCurrent)
    } else {
        None
    };
    let ceiling = no_ceiling.is_none().then(|| 1.0 / per_request);
    Some(Projection {
        ceiling_tok_per_s: ceiling,
        no_ceiling,
        observed_mean_running: rmean,
        formula: "step_s = a + b × running + c × kv_tokens; tok/s = running / step_s, with kv_tokens = running × (observed KV tokens per running request)".into(),
        a: fit.a,
        b: fit.b,
        c: fit.c,
        r2: fit.r2,
        n: fit.n,
        running_range: (rmin, rmax),
        current_tok_per_s: current,
        rows: out,
    })
}
