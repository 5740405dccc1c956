//! # `speculative`: what speculative decoding gains, from its accept length
//!
//! **What it detects.** Decode lines that print `accept len` (speculative decoding on: EAGLE,
//! EAGLE3, MTP, DFLASH/DSpark, NGRAM): the lowest, median and highest accept length over every
//! such line of every scheduler, with `accept rate` and `cap len` where printed, and the
//! number of draft steps per verify (`speculative_num_steps`) when `server_args` gives it. It
//! says speculation gains nothing when the median accept length is at or below
//! [`th::SPEC_NO_GAIN_ACCEPT_LEN`], and little when the median accept rate is below
//! [`th::SPEC_LOW_ACCEPT_RATE`] (most drafted tokens are thrown away) while the accept length
//! stays below [`th::SPEC_GAINS_ACCEPT_LEN`] (a longer one halves the target passes or more,
//! whatever the rate: a long draft block, drafted in one forward by DFLASH, keeps a small share).
//!
//! **Why it matters.** Each verify step runs the target model once for every running request
//! and keeps `accept len` tokens of it (the bonus token included), so the target model runs
//! ~1/accept-len times per output token: that is the gain. The cost is the draft model's
//! forwards, `speculative_num_steps` per verify step, so `speculative_num_steps / accept len`
//! draft forwards per output token, plus a verify batch `speculative_num_draft_tokens` times
//! wider. An accept length near 1 pays that cost for nothing.
//!
//! **A fall over the run** ([`Trend`]): the median accept length of the later half of one
//! scheduler's decode lines (in time order) at least [`th::SPEC_ACCEPT_DROP`] below that of
//! the earlier half, each half with [`th::SPEC_TREND_MIN_LINES`] lines or more. The draft
//! predicts the later text worse (a longer context, another kind of output), so each target
//! forward yields fewer tokens and decode slows with it; the KV tokens per running request of
//! each half are given beside it.
//!
//! **Evidence it needs.** Decode lines with `accept len`; `server_args` for the step count.
//! Unlike `gen throughput`, accept length is not a rate over wall time: SGLang divides the
//! tokens accepted by the verify steps run since the previous decode line, so the first line
//! after idle is as valid as any, and every line is used.
//!
//! **What to change.** With an accept length near 1: a draft model that matches the target
//! (the one trained for this model and its quantisation), or fewer draft steps
//! (`--speculative-num-steps`), or no speculation (drop `--speculative-algorithm`). With a
//! healthy one, nothing; more draft steps pay only while the accept length keeps rising.
//!
//! **Source.** SGLang `scheduler_metrics_mixin.py` (`log_decode_stats`: `spec_accept_length =
//! spec_num_total_accepted_tokens / spec_num_total_forward_ct`, reset at every decode line;
//! `accept rate` and `cap len` beside it); spec §2.1 and §2.5.

use crate::narrative::words::{count, finding, with_levers};
use crate::report::{Confidence, Figure, Finding, FindingKind, Lever, SourceRange, Unit};
use crate::rules::{Input, Rule, order_key, order_value};
use crate::thresholds as th;

/// Lowest, median and highest of a field over the lines that print it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    /// Lowest value.
    pub lowest: f64,
    /// Median over the lines (the mean of the two middle values for an even count).
    pub median: f64,
    /// Highest value.
    pub highest: f64,
}

impl Spread {
    fn of(values: Vec<f64>) -> Option<Spread> {
        let mut keys = finite_keys(values);
        let (below, mid, above) = middle(&mut keys)?;
        Some(Spread {
            lowest: order_value(below.iter().copied().min().unwrap_or(mid)),
            median: median_of(below, mid, above),
            highest: order_value(above.iter().copied().max().unwrap_or(mid)),
        })
    }
}

/// The finite `values` as order keys ([`order_key`]), in the vector that held them.
fn finite_keys(values: Vec<f64>) -> Vec<u64> {
    values
        .into_iter()
        .filter(|v| v.is_finite())
        .map(order_key)
        .collect()
}

/// The values (as order keys) selected about their middle, not sorted: those before the
/// element at `n/2` in `total_cmp` order, that element, those after it. The ends and the middle
/// are those of the sorted values, bit for bit (the accept lengths' spread 2.0 M -> ~0.3 M
/// instructions on the 20 MB sample); `None` when there are none.
fn middle(keys: &mut [u64]) -> Option<(&[u64], u64, &[u64])> {
    if keys.is_empty() {
        return None;
    }
    let k = keys.len() / 2;
    let (below, &mut mid, above) = keys.select_nth_unstable(k);
    Some((below, mid, above))
}

/// [`Spread::median`] from [`middle`]'s parts: the middle value, or for an even count the mean
/// of it and the largest below it (the two middle values of the sorted values).
fn median_of(below: &[u64], mid: u64, above: &[u64]) -> f64 {
    // an even count `2k` leaves `k` values below the middle one and `k - 1` above it
    if below.len() > above.len()
        && let Some(&lower) = below.iter().max()
    {
        (order_value(lower) + order_value(mid)) / 2.0
    } else {
        order_value(mid)
    }
}

/// [`Spread::median`] of `values`, without the ends.
fn median(values: Vec<f64>) -> Option<f64> {
    let mut keys = finite_keys(values);
    let (below, mid, above) = middle(&mut keys)?;
    Some(median_of(below, mid, above))
}

/// The accept length of the earlier and later halves of one scheduler's decode lines.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Trend {
    /// Median accept length of the earlier half (tokens per verify step).
    pub earlier: f64,
    /// Median accept length of the later half (tokens per verify step).
    pub later: f64,
    /// Median `#token / #running-req` of the earlier half (KV tokens per running request).
    pub earlier_tokens_per_req: Option<f64>,
    /// The same of the later half.
    pub later_tokens_per_req: Option<f64>,
    /// Decode lines in each half (lines).
    pub lines_per_half: usize,
}

/// What the rule saw.
#[derive(Clone, Debug, PartialEq)]
pub struct Facts {
    /// Decode lines that print `accept len` (lines, all schedulers).
    pub lines: usize,
    /// `accept len` (tokens per request per verify step, bonus token included).
    pub accept_len: Spread,
    /// `accept rate` where printed (fraction 0-1; its definition depends on the version).
    pub accept_rate: Option<Spread>,
    /// `cap len` where printed (tokens per verify step, DFLASH/DSpark).
    pub cap_len: Option<Spread>,
    /// `speculative_num_steps` from `server_args` (draft forwards per verify step).
    pub num_steps: Option<u64>,
    /// `speculative_num_draft_tokens` from `server_args` (tokens verified per request per step).
    pub num_draft_tokens: Option<u64>,
    /// Draft forwards per output token: `num_steps / median accept len`.
    pub draft_steps_per_token: Option<f64>,
    /// The median accept length is at or below [`th::SPEC_NO_GAIN_ACCEPT_LEN`].
    pub no_gain: bool,
    /// The median accept rate is below [`th::SPEC_LOW_ACCEPT_RATE`].
    pub low_accept_rate: bool,
    /// The accept length fell over the run (on the first scheduler where it did).
    pub falls: Option<Trend>,
    /// The lines that print it: the first scheduler's that prints it (across the sources it
    /// was read from), and other schedulers' in the source of its first line.
    pub evidence: SourceRange,
}

/// The rule: `None` when no decode line prints `accept len`.
pub fn check(input: &Input<'_>) -> Option<Facts> {
    // room for every decode line up front: no regrowing copies of 16 K accept lengths
    let decode_lines: usize = input
        .views
        .iter()
        .map(|v| v.tl.decode.samples().len())
        .sum();
    let mut len = Vec::with_capacity(decode_lines);
    let mut rate = Vec::with_capacity(decode_lines);
    let mut cap = Vec::new();
    // the first scheduler's lines that print it (lowest to highest line in one source; first
    // to last in its time order once they run into another source: a scheduler joined from
    // several files), and other schedulers' in the one source of those lines
    let mut first: Option<(usize, crate::Loc, crate::Loc)> = None;
    for (i, v) in input.views.iter().enumerate() {
        for d in v.tl.decode.samples() {
            let Some(a) = d.accept_len else { continue };
            len.push(a);
            rate.extend(d.accept_rate);
            cap.extend(d.cap_len);
            let at = d.loc();
            match &mut first {
                None => first = Some((i, at, at)),
                Some((_, lo, hi)) if lo.source == at.source && hi.source == at.source => {
                    *lo = (*lo).min(at);
                    *hi = (*hi).max(at);
                }
                Some((view, _, hi)) if *view == i => *hi = at,
                Some(_) => {}
            }
        }
    }
    let lines = len.len();
    let accept_len = Spread::of(len)?;
    let (_, lo, hi) = first?;
    let num_steps = input.ev.startup.arg_u64("speculative_num_steps");
    let accept_rate = Spread::of(rate);
    Some(Facts {
        lines,
        accept_len,
        accept_rate,
        // a low rate with a long accept length is a long draft block, not a loss
        low_accept_rate: accept_rate.is_some_and(|r| r.median < th::SPEC_LOW_ACCEPT_RATE)
            && accept_len.median < th::SPEC_GAINS_ACCEPT_LEN,
        cap_len: Spread::of(cap),
        num_steps,
        num_draft_tokens: input.ev.startup.arg_u64("speculative_num_draft_tokens"),
        draft_steps_per_token: num_steps
            .filter(|_| accept_len.median > 0.0)
            .map(|s| s as f64 / accept_len.median),
        no_gain: accept_len.median <= th::SPEC_NO_GAIN_ACCEPT_LEN,
        falls: input
            .views
            .iter()
            .find_map(|v| trend(v.tl.decode.samples())),
        evidence: input.span(lo, hi),
    })
}

/// The fall of the accept length over one scheduler's decode lines (see [`Trend`]).
fn trend(decode: &[crate::evidence::DecodeSample]) -> Option<Trend> {
    let with: Vec<_> = decode.iter().filter(|d| d.accept_len.is_some()).collect();
    let half = with.len() / 2;
    if half < th::SPEC_TREND_MIN_LINES {
        return None;
    }
    let (a, b) = (&with[..half], &with[with.len() - half..]);
    let accept = |s: &[&crate::evidence::DecodeSample]| {
        median(s.iter().filter_map(|d| d.accept_len).collect())
    };
    let per_req = |s: &[&crate::evidence::DecodeSample]| {
        median(
            s.iter()
                .filter_map(|d| Some(d.tokens? as f64 / d.running.filter(|r| *r > 0)? as f64))
                .collect(),
        )
    };
    let (earlier, later) = (accept(a)?, accept(b)?);
    (later <= (1.0 - th::SPEC_ACCEPT_DROP) * earlier).then(|| Trend {
        earlier,
        later,
        earlier_tokens_per_req: per_req(a),
        later_tokens_per_req: per_req(b),
        lines_per_half: half,
    })
}

/// The rule as [`super::FINDING_RULES`] runs it: [`check`], then the finding in its words.
#[derive(Clone, Copy, Debug)]
pub struct Speculative;

impl Rule for Speculative {
    const NAME: &'static str = "speculative";
    type Facts = Facts;

    fn check(input: &Input<'_>) -> impl IntoIterator<Item = Facts> {
        check(input)
    }

    fn finding(f: &Facts, _input: &Input<'_>) -> Finding {
        let a = f.accept_len;
        let over = if f.lines == 1 {
            "one decode line (one sample)".to_string()
        } else {
            format!(
                "{} decode lines (range {:.2}-{:.2})",
                count(f.lines as u64),
                a.lowest,
                a.highest
            )
        };
        let mut extra = Vec::new();
        if let Some(r) = f.accept_rate {
            extra.push(format!("accept rate {:.2}", r.median));
        }
        if let Some(c) = f.cap_len {
            extra.push(format!("cap len {:.2}", c.median));
        }
        let extra = if extra.is_empty() {
            String::new()
        } else {
            format!("; {}", extra.join(", "))
        };
        let cost = match (f.num_steps, f.draft_steps_per_token) {
            (Some(steps), Some(per_token)) => format!(
                ", for {steps} draft-model forward{} per verify step: {per_token:.2} draft forwards per output token",
                if steps == 1 { "" } else { "s" }
            ),
            _ => String::new(),
        };
        let (title, verdict, confidence) = if f.no_gain {
            (
                format!(
                    "Speculative decoding gains nothing: accept length ~{:.2}",
                    a.median
                ),
                "Almost every draft token is rejected, so the draft forwards and the wider verify batch are pure cost: decoding without speculation would be at least as fast. Use a draft model trained for this target (and its quantisation), lower --speculative-num-steps, or drop --speculative-algorithm.",
                Confidence::Medium,
            )
        } else if f.low_accept_rate {
            (
                format!(
                    "Speculative decoding gains little: accept length ~{:.2}, accept rate {:.2}",
                    a.median,
                    f.accept_rate.map_or(0.0, |r| r.median)
                ),
                "Most drafted tokens are thrown away (low accept rate), so each kept token costs several draft tokens and a wider verify batch: the gain is small. Fewer draft tokens (--speculative-num-steps, --speculative-num-draft-tokens) may decode as fast for less work; a draft model trained for this target would accept more.",
                Confidence::Medium,
            )
        } else {
            (
                format!(
                    "Speculative decoding yields ~{:.2} tokens per target forward",
                    a.median
                ),
                "The target model runs about once per that many output tokens, which is the gain before the draft forwards' cost; more draft steps help only while the accept length keeps rising with them.",
                Confidence::High,
            )
        };
        let mut figures = vec![
            Figure::new("median accept length", a.median, Unit::Tokens),
            Figure::new("lowest accept length", a.lowest, Unit::Tokens),
            Figure::new("highest accept length", a.highest, Unit::Tokens),
            Figure::new(
                "decode lines with accept length",
                f.lines as f64,
                Unit::Lines,
            ),
        ];
        if let Some(r) = f.accept_rate {
            figures.push(Figure::new("median accept rate", r.median, Unit::Fraction));
        }
        if let Some(c) = f.cap_len {
            figures.push(Figure::new("median cap length", c.median, Unit::Tokens));
        }
        if let Some(d) = f.draft_steps_per_token {
            figures.push(Figure::new(
                "draft forwards per output token",
                d,
                Unit::Ratio,
            ));
        }
        let levers: &[Lever] = if f.no_gain || f.low_accept_rate {
            &[Lever::SpeculativeDecoding]
        } else {
            &[]
        };
        let falls = match f.falls {
            Some(t) => {
                figures.push(Figure::new(
                    "median accept length, earlier half",
                    t.earlier,
                    Unit::Tokens,
                ));
                figures.push(Figure::new(
                    "median accept length, later half",
                    t.later,
                    Unit::Tokens,
                ));
                let context = match (t.earlier_tokens_per_req, t.later_tokens_per_req) {
                    (Some(x), Some(y)) => format!(
                        ", while the KV tokens per running request went from {} to {}",
                        count(x.round() as u64),
                        count(y.round() as u64)
                    ),
                    _ => String::new(),
                };
                format!(
                    " The accept length falls over the log: a median of {:.2} on the earlier {} decode lines, {:.2} on the later {} ({:+.0}%){context}. \
                     The draft predicts the later text worse (a longer context, another kind of output), so each target forward yields fewer tokens and decode slows with it.",
                    t.earlier,
                    t.lines_per_half,
                    t.later,
                    t.lines_per_half,
                    (t.later / t.earlier - 1.0) * 100.0
                )
            }
            None => String::new(),
        };
        let out = finding(
            FindingKind::SpeculativeDecoding,
            title,
            format!(
                "Accept length (SGLang's accept len: tokens kept per request per verify step, the bonus token included) has a median of {:.2} over {over}{extra}. Each target-model forward yields ~{:.2} tokens per running request instead of 1{cost}. {verdict}{falls}",
                a.median, a.median
            ),
            figures,
            vec![f.evidence.clone()],
            if f.lines == 1 {
                Confidence::Low
            } else {
                confidence
            },
        );
        with_levers(out, levers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{excerpt, set_field, whole, with_input};

    const EAGLE3: &str = "real/038-i11948-eagle3-single-gpu-accept-len.log";
    const DFLASH: &str = "real/010-pr34924-dflash-swa-accept-cap-len.log";
    const MTP_DP: &str = "real/022-pr6081-mtp-dp-attention-8ranks.log";
    const DSPARK: &str = "real-2/113-i36081-dsv4-dspark-v0.5.18-tp-ep-swa-accept-len-long-ctx.log";
    const ASCEND: &str = "real-long/ascend-qwen3-30b-tp2-eagle3-highload.log";

    fn spread(lowest: f64, median: f64, highest: f64) -> Spread {
        Spread {
            lowest,
            median,
            highest,
        }
    }

    fn close(a: Spread, b: Spread) -> bool {
        (a.lowest - b.lowest).abs() < 1e-9
            && (a.median - b.median).abs() < 1e-9
            && (a.highest - b.highest).abs() < 1e-9
    }

    const AGENTIC: &str =
        "real-4/118-rtxpro6000-v0.5.18dev-agentic-300k-prefix-mamba-mtp-reqtimestats.log";

    #[test]
    fn the_accept_length_falls_in_the_later_window() {
        // 118: MTP on one agentic client; accept len 5.60, 5.15, 3.42 … on the decode lines of
        // 15:56 (lines 1-18), 2.60, 2.40, 3.23 … on those of 15:56:39-15:58 (lines 21-36): 11 lines
        // a half.
        with_input(&whole(AGENTIC), |i| {
            let t = check(i).expect("speculative").falls.expect("falls");
            assert_eq!(t.lines_per_half, 11);
            assert!((t.earlier - 4.00).abs() < 0.5, "{t:?}");
            assert!((t.later - 2.80).abs() < 0.3, "{t:?}");
            assert!(t.later <= 0.75 * t.earlier);
        });
    }

    #[test]
    fn a_steady_accept_length_does_not_fall() {
        // EAGLE3 (5 lines: too few for halves), DFLASH 4.22-3.70 over 4 lines, the Ascend
        // high-load log's hundreds of lines at a steady length: no fall.
        for log in [EAGLE3, DFLASH, ASCEND] {
            with_input(&whole(log), |i| {
                assert_eq!(check(i).expect("speculative").falls, None, "{log}");
            });
        }
    }

    #[test]
    fn a_fall_just_short_of_a_quarter_is_not_read() {
        // the 118 lines with the later half's lengths raised to 76% of the earlier median
        let text = whole(AGENTIC);
        with_input(&text, |i| {
            let t = check(i).expect("speculative").falls.expect("falls");
            let floor = 0.76 * t.earlier;
            let raised: String = text
                .lines()
                .enumerate()
                .map(|(n, l)| {
                    if n >= 20 && l.contains("accept len: ") {
                        set_field(l, "accept len", &format!("{floor:.2}"))
                    } else {
                        l.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join("\n");
            with_input(&raised, |j| {
                assert_eq!(check(j).expect("speculative").falls, None);
            });
        });
    }

    #[test]
    fn eagle3_single_gpu_gains_about_two_tokens_per_forward() {
        // Lines 2-6: accept len 2.17, 1.95, 1.80, 2.05, 1.80; accept rate 0.54 ... 0.45. Line
        // 2's 0.39 tok/s is an idle window, but its accept length counts verify steps, not time.
        with_input(&whole(EAGLE3), |i| {
            let f = check(i).expect("speculative");
            assert_eq!(f.lines, 5);
            assert!(close(f.accept_len, spread(1.80, 1.95, 2.17)));
            assert!(close(
                f.accept_rate.expect("rate"),
                spread(0.45, 0.49, 0.54)
            ));
            assert_eq!(f.cap_len, None);
            assert_eq!(f.num_steps, None);
            assert!(!f.no_gain);
            assert_eq!((f.evidence.first_line, f.evidence.last_line), (2, 6));
        });
    }

    #[test]
    fn dflash_prints_its_cap_length() {
        // Lines 2-5: accept len 4.22, 4.25, 3.50, 3.70 of cap len 6.00.
        with_input(&whole(DFLASH), |i| {
            let f = check(i).expect("speculative");
            assert_eq!(f.lines, 4);
            assert!(close(f.accept_len, spread(3.50, 3.96, 4.25)));
            assert!(close(f.cap_len.expect("cap"), spread(6.0, 6.0, 6.0)));
        });
    }

    #[test]
    fn mtp_over_dp_ranks_pools_every_rank() {
        // One decode line on each of DP0, DP2, DP5, DP6, DP7: accept len 2.58-2.94, no rate.
        with_input(&whole(MTP_DP), |i| {
            let f = check(i).expect("speculative");
            assert_eq!(f.lines, 5);
            assert!(close(f.accept_len, spread(2.58, 2.86, 2.94)));
            assert_eq!(f.accept_rate, None);
        });
    }

    #[test]
    fn dspark_two_lines() {
        // Lines 3-4: accept len 3.55 and 4.42 (the first window's 3.22 tok/s does not matter).
        with_input(&whole(DSPARK), |i| {
            let f = check(i).expect("speculative");
            assert_eq!(f.lines, 2);
            assert!(close(f.accept_len, spread(3.55, 3.985, 4.42)));
            assert!(close(
                f.accept_rate.expect("rate"),
                spread(0.51, 0.60, 0.69)
            ));
        });
    }

    #[test]
    fn ascend_eagle3_costs_draft_steps_per_token() {
        // server_args: speculative_num_steps=3, speculative_num_draft_tokens=4; 140 decode lines
        // with accept len 1.79-2.87, median 2.67: 3 / 2.67 = 1.12 draft forwards per token.
        with_input(&whole(ASCEND), |i| {
            let f = check(i).expect("speculative");
            assert_eq!(f.lines, 140);
            assert!(close(f.accept_len, spread(1.79, 2.67, 2.87)));
            assert_eq!((f.num_steps, f.num_draft_tokens), (Some(3), Some(4)));
            let per_token = f.draft_steps_per_token.expect("cost");
            assert!((per_token - 3.0 / 2.67).abs() < 1e-9, "{per_token}");
            assert!(!f.no_gain);
        });
    }

    #[test]
    fn an_accept_length_near_one_gains_nothing() {
        // The same lines with every draft rejected (accept len 1.00), and at the boundary.
        let rejected = set_field(&whole(EAGLE3), "accept len", "1.00");
        with_input(&rejected, |i| {
            assert!(check(i).expect("speculative").no_gain)
        });
        let at = set_field(&whole(EAGLE3), "accept len", "1.20");
        with_input(&at, |i| assert!(check(i).expect("speculative").no_gain));
        let above = set_field(&whole(EAGLE3), "accept len", "1.21");
        with_input(&above, |i| assert!(!check(i).expect("speculative").no_gain));
    }

    #[test]
    fn most_drafts_rejected_gains_little() {
        // HiCache PD decode with MTP: accept len 1.67-1.73 but accept rate 0.13-0.14 (lines
        // 1-5): most drafted tokens are thrown away.
        const MTP: &str = "real/016-pr30393-hicache-pd-decode-mtp-transfer.log";
        with_input(&whole(MTP), |i| {
            let f = check(i).expect("speculative");
            assert!(close(f.accept_len, spread(1.67, 1.70, 1.73)));
            assert!(f.low_accept_rate);
            assert!(!f.no_gain);
        });
        // The EAGLE3 run's accept rate (0.45-0.54, lines 2-6) is no such case; set on every
        // line, 0.30 is not low, 0.29 is.
        with_input(&whole(EAGLE3), |i| {
            assert!(!check(i).expect("speculative").low_accept_rate)
        });
        let at = set_field(&whole(EAGLE3), "accept rate", "0.30");
        with_input(&at, |i| {
            assert!(!check(i).expect("speculative").low_accept_rate)
        });
        let below = set_field(&whole(EAGLE3), "accept rate", "0.29");
        with_input(&below, |i| {
            assert!(check(i).expect("speculative").low_accept_rate)
        });
        // a low rate with an accept length of 2 or more is a long draft block, not a loss
        let long_block = set_field(&below, "accept len", "2.00");
        with_input(&long_block, |i| {
            assert!(!check(i).expect("speculative").low_accept_rate)
        });
        let just_below = set_field(&below, "accept len", "1.99");
        with_input(&just_below, |i| {
            assert!(check(i).expect("speculative").low_accept_rate)
        });
    }

    #[test]
    fn no_speculation_no_finding() {
        // Plain decode lines (no accept len) from a single-stream ROCm run.
        with_input(
            &excerpt("real/017-i3243-amd-rx7900xtx-rocm.log", 1..=5),
            |i| assert_eq!(check(i), None),
        );
    }
}
