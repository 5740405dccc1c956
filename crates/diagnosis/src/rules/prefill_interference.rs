//! # `prefill_interference`: prefill passes cost decode throughput
//!
//! **What it detects.** On the first scheduler where it exceeds
//! [`th::PREFILL_INTERFERENCE_MIN_LOSS`]: decode throughput lost while prefills run. SGLang's
//! gen throughput of a decode line covers the wall time since the previous decode line, prefill
//! passes included, so intervals that held a prefill read lower. Loss = 1 − (time-weighted mean
//! over all decode intervals) / (mean over intervals without a prefill), over intervals
//! shorter than [`th::IDLE_GAP_S`], with at least [`th::MIN_INTERFERENCE_INTERVALS`] of each kind.
//! An interval whose prefill found nothing running (`#running-req: 0` on the prefill line: the
//! previous requests had finished, decode had stopped) is neither: no request decoded during
//! that prefill, and its window spans the wait for the next request; only a prefill that ran
//! while requests were decoding interferes.
//!
//! **Why it matters.** Each prefill pass stops decode (unless mixed chunks are enabled): long
//! prompts arriving steadily slow every running request.
//!
//! **Evidence it needs.** Timestamped decode and prefill lines of one scheduler, every one of
//! them (a timeline thinned to one line in `stride` does not say which decode intervals held
//! a prefill: such a scheduler is passed over).
//!
//! **What to change.** A smaller `--chunked-prefill-size` spreads long prompts thinner;
//! `--enable-mixed-chunk`; PD disaggregation removes the interference.
//!
//! **Source.** SGLang `scheduler.py` (`get_next_batch_to_run`: a prefill batch runs before
//! decode), `scheduler_metrics_mixin.py`; spec §2.1.2.

use crate::evidence::SchedulerKey;
use crate::narrative::words::{finding, with_levers};
use crate::report::{Confidence, Figure, Finding, FindingKind, Lever, SourceRange, Unit};
use crate::rules::{Input, Rule};
use crate::thresholds as th;

/// What the rule measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Facts {
    /// The scheduler.
    pub scheduler: SchedulerKey,
    /// Decode throughput lost (fraction).
    pub loss: f64,
    /// Share of decode wall time with a prefill in it (fraction).
    pub share_with_prefill: f64,
    /// Gen throughput over intervals without a prefill (tok/s).
    pub clean_tok_per_s: f64,
    /// Gen throughput over intervals with one (tok/s).
    pub mixed_tok_per_s: f64,
    /// The scheduler's largest prefill pass (`#new-token`, tokens): a chunk size helps only
    /// below it.
    pub largest_prefill_tokens: Option<u64>,
    /// The scheduler's batch lines.
    pub evidence: Option<SourceRange>,
    /// Whether `--enable-mixed-chunk` is a lever here.
    pub mixed_chunk: MixedChunk,
}

/// Whether `--enable-mixed-chunk` is a lever here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MixedChunk {
    /// Off, and could be turned on.
    Available,
    /// Already on (`enable_mixed_chunk=True` in the server arguments).
    AlreadyOn,
    /// Speculative decoding is on (a `speculative_algorithm` in the server arguments, or
    /// `accept len` on the decode lines), and SGLang turns mixed chunks off with it
    /// (`server_args.py`).
    OffWithSpeculative,
}

/// Whether `--enable-mixed-chunk` is a lever for `v` (see [`MixedChunk`]).
fn mixed_chunk(input: &Input<'_>, v: &crate::evidence::view::SchedulerView<'_>) -> MixedChunk {
    let arg = |k: &str| input.ev.startup.arg(k);
    if arg("enable_mixed_chunk").is_some_and(|x| x.eq_ignore_ascii_case("true")) {
        return MixedChunk::AlreadyOn;
    }
    let spec_arg = arg("speculative_algorithm")
        .is_some_and(|x| !x.is_empty() && !x.eq_ignore_ascii_case("none"));
    if spec_arg || v.tl.decode.samples().iter().any(|d| d.accept_len.is_some()) {
        return MixedChunk::OffWithSpeculative;
    }
    MixedChunk::Available
}

/// The rule.
pub fn check(input: &Input<'_>) -> Option<Facts> {
    input.views.iter().find_map(|v| {
        let decode = v.tl.every_decode_line()?;
        let (mut clean, mut mixed) = (Vec::new(), Vec::new());
        let mut prefill_since_last = false;
        let mut refill_since_last = false;
        let mut prev_t: Option<f64> = None;
        for o in &v.obs {
            match decode.get(&(o.source, o.line)) {
                Some(d) if d.t.is_some() => {
                    if let (Some(g), Some(t), Some(p)) = (d.gen_tps, d.t, prev_t) {
                        let dt = t - p;
                        if dt > 0.0 && dt < th::IDLE_GAP_S && !refill_since_last {
                            if prefill_since_last {
                                mixed.push((g, dt))
                            } else {
                                clean.push((g, dt))
                            }
                        }
                    }
                    prev_t = d.t;
                    prefill_since_last = false;
                    refill_since_last = false;
                }
                Some(_) => {}
                // a prefill that found nothing running stopped no decode: its interval holds
                // the wait for the next request instead
                None if o.running == Some(0) => refill_since_last = true,
                None => prefill_since_last = true,
            }
        }
        if clean.len() < th::MIN_INTERFERENCE_INTERVALS
            || mixed.len() < th::MIN_INTERFERENCE_INTERVALS
        {
            return None;
        }
        let all: Vec<(f64, f64)> = clean.iter().chain(mixed.iter()).copied().collect();
        let c = throughput_stats::weighted_mean(&clean).filter(|&c| c > 0.0)?;
        let m = throughput_stats::weighted_mean(&mixed)?;
        let t = throughput_stats::weighted_mean(&all)?;
        let loss = 1.0 - t / c;
        if loss < th::PREFILL_INTERFERENCE_MIN_LOSS {
            return None;
        }
        let wall = |x: &[(f64, f64)]| x.iter().map(|p| p.1).sum::<f64>();
        Some(Facts {
            scheduler: v.key,
            loss,
            share_with_prefill: wall(&mixed) / wall(&all),
            clean_tok_per_s: c,
            mixed_tok_per_s: m,
            largest_prefill_tokens: v.tl.agg.max_prefill_new_tokens,
            evidence: input.timeline_range(v.tl),
            mixed_chunk: mixed_chunk(input, v),
        })
    })
}

/// The DP size of DP attention when the log's server arguments turn it on
/// (`enable_dp_attention=True`, `dp_size` above 1).
fn dp_attention_size(input: &Input<'_>) -> Option<u32> {
    let args = &input.ev.startup.server_args;
    let on = args
        .get("enable_dp_attention")
        .is_some_and(|v| v == "True" || v == "true");
    let dp = args.get("dp_size").and_then(|v| v.parse::<u32>().ok())?;
    (on && dp > 1).then_some(dp)
}

/// The rule as [`super::FINDING_RULES`] runs it: [`check`], then the finding in its words.
#[derive(Clone, Copy, Debug)]
pub struct PrefillInterference;

impl Rule for PrefillInterference {
    const NAME: &'static str = "prefill_interference";
    type Facts = Facts;

    fn check(input: &Input<'_>) -> impl IntoIterator<Item = Facts> {
        check(input)
    }

    fn finding(f: &Facts, input: &Input<'_>) -> Finding {
        let cap = input.capacity;
        let mut figures = vec![
            Figure::new(
                "decode throughput lost to interleaved prefills",
                f.loss,
                Unit::Fraction,
            ),
            Figure::new(
                "share of decode wall time with a prefill in it",
                f.share_with_prefill,
                Unit::Fraction,
            ),
            Figure::new(
                "gen throughput without prefills",
                f.clean_tok_per_s,
                Unit::TokPerS,
            ),
            Figure::new(
                "gen throughput with prefills",
                f.mixed_tok_per_s,
                Unit::TokPerS,
            ),
        ];
        if let Some(cp) = cap.chunked_prefill_size {
            figures.push(Figure::new("chunked_prefill_size", cp as f64, Unit::Tokens));
        }
        let mixed_chunk = f.mixed_chunk;
        let f = finding(
            FindingKind::PrefillInterference,
            "Prefills interrupt decode",
            format!(
                "On {}, decode intervals that contain a prefill batch generate {:.0} tok/s against {:.0} tok/s without one; over the run that costs {:.0}% of decode throughput. \
                 {}",
                f.scheduler,
                f.mixed_tok_per_s,
                f.clean_tok_per_s,
                f.loss * 100.0,
                if cap.chunked_prefill_off {
                    // under DP attention SGLang divides the flag by dp_size (`server_args.py`
                    // `_handle_data_parallelism`): the value to pass is dp_size × a rank's chunk
                    let dp = dp_attention_size(input);
                    let per_rank = |chunk: u64| match dp {
                        Some(d) => format!(
                            "{} (with DP attention SGLang divides the flag by --dp-size {d}: {chunk} tokens a rank)",
                            chunk * u64::from(d)
                        ),
                        None => chunk.to_string(),
                    };
                    format!(
                        "Prefill passes stop decode while they run, and chunked prefill is off (chunked_prefill_size=-1): each prompt prefills whole in one pass. A --chunked-prefill-size {} spreads prefill over shorter passes{}; PD disaggregation removes the interference.",
                        match f.largest_prefill_tokens {
                            // a chunk splits only what is larger than it
                            Some(n) => format!(
                                "below the largest prefill pass here ({n} tokens; e.g. {})",
                                per_rank((n.next_power_of_two() / 4).clamp(256, 8192))
                            ),
                            None => format!("(e.g. {})", per_rank(8192)),
                        },
                        match mixed_chunk {
                            MixedChunk::Available => {
                                ", after which --enable-mixed-chunk can run them with decode"
                            }
                            MixedChunk::AlreadyOn =>
                                ", which --enable-mixed-chunk (on) then runs with decode",
                            MixedChunk::OffWithSpeculative => {
                                " (--enable-mixed-chunk is no lever: SGLang turns it off with speculative decoding)"
                            }
                        }
                    )
                } else {
                    match f.mixed_chunk {
                        MixedChunk::Available => "Prefill passes stop decode while they run (unless --enable-mixed-chunk). A smaller --chunked-prefill-size spreads long prompts thinner; PD disaggregation removes the interference.",
                        MixedChunk::AlreadyOn => "Prefill chunks already run with the decode batch (--enable-mixed-chunk is on), and the steps that carry one are still slower. A smaller --chunked-prefill-size spreads long prompts thinner; PD disaggregation removes the interference.",
                        MixedChunk::OffWithSpeculative => "Prefill passes stop decode while they run: with speculative decoding SGLang turns --enable-mixed-chunk off, so it is no lever here. A smaller --chunked-prefill-size spreads long prompts thinner; PD disaggregation removes the interference.",
                    }
                    .to_string()
                }
            ),
            figures,
            f.evidence.clone().into_iter().collect(),
            Confidence::Medium,
        );
        // mixed chunks need chunked prefill: with it off, the lever is turning it on
        let levers: &[Lever] = if cap.chunked_prefill_off || mixed_chunk != MixedChunk::Available {
            &[Lever::ChunkedPrefillSize]
        } else {
            &[Lever::EnableMixedChunk, Lever::ChunkedPrefillSize]
        };
        with_levers(f, levers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{excerpt, only, with_input};

    const MIXED: &str = "real-long/ascend-dsr1-dp16-mtp-mixed.log";

    fn dp0(range: std::ops::RangeInclusive<usize>) -> String {
        only(&excerpt(MIXED, range), "DP0 ")
    }

    #[test]
    fn prefills_between_decode_lines_cost_throughput() {
        with_input(&dp0(1..=8877), |i| {
            let f = check(i).expect("interference");
            assert!(
                f.loss >= 0.10 && f.mixed_tok_per_s < f.clean_tok_per_s,
                "{f:?}"
            );
        });
    }

    /// The log's DP attention (line 127's `--enable-dp-attention --dp-size 16`; line 135:
    /// "The chunked prefill size is adjusted to -1"): SGLang divides --chunked-prefill-size by
    /// the DP size, so the value named is 16 × a rank's chunk (strict expert: 1024 would give
    /// 64-token chunks). Without DP attention in the arguments the per-rank value is named.
    #[test]
    fn the_chunk_named_under_dp_attention_is_per_server() {
        // the server's arguments (line 150) before DP0's lines
        let with_args = excerpt(MIXED, 150..=150) + &dp0(1..=8877);
        with_input(&with_args, |i| {
            let f = check(i).expect("interference");
            let w = PrefillInterference::finding(&f, i).detail;
            assert!(w.contains("e.g. 16384 (with DP attention SGLang divides the flag by --dp-size 16: 1024 tokens a rank)"), "{w}");
        });
        let no_dp = crate::rules::testing::edit(
            &with_args,
            "enable_dp_attention=True",
            "enable_dp_attention=False",
        );
        with_input(&no_dp, |i| {
            let w = PrefillInterference::finding(&check(i).expect("interference"), i).detail;
            assert!(w.contains("e.g. 1024)"), "{w}");
        });
    }

    #[test]
    fn decode_lines_alone_show_none() {
        with_input(&only(&dp0(1..=8877), "Decode batch"), |i| {
            assert_eq!(check(i), None)
        });
    }

    #[test]
    fn prefills_that_found_nothing_running_do_not_interfere() {
        // real-4/101: a single client's requests, each prefilled at #running-req: 0 after the
        // previous ones finished: the low windows hold the wait, not an interrupted decode
        with_input(
            &crate::rules::testing::whole(
                "real-4/101-dgxspark-gb10-long-prefix-chunked-then-400-ctx-exceeded.log",
            ),
            |i| assert_eq!(check(i), None),
        );
        // boundary: the same prefills counted as running beside decode would interfere
        let text = crate::rules::testing::edit(
            &crate::rules::testing::whole(
                "real-4/101-dgxspark-gb10-long-prefix-chunked-then-400-ctx-exceeded.log",
            ),
            "#running-req: 0,",
            "#running-req: 1,",
        );
        with_input(&text, |i| assert!(check(i).is_some()));
    }

    #[test]
    fn a_few_intervals_are_not_enough() {
        with_input(&dp0(1..=400), |i| assert_eq!(check(i), None));
    }

    /// The DP0 lines without speculative decoding's fields: `accept len` and `accept rate`
    /// cut from every line.
    fn without_speculation(text: &str) -> String {
        text.lines()
            .map(
                |l| match (l.find(", accept len: "), l.find(", cpu graph")) {
                    (Some(a), Some(b)) if a < b => format!("{}{}\n", &l[..a], &l[b..]),
                    _ => format!("{l}\n"),
                },
            )
            .collect()
    }

    #[test]
    fn mixed_chunks_are_no_lever_with_speculative_decoding() {
        // MTP on (accept len on every decode line): SGLang turns --enable-mixed-chunk off
        with_input(&dp0(1..=8877), |i| {
            assert_eq!(
                check(i).unwrap().mixed_chunk,
                MixedChunk::OffWithSpeculative
            )
        });
        // the same lines without speculation: mixed chunks are a lever
        with_input(&without_speculation(&dp0(1..=8877)), |i| {
            assert_eq!(check(i).unwrap().mixed_chunk, MixedChunk::Available)
        });
        // with the server's arguments saying it is on already (the log's own line, edited)
        let args = crate::rules::testing::edit(
            &excerpt(MIXED, 150..=150),
            "enable_mixed_chunk=False",
            "enable_mixed_chunk=True",
        );
        let text = args + &without_speculation(&dp0(1..=8877));
        with_input(&text, |i| {
            assert_eq!(check(i).unwrap().mixed_chunk, MixedChunk::AlreadyOn)
        });
    }
}
