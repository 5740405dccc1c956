//! The expectation check in words.

use crate::report::{Expectation, ExpectationCheck, NoCeiling, Reach};

/// Why no ceiling, in words.
fn no_ceiling_words(why: Option<NoCeiling>) -> String {
    use crate::thresholds as th;
    match why {
        Some(NoCeiling::PoorFit { r2 }) => format!(
            "the decode step-time fit explains too little of the lines (R² {r2:.2}, below {})",
            th::MIN_CEILING_FIT_R2
        ),
        Some(NoCeiling::NarrowBatchSizes { low, high }) => format!(
            "the decode lines' batch sizes span only {low:.0}-{high:.0} requests, too narrow to fit how the step time grows with the batch (a ceiling needs them {}x apart)",
            th::MIN_CEILING_RUNNING_SPREAD
        ),
        Some(NoCeiling::NegativeFixedStep) => {
            "fitted to these lines, the fixed part of a decode step comes out at or below zero, which no server has: the fit does not describe them well enough to extrapolate (decode lines over a wider range of batch sizes would)".into()
        }
        Some(NoCeiling::NoLimit) => {
            "the step-time fit over these lines finds no cost for each added request, which no server has: something else changed with the batch size (context length, CUDA graphs, speculation, prefills in the window), so these lines cannot show where throughput levels off; a steady run at several batch sizes would".into()
        }
        Some(NoCeiling::NoFit) => {
            "the steady decode lines give no step-time fit (too few of them with running requests and a gen throughput, or every one at the same batch size), so no ceiling and no change can be set against the target; a steady run at several batch sizes would".into()
        }
        Some(NoCeiling::NotAboveCurrent) => {
            "the step-time fit levels off at or below today's rate, so it names no ceiling above it"
                .into()
        }
        None => format!(
            "a ceiling needs a decode step-time fit over lines at several batch sizes that explains them (R² at least {})",
            th::MIN_CEILING_FIT_R2
        ),
    }
}

/// The answer: the ceiling, the best feasible change and, with an expectation, whether it is
/// reachable and what could reach it.
pub fn expectation(e: &ExpectationCheck) -> String {
    let m = e.measured_tok_per_s;
    let ceiling = e.ceiling_tok_per_s.map(|c| {
        let beyond = match (e.ceiling_at_running, e.fit_running_range) {
            (Some(k), Some((lo, hi))) if k > crate::thresholds::CEILING_EXTRAPOLATION * hi => {
                format!(
                    "; the lines it rests on ran {lo:.0}-{hi:.0} requests, so this is an extrapolation"
                )
            }
            _ => String::new(),
        };
        match e.ceiling_at_running {
            Some(k) => format!(
                "this setup's ceiling is ~{c:.0} tok/s ({:.1}x the measured {m:.0} tok/s: the fitted decode step time's rate at max_running_requests={k:.0} per rank, the most the scheduler runs at once{}{beyond})",
                c / m,
                if e.running_cap_assumed {
                    " (SGLang's default with speculative decoding, assumed: the log states no cap)"
                } else {
                    ""
                }
            ),
            None => format!(
                "this setup's ceiling is ~{c:.0} tok/s ({:.1}x the measured {m:.0} tok/s: the rate the fitted decode step time approaches as more requests decode at once, with unlimited KV)",
                c / m
            ),
        }
    });
    let best = e.best_change.as_ref().map(|(label, rate)| {
        let faster = e
            .faster_change_altering_outputs
            .as_ref()
            .map(|(l, r)| {
                format!(
                    "; {l} gives more, ~{r:.0} tok/s ({:+.0}%), but alters outputs",
                    (r / m - 1.0) * 100.0
                )
            })
            .unwrap_or_default();
        format!(
            "the best change that fits, {label}, gives ~{rate:.0} tok/s ({:+.0}%){faster}",
            (rate / m - 1.0) * 100.0
        )
    });
    // an MLA model at TP without DP attention: the ceiling is this layout's
    let layout = e.ceiling_tok_per_s.and(e.kv_replicated_by_tp).map(|tp| {
        let dp = match e.dp_attention.as_ref() {
            // sized from the model config: the attention weights come out of the pool
            Some(s) => match s.best() {
                Some(o) => format!(
                    "with --enable-dp-attention --dp-size {} each attention group would hold only its own requests' ({} {:.1}x the requests at once, after the weights it holds whole take {} {:.1} GiB more per GPU)",
                    o.dp,
                    if s.embedding_gib.is_some() { "about" } else { "at most" },
                    o.requests_factor,
                    if s.embedding_gib.is_some() { "about" } else { "at least" },
                    o.extra_gib
                ),
                None => format!(
                    "--enable-dp-attention, which would let each attention group hold only its own requests', does not fit: the weights it holds whole would take today's whole {:.1} GiB pool per GPU",
                    s.pool_gib
                ),
            },
            None => format!(
                "with --enable-dp-attention each rank would hold only its own requests' (up to {tp}x the requests at once, less what the attention weights then take)"
            ),
        };
        format!(
            "the ceiling is this layout's: this MLA model's KV is held whole by each of the {tp} TP ranks, and {dp}, which the fit does not project"
        )
    });
    // the ceiling's batch is more than today's pool holds at the longer requests' KV
    let holds = e.kv_holds.map(|h| {
        format!(
            "today's KV pool holds about {:.0} of the longer requests at once, where the same fit gives ~{:.0} tok/s",
            h.running, h.tok_per_s
        )
    });
    let facts = [ceiling, holds, best, layout]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join("; ");
    if e.needs_completion_length {
        let asked = match e.asked {
            Some(Expectation::ReqPerS(r)) => format!("{r} req/s"),
            _ => "The req/s asked".to_string(),
        };
        let verdict = format!(
            "{asked} cannot be set against the server's {m:.0} tok/s without the requests' completion length: give the client's progress log (--client-log, its avg_comp) or its records (--client-records)."
        );
        return if facts.is_empty() {
            verdict
        } else {
            format!("{verdict} Meanwhile: {facts}.")
        };
    }
    let Some(target) = e.expected_tok_per_s else {
        return if facts.is_empty() {
            format!(
                "The server generates {m:.0} tok/s; no ceiling can be fitted from this log: {}.",
                no_ceiling_words(e.no_ceiling)
            )
        } else if e.ceiling_tok_per_s.is_none() {
            format!(
                "{}{}; no ceiling can be fitted from this log: {}.",
                facts[..1].to_uppercase(),
                &facts[1..],
                no_ceiling_words(e.no_ceiling)
            )
        } else {
            format!("{}{}.", facts[..1].to_uppercase(), &facts[1..])
        };
    };
    let server_asked = format!(
        "{target:.0} tok/s ({:.1}x the measured {m:.0} tok/s)",
        target / m
    );
    let verdict = match &e.client {
        // the user's number is the client's: answer in its units first, then the server's
        Some(c) => {
            // the scale: the client's real rate now (the printed figure is often a rounded
            // lifetime average), else its completion length
            let scale = match (c.now_req_per_s, c.mean_completion_tokens) {
                (Some(n), _) => format!(
                    "{:.1}x the {n:.3} req/s the client really completes now, ~{:.0} tok/s of the server's",
                    c.expected_req_per_s / n,
                    c.expected_tok_per_s
                ),
                (None, Some(comp)) => format!(
                    "~{:.0} tok/s at its mean completion of {comp:.0} tokens",
                    c.expected_tok_per_s
                ),
                (None, None) => format!("~{:.0} tok/s", c.expected_tok_per_s),
            };
            let asked = match c.printed_req_per_s {
                Some(p) => format!(
                    "{:.1}x what the client prints ({p} req/s → {:.2} req/s: {scale})",
                    c.expected_req_per_s / p,
                    c.expected_req_per_s,
                ),
                None => format!("{:.2} req/s ({scale})", c.expected_req_per_s),
            };
            let mut first =
                reach_words(&asked, Some(&c.reach), e.no_ceiling, e.kv_replicated_by_tp);
            if let Some(cr) = c.ceiling_req_per_s {
                first.push_str(&format!(" For this client the ceiling is ~{cr:.2} req/s."));
            }
            match (c.printed_req_per_s, &e.reach) {
                (Some(_), Some(r)) => format!(
                    "{first} Against the server's own rate, the same multiple is {server_asked}: {}.",
                    reach_short(r)
                ),
                _ => first,
            }
        }
        None => reach_words(
            &server_asked,
            e.reach.as_ref(),
            e.no_ceiling,
            e.kv_replicated_by_tp,
        ),
    };
    if facts.is_empty() {
        verdict
    } else {
        format!("{verdict} Why: {facts}.")
    }
}

/// Whether a rate is reachable, in a few words.
fn reach_short(r: &Reach) -> String {
    match r {
        Reach::AlreadyThere => "the server already does it".into(),
        Reach::ByChange {
            change,
            alters_outputs,
        } => format!(
            "{change} gets there{}",
            if *alters_outputs {
                ", but alters outputs"
            } else {
                ""
            }
        ),
        Reach::NeedsMoreMemory => {
            "below the ceiling, but not with the memory this setup has".into()
        }
        Reach::BeyondCeiling => "beyond the ceiling".into(),
        Reach::BelowCeilingUnprojected => {
            "below the ceiling, by a change the lengths of the requests would size".into()
        }
        Reach::NoCeiling => "not known (no ceiling can be fitted)".into(),
    }
}

/// Whether `asked` is reachable and what could reach it, as a sentence.
/// `layout`: an MLA model under TP of this many ranks without DP attention (the ceiling is
/// that layout's).
fn reach_words(
    asked: &str,
    reach: Option<&Reach>,
    no_ceiling: Option<NoCeiling>,
    layout: Option<u32>,
) -> String {
    match reach {
        Some(Reach::AlreadyThere) => format!("{asked} is what the server already does."),
        Some(Reach::ByChange {
            change,
            alters_outputs: false,
        }) => format!("{asked} is reachable: {change} gets there."),
        Some(Reach::ByChange {
            change,
            alters_outputs: true,
        }) => format!(
            "{asked} is reachable only by a change that alters outputs: {change} gets there; no change that keeps them does."
        ),
        Some(Reach::NeedsMoreMemory) => format!(
            "{asked} is not reachable with the memory this setup has, but lies below its ceiling: more KV slots than fit (more GPUs, a smaller or quantised model, shorter completions) could reach it."
        ),
        Some(Reach::BeyondCeiling) | None if layout.is_some() => format!(
            "{asked} is not reachable with this layout: it lies beyond its ceiling, so no memory or scheduling setting gets there; faster decode steps (speculative decoding such as EAGLE/MTP, a smaller or quantised model), more replicas beside this one (more GPUs), or a layout in which each of the {} ranks holds only its own requests' KV (--enable-dp-attention, not projected) could.",
            layout.unwrap_or(1)
        ),
        Some(Reach::BeyondCeiling) | None => format!(
            "{asked} is not reachable on this setup: it lies beyond the ceiling, so no memory or scheduling setting gets there; only faster decode steps (speculative decoding such as EAGLE/MTP, a smaller or quantised model) or more replicas beside this one (data parallel, more GPUs) can."
        ),
        Some(Reach::BelowCeilingUnprojected) => format!(
            "{asked} lies below this setup's ceiling, but which change gets there is not known: the what-if changes have no projected rate without the requests' lengths (give --client-records, or a benchmark's output as --client-log)."
        ),
        Some(Reach::NoCeiling) => format!(
            "Whether {asked} is reachable is not known: no change that fits is projected to reach it, and no ceiling can be fitted from this log: {}.",
            no_ceiling_words(no_ceiling)
        ),
    }
}
