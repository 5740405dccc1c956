//! Decode step time as a function of the batch, and the throughput it projects for each
//! what-if row.
//!
//! Step time per decode step is read from each Decode line as `running × accept_len / gen
//! throughput` (each running request gains `accept_len` tokens per step, 1 without speculative
//! decoding), then fitted as `step_s = a + b × running + c × kv_tokens` by least squares
//! (`throughput_stats::least_squares_2`). SGLang's logged throughput counts wall time, prefill
//! passes included (spec §2.1.2), so the fit describes the mix as it ran.
//!
//! One graph mode per fit: when the lines print `cuda graph` and both modes occur, only the
//! lines that ran as a CUDA graph are fitted. An eager step (a batch mixed with a prefill, or
//! above the captured sizes) costs several times a graph step at the same batch, so a fit
//! across both reads the mode change as a cost of the batch size (`cuda_graph_runner.py`
//! `can_run`; real-4/121: 549 tok/s on a graph line, 62-127 on eager ones at 24 running).

use crate::evidence::DecodeSample;
use crate::report::{CapacityModel, NoCeiling, Projection, ProjectionRow};
use crate::thresholds as th;

/// Fit decode step time and project throughput for the what-if rows (none without a
/// capacity model). `running_cap`: `max_running_requests` (per DP rank), which bounds the
/// ceiling: no more requests than that decode at once, whatever the KV pool holds. `None`
/// when the fit fails (too few lines, a batch that never varies).
pub fn projection(
    decode: &[DecodeSample],
    cap: Option<&CapacityModel>,
    running_cap: Option<u64>,
    running_cap_assumed: bool,
) -> Option<Projection> {
    let mixed_modes = decode.iter().any(|d| d.graph == Some(true))
        && decode.iter().any(|d| d.graph == Some(false));
    let rows: Vec<(f64, f64, f64)> = decode
        .iter()
        .filter(|d| !mixed_modes || d.graph == Some(true))
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
    // the scheduler runs at most `running_cap` at once: the ceiling is the fit's rate there
    // when that is below its limit
    let mut no_ceiling = no_ceiling;
    let mut ceiling_at_running = None;
    let mut ceiling = no_ceiling.is_none().then(|| 1.0 / per_request);
    if let (Some(limit), Some(k)) = (ceiling, running_cap.filter(|&k| k > 0)) {
        let at_cap = tps(k as f64);
        if at_cap.is_finite() && at_cap < th::CEILING_CAP_SHARE * limit {
            if at_cap > current {
                ceiling = Some(at_cap);
                ceiling_at_running = Some(k as f64);
            } else {
                ceiling = None;
                no_ceiling = Some(NoCeiling::NotAboveCurrent);
            }
        }
    }
    Some(Projection {
        ceiling_tok_per_s: ceiling,
        ceiling_at_running,
        running_cap_assumed: running_cap_assumed && ceiling_at_running.is_some(),
        measured_scale: None,
        kv_tokens_per_request: held,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{edit, whole, with_input};

    const CAP24: &str =
        "real-4/121-npu-2node-qwen3-480b-dp-attn-chunk256-prefill-bound-cap24-graph-off.log";

    /// (decode lines, of them with `cuda graph: True`) of the first scheduler of `text`, and
    /// the lines its fit used (`None`: no fit).
    fn fitted(text: &str) -> (usize, usize, Option<usize>) {
        let mut out = (0, 0, None);
        with_input(text, |i| {
            let d = i.views[0].tl.decode.samples();
            out = (
                d.len(),
                d.iter().filter(|s| s.graph == Some(true)).count(),
                projection(d, None, None, false).map(|p| p.n),
            );
        });
        out
    }

    #[test]
    fn only_graph_steps_are_fitted_when_both_modes_ran() {
        // 121, DP0: 6 decode lines, 2 of them `npu graph: True`: a fit over 2 points fails
        // rather than read the eager steps' cost as the batch's.
        let (lines, graph, n) = fitted(&whole(CAP24));
        assert_eq!((lines, graph), (6, 2));
        assert_eq!(n, None);
    }

    #[test]
    fn one_mode_is_fitted_whole() {
        // every line in graph mode, or none: every line is fitted
        for (from, to) in [
            ("npu graph: False", "npu graph: True"),
            ("npu graph: True", "npu graph: False"),
        ] {
            let text = edit(&whole(CAP24), from, to);
            let (lines, graph, n) = fitted(&text);
            assert!(graph == 0 || graph == lines, "{to}");
            assert_eq!(n, Some(lines), "{to}");
        }
    }

    /// real-4/100: DFLASH on a GB10 at 1-4 running, max_running_requests reset to 48 (line
    /// 4): the ceiling is the fit's rate at 48, below its limit; without the cap, the limit; at
    /// a cap of 2 (below the batches run) no ceiling above today's rate.
    #[test]
    fn the_running_cap_bounds_the_ceiling() {
        let log = "real-4/100-dgxspark-gb10-laguna-swa-dflash-c1-c4-client-bound.log";
        with_input(&whole(log), |i| {
            let d = &i.views[0].steady_decode;
            let free = projection(d, None, None, false).expect("fit");
            let limit = free.ceiling_tok_per_s.expect("limit");
            assert_eq!(free.ceiling_at_running, None);
            let capped = projection(d, None, Some(48), false).expect("fit");
            let at48 = capped.ceiling_tok_per_s.expect("at 48");
            assert_eq!(capped.ceiling_at_running, Some(48.0));
            assert!(
                at48 < limit && at48 > capped.current_tok_per_s,
                "{at48} {limit}"
            );
            // a cap far above the batch changes nothing the fit can see
            let loose = projection(d, None, Some(1_000_000), false).expect("fit");
            assert_eq!(loose.ceiling_at_running, None);
            let tight = projection(d, None, Some(1), false).expect("fit");
            assert_eq!(tight.ceiling_tok_per_s, None);
            assert_eq!(tight.no_ceiling, Some(NoCeiling::NotAboveCurrent));
        });
    }

    #[test]
    fn lines_without_the_flag_are_fitted_whole() {
        // a v0.2 log prints no graph field: all its 10 decode lines are fitted
        let (lines, graph, n) = fitted(&whole("real/047-i1270-v0.2-time-only-timestamp.log"));
        assert_eq!((lines, graph), (10, 0));
        assert_eq!(n, Some(10));
    }
}
