//! The answer to "it should be N times faster": the measured steady rate against the ceiling of
//! this setup (the decode step-time fit's limit, `crate::projection`) and the best change that
//! fits (`crate::recommend`'s candidates), on the measured rate's scale.
//!
//! Projections come from the fit; the fit's rate differs a little from the measured rate (it
//! averages over decode lines, the measured rate over time), so projected figures are scaled
//! to the measured rate. The what-if changes are scaled by `measured / fit(today's pool)`, the
//! what-if table's "now" row (gains are read pool against pool, one "now" figure everywhere);
//! the ceiling by `measured / fit(the observed mean batch)`: it is the fit's own limit, so
//! what sizes the what-if rows (the requests' lengths, when given) does not move it. It is
//! never put below a change's projection.

use kv_capacity::{Change, Feasibility};

use crate::context::Expectation;
use crate::report::{
    ClientExpectation, ExpectationCheck, NoCeiling, Projection, ProjectionRow, Rate, Reach,
};

/// The label of the change that fills today's pool (a lower `--schedule-conservativeness`),
/// as the what-if rows' labels name their changes.
pub const FILL_LABEL: &str = "schedule_conservativeness lower (today's pool filled)";

/// The client's figures an expectation can be read in: the rate it printed last (req/s), the
/// rate it really completes at now (req/s) and its mean completion length (tokens).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ClientFigures {
    /// The last completion rate the client printed (req/s).
    pub printed_req_per_s: Option<f64>,
    /// The client's completion rate now: its steady-window rate, else the rate the server's
    /// tokens imply (req/s); the recommendations scale the same figure, so a req/s target
    /// and a change's req/s are read on one scale.
    pub now_req_per_s: Option<f64>,
    /// Mean completion tokens per request.
    pub mean_completion_tokens: Option<f64>,
}

/// The check, when the measured rate is known and a fit or a target is (without a fit a target
/// is answered "not known", `NoCeiling::NoFit`). `expected`: the user's, if given;
/// `client`: the client's figures, which a multiple (`4x` of what the client prints) and a
/// req/s figure are read in. The `text` is filled by `crate::narrative`.
pub fn check(
    measured: &Rate,
    projection: Option<&Projection>,
    fill: Option<crate::recommend::Fill>,
    expected: Option<Expectation>,
    client: ClientFigures,
) -> Option<ExpectationCheck> {
    let m = measured.value;
    if !(m.is_finite() && m > 0.0) {
        return None;
    }
    // without a fit: no ceiling and no change; asked, the answer says why, else there is none
    if projection.is_none() && expected.is_none() {
        return None;
    }
    let (rows, fit_now, fit_ceiling, no_ceiling): (&[ProjectionRow], _, _, _) = match projection {
        Some(p) => (
            &p.rows,
            p.current_tok_per_s,
            p.ceiling_tok_per_s,
            p.no_ceiling,
        ),
        None => (&[], m, None, Some(NoCeiling::NoFit)),
    };
    let ceiling_at_running = projection.and_then(|p| p.ceiling_at_running);
    let fit_running_range = projection
        .filter(|p| p.ceiling_tok_per_s.is_some())
        .map(|p| p.running_range);
    let base = rows
        .iter()
        .find(|r| r.change == Change::Current)
        .map_or(fit_now, |r| r.tok_per_s);
    // the requests decoding at once today, by the same row (the recommendations' base)
    let base_running = rows
        .iter()
        .find(|r| r.change == Change::Current)
        .map(|r| r.concurrency)
        .or(projection.map(|p| p.observed_mean_running));
    let scale = if base > 0.0 { m / base } else { 1.0 };
    let observed = fit_now;
    let ceiling_scale = if observed > 0.0 { m / observed } else { 1.0 };
    // Changes that fit and gain, those without a cost in output quality (fp8 KV changes
    // numerics) first, then by rate: the order the recommendations use.
    let mut candidates: Vec<(bool, String, f64)> = rows
        .iter()
        .filter(|r| !matches!(r.change, Change::Current | Change::TpSize { .. }))
        .filter(|r| r.feasibility == Some(Feasibility::Fits) && r.tok_per_s > base)
        // a change that lets fewer requests decode at once gains only in a fit thrown by a
        // reading it should not hold (`recommend`'s KV plans leave it out too)
        .filter(|r| base_running.is_none_or(|n| r.concurrency > n))
        .map(|r| {
            let quality_cost = crate::recommend::costs_output_quality(r.change);
            (quality_cost, r.label.clone(), r.tok_per_s * scale)
        })
        .collect();
    // requests held back below a pool with room (a conservative scheduler): filling today's
    // pool is a change that fits, on the fit's scale of today's batch (the what-if rows are
    // read pool against pool, so their gains come on top of it)
    if let Some(f) = fill.filter(|f| f.tok_per_s * ceiling_scale > m) {
        candidates.push((false, FILL_LABEL.to_string(), f.tok_per_s * ceiling_scale));
    }
    candidates.sort_by(|a, b| a.0.cmp(&b.0).then(b.2.total_cmp(&a.2)));
    let best = candidates.first().map(|c| (c.1.clone(), c.2));
    let fastest = candidates.iter().map(|c| c.2).fold(0.0, f64::max);
    let faster = candidates
        .iter()
        .filter(|c| c.0 && best.as_ref().is_some_and(|b| c.2 > b.1))
        .max_by(|a, b| a.2.total_cmp(&b.2))
        .map(|c| (c.1.clone(), c.2));
    let ceiling = fit_ceiling.map(|c| (c * ceiling_scale).max(fastest));
    let positive = |x: Option<f64>| x.filter(|c| c.is_finite() && *c > 0.0);
    let completion = positive(client.mean_completion_tokens);
    let now = positive(client.now_req_per_s);
    // req/s in the server's tok/s: in proportion to the client's rate now (the scale the
    // recommendations' req/s use), else at its mean completion length
    let in_client_units = |req_per_s: f64, printed: Option<f64>| match (now, completion) {
        (Some(n), _) => Some((req_per_s, printed, m * req_per_s / n)),
        (None, Some(c)) => Some((req_per_s, printed, req_per_s * c)),
        _ => None,
    };
    let (target, client_target) = match expected {
        None => (None, None),
        Some(Expectation::Multiple(x)) => (
            Some(x * m),
            client
                .printed_req_per_s
                .filter(|r| r.is_finite() && *r > 0.0)
                .and_then(|r| in_client_units(x * r, Some(r))),
        ),
        Some(Expectation::TokPerS(t)) => (Some(t), None),
        Some(Expectation::ReqPerS(r)) => {
            let c = in_client_units(r, None);
            (c.map(|c| c.2), c)
        }
    };
    // what-if changes with a projected rate (none without a load model: no requests' lengths)
    let projected = rows.iter().any(|r| r.change != Change::Current);
    let reach_of = |t: f64| {
        if t <= m {
            Reach::AlreadyThere
        } else if let Some(c) = candidates.iter().find(|c| c.2 >= t) {
            Reach::ByChange {
                change: c.1.clone(),
                alters_outputs: c.0,
            }
        } else {
            match ceiling {
                None => Reach::NoCeiling,
                Some(c) if t > c => Reach::BeyondCeiling,
                Some(_) if projected => Reach::NeedsMoreMemory,
                Some(_) => Reach::BelowCeilingUnprojected,
            }
        }
    };
    let reach = target.map(reach_of);
    // the ceiling in the client's req/s, on the same scale
    let req_per_tok = match (now, completion) {
        (Some(n), _) => Some(n / m),
        (None, Some(c)) => Some(1.0 / c),
        _ => None,
    };
    let client = client_target.map(|(req, printed, tps)| ClientExpectation {
        printed_req_per_s: printed,
        expected_req_per_s: req,
        now_req_per_s: now,
        mean_completion_tokens: completion,
        expected_tok_per_s: tps,
        ceiling_req_per_s: ceiling.zip(req_per_tok).map(|(c, r)| c * r),
        reach: reach_of(tps),
    });
    Some(ExpectationCheck {
        asked: expected,
        expected_tok_per_s: target,
        measured_tok_per_s: m,
        ceiling_tok_per_s: ceiling,
        ceiling_at_running: ceiling_at_running.filter(|_| ceiling.is_some()),
        running_cap_assumed: projection.is_some_and(|p| p.running_cap_assumed)
            && ceiling.is_some()
            && ceiling_at_running.is_some(),
        fit_running_range,
        best_change: best,
        faster_change_altering_outputs: faster,
        reach,
        no_ceiling,
        kv_replicated_by_tp: None,
        dp_attention: None,
        kv_holds: None,
        needs_completion_length: matches!(expected, Some(Expectation::ReqPerS(_)))
            && client.is_none(),
        client,
        text: String::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{NoCeiling, ProjectionRow, RateBasis, Unit};

    /// The founding case's fit in miniature: today's row projects 779 tok/s against a measured
    /// 727; 0.88 fits (888), fp8 fits (1004), the ceiling is 1408. Each row's requests
    /// decoding at once grow with its pool (44 today; fp8 twice the slots).
    fn projection() -> Projection {
        let row = |label: &str, change, tok: f64, f| ProjectionRow {
            label: label.into(),
            change,
            concurrency: match change {
                Change::Current => 44.0,
                Change::Fraction { to } => 44.0 * (to - 0.6) / (0.85 - 0.6),
                _ => 88.0,
            },
            tok_per_s: tok,
            gain_pct: 0.0,
            extrapolated: false,
            feasibility: Some(f),
        };
        Projection {
            formula: String::new(),
            a: 0.0274,
            b: 5.3e-4,
            c: 7.25e-8,
            r2: 0.92,
            n: 3175,
            running_range: (18.0, 68.0),
            current_tok_per_s: 770.0,
            observed_mean_running: 44.0,
            ceiling_tok_per_s: Some(1408.0),
            ceiling_at_running: None,
            running_cap_assumed: false,
            measured_scale: None,
            kv_tokens_per_request: 0.0,
            no_ceiling: None,
            rows: vec![
                row("now", Change::Current, 779.0, Feasibility::Fits),
                row(
                    "mem_fraction_static 0.88",
                    Change::Fraction { to: 0.88 },
                    888.0,
                    Feasibility::Fits,
                ),
                row(
                    "mem_fraction_static 0.93",
                    Change::Fraction { to: 0.93 },
                    1005.0,
                    Feasibility::OomLikely,
                ),
                row(
                    "fp8",
                    Change::KvDtype {
                        to: kv_capacity::KvDtype::Fp8E4m3,
                    },
                    1004.0,
                    Feasibility::Fits,
                ),
            ],
        }
    }

    fn measured() -> Rate {
        Rate {
            value: 727.0,
            low: Some(707.0),
            high: Some(747.0),
            confidence: 0.95,
            unit: Unit::TokPerS,
            window_s: 7087.0,
            basis: RateBasis::SteadySpan,
            method: String::new(),
            lines: Some(3175),
        }
    }

    #[test]
    fn four_times_is_beyond_the_ceiling() {
        let e = check(
            &measured(),
            Some(&projection()),
            None,
            Some(Expectation::Multiple(4.0)),
            ClientFigures::default(),
        )
        .expect("check");
        assert_eq!(e.expected_tok_per_s, Some(2908.0));
        assert!(e.client.is_none());
        assert_eq!(e.reach, Some(Reach::BeyondCeiling));
        // 1408 × 727 / 770 (the fit at the observed mean batch, not the "now" row's 779) =
        // 1329 tok/s on the measured scale
        assert!((e.ceiling_tok_per_s.expect("ceiling") - 1329.4).abs() < 0.1);
        let (label, rate) = e.best_change.expect("best");
        assert_eq!(label, "mem_fraction_static 0.88");
        assert!((rate - 828.7).abs() < 0.1, "{rate}");
        // fp8 is faster (1004 × 727 / 779 = 937) but alters outputs: named beside it
        let (label, rate) = e.faster_change_altering_outputs.expect("faster");
        assert_eq!(label, "fp8");
        assert!((rate - 937.0).abs() < 0.1, "{rate}");
    }

    /// A fit thrown by one wild reading (the fresh user's cut log: 7 tok/s at 47 running) can
    /// rate a smaller pool above today's; fewer requests decoding at once is never the best
    /// change (boundary: a pool that keeps today's 44 is no change either).
    #[test]
    fn a_smaller_pool_is_never_the_best_change() {
        let mut p = projection();
        for (to, tok) in [(0.83, 5358.0), (0.85, 5000.0)] {
            p.rows.push(ProjectionRow {
                label: format!("mem_fraction_static {to:.2}"),
                change: Change::Fraction { to },
                concurrency: 44.0 * (to - 0.6) / (0.85 - 0.6),
                tok_per_s: tok,
                gain_pct: 0.0,
                extrapolated: false,
                feasibility: Some(Feasibility::Fits),
            });
        }
        let e = check(&measured(), Some(&p), None, None, ClientFigures::default()).expect("check");
        let (label, _) = e.best_change.expect("best");
        assert_eq!(label, "mem_fraction_static 0.88");
    }

    /// kimi-k25-b2's client: it prints 0.1 req/s, completions average 4,116 tokens; no
    /// windowed rate (the conversion at its completion length).
    fn founding_client() -> ClientFigures {
        ClientFigures {
            printed_req_per_s: Some(0.1),
            now_req_per_s: None,
            mean_completion_tokens: Some(4116.0),
        }
    }

    #[test]
    fn a_req_per_s_target_on_the_clients_own_scale() {
        // the client completes 0.177 req/s now while the server makes 727 tok/s: 0.4 req/s is
        // 0.4 / 0.177 = 2.26x, 1,643 tok/s; the 1,329 tok/s ceiling is 0.324 req/s for it
        let e = check(
            &measured(),
            Some(&projection()),
            None,
            Some(Expectation::Multiple(4.0)),
            ClientFigures {
                now_req_per_s: Some(0.177),
                ..founding_client()
            },
        )
        .expect("check");
        let c = e.client.expect("client");
        assert!((c.expected_tok_per_s - 727.0 * 0.4 / 0.177).abs() < 1e-9);
        assert_eq!(c.reach, Reach::BeyondCeiling);
        let ceiling = c.ceiling_req_per_s.expect("ceiling in req/s");
        assert!((ceiling - 1329.4 * 0.177 / 727.0).abs() < 1e-3, "{ceiling}");
    }

    #[test]
    fn four_times_what_the_client_prints() {
        // 4 × 0.1 req/s = 0.4 req/s × 4,116 tokens = 1,646 tok/s: beyond the 1,329 ceiling,
        // and 4 × the server's 727 tok/s is too
        let e = check(
            &measured(),
            Some(&projection()),
            None,
            Some(Expectation::Multiple(4.0)),
            founding_client(),
        )
        .expect("check");
        let c = e.client.expect("client reading");
        assert_eq!(c.printed_req_per_s, Some(0.1));
        assert!((c.expected_req_per_s - 0.4).abs() < 1e-12);
        assert!((c.expected_tok_per_s - 1646.4).abs() < 1e-9);
        assert_eq!(c.reach, Reach::BeyondCeiling);
        assert_eq!(e.reach, Some(Reach::BeyondCeiling));
        // 2x of what the client prints is 823 tok/s: the 0.88 change (828.7) reaches it
        let e = check(
            &measured(),
            Some(&projection()),
            None,
            Some(Expectation::Multiple(2.0)),
            founding_client(),
        )
        .expect("check");
        assert_eq!(
            e.client.expect("client").reach,
            Reach::ByChange {
                change: "mem_fraction_static 0.88".into(),
                alters_outputs: false,
            }
        );
    }

    #[test]
    fn req_per_s_needs_the_completion_length() {
        // 0.2 req/s × 4,116 = 823 tok/s: the 0.88 change reaches it
        let e = check(
            &measured(),
            Some(&projection()),
            None,
            Some(Expectation::ReqPerS(0.2)),
            founding_client(),
        )
        .expect("check");
        assert!((e.expected_tok_per_s.expect("rate") - 823.2).abs() < 1e-9);
        assert!(!e.needs_completion_length);
        // without the client's lengths it cannot be turned into tok/s: said, not guessed
        let e = check(
            &measured(),
            Some(&projection()),
            None,
            Some(Expectation::ReqPerS(0.2)),
            ClientFigures::default(),
        )
        .expect("check");
        assert_eq!((e.expected_tok_per_s, e.reach.clone()), (None, None));
        assert!(e.needs_completion_length);
        // stated back typed, in the JSON as `{kind, value}`, and named in the answer
        assert_eq!(e.asked, Some(Expectation::ReqPerS(0.2)));
        assert_eq!(
            serde_json::to_value(&e).expect("json")["asked"],
            serde_json::json!({"kind": "req_per_s", "value": 0.2})
        );
        assert!(
            crate::narrative::expectation(&e).starts_with("0.2 req/s cannot be set against"),
            "{}",
            crate::narrative::expectation(&e)
        );
    }

    #[test]
    fn a_tenth_more_is_one_change_away_and_a_third_needs_memory() {
        let p = projection();
        let e = check(
            &measured(),
            Some(&p),
            None,
            Some(Expectation::TokPerS(800.0)),
            ClientFigures::default(),
        )
        .expect("check");
        assert_eq!(
            e.reach,
            Some(Reach::ByChange {
                change: "mem_fraction_static 0.88".into(),
                alters_outputs: false,
            })
        );
        // fp8 (937 on the measured scale) reaches 900 when 0.88 does not
        let e = check(
            &measured(),
            Some(&p),
            None,
            Some(Expectation::TokPerS(900.0)),
            ClientFigures::default(),
        )
        .expect("check");
        assert_eq!(
            e.reach,
            Some(Reach::ByChange {
                change: "fp8".into(),
                alters_outputs: true,
            })
        );
        let e = check(
            &measured(),
            Some(&p),
            None,
            Some(Expectation::Multiple(1.5)),
            ClientFigures::default(),
        )
        .expect("check");
        assert_eq!(e.reach, Some(Reach::NeedsMoreMemory));
        let e = check(
            &measured(),
            Some(&p),
            None,
            Some(Expectation::Multiple(0.9)),
            ClientFigures::default(),
        )
        .expect("check");
        assert_eq!(e.reach, Some(Reach::AlreadyThere));
    }

    /// Without a ceiling, a target beyond every change that fits is not called "beyond the
    /// ceiling" (the fresh user's rtx4090 log: R² 0.41, no ceiling, yet "beyond the ceiling");
    /// without projected changes (no requests' lengths), one below the ceiling is not called
    /// "needs more memory" (the founding scenario without --client-records).
    /// Without any fit (steady lines at one batch size), `--expect` is still answered: not
    /// known, because there is no fit; a target at or below the measured rate is there already.
    #[test]
    fn without_a_fit_the_expectation_is_answered_not_known() {
        let c = check(
            &measured(),
            None,
            None,
            Some(Expectation::Multiple(2.0)),
            ClientFigures::default(),
        )
        .expect("answered");
        assert_eq!(c.reach, Some(Reach::NoCeiling));
        assert_eq!(c.no_ceiling, Some(NoCeiling::NoFit));
        assert_eq!(c.ceiling_tok_per_s, None);
        assert_eq!(c.best_change, None);
        let m = measured().value;
        let c = check(
            &measured(),
            None,
            None,
            Some(Expectation::TokPerS(m)),
            ClientFigures::default(),
        )
        .expect("answered");
        assert_eq!(c.reach, Some(Reach::AlreadyThere));
    }

    #[test]
    fn no_ceiling_and_no_projected_change_are_said_as_such() {
        let reach = |p: &Projection, e| {
            check(
                &measured(),
                Some(p),
                None,
                Some(e),
                ClientFigures::default(),
            )
            .expect("check")
            .reach
        };
        let mut p = projection();
        p.ceiling_tok_per_s = None;
        p.no_ceiling = Some(NoCeiling::PoorFit { r2: 0.41 });
        let by = |change: &str| Reach::ByChange {
            change: change.into(),
            alters_outputs: change.contains("fp8"),
        };
        // a change that fits still reaches what it reaches
        for (e, want) in [
            (Expectation::Multiple(2.0), Reach::NoCeiling),
            (Expectation::TokPerS(800.0), by("mem_fraction_static 0.88")),
        ] {
            assert_eq!(reach(&p, e), Some(want));
        }
        let mut p = projection();
        p.rows.retain(|r| r.change == Change::Current);
        for (e, want) in [
            (Expectation::TokPerS(800.0), Reach::BelowCeilingUnprojected),
            (Expectation::Multiple(4.0), Reach::BeyondCeiling),
        ] {
            assert_eq!(reach(&p, e), Some(want));
        }
    }

    /// The ceiling is the fit's: the what-if rows (sized by the requests' lengths when given)
    /// do not move it (the founding scenario read ~1415 tok/s without --client-records and
    /// ~1323 with them, from the same fit); it is never shown below a change's projection.
    #[test]
    fn the_ceiling_does_not_move_with_the_what_if_rows() {
        let with_rows = check(
            &measured(),
            Some(&projection()),
            None,
            None,
            ClientFigures::default(),
        )
        .expect("check");
        let mut p = projection();
        p.rows.clear();
        let without =
            check(&measured(), Some(&p), None, None, ClientFigures::default()).expect("check");
        assert_eq!(with_rows.ceiling_tok_per_s, without.ceiling_tok_per_s);
        // a "now" row far below the observed batch scales the rows up past the fit's limit
        let mut p = projection();
        p.rows[0].tok_per_s = 500.0;
        let e = check(&measured(), Some(&p), None, None, ClientFigures::default()).expect("check");
        let (_, best) = e.best_change.expect("best");
        assert!((best - 888.0 * 727.0 / 500.0).abs() < 0.1, "{best}");
        // fp8, the fastest change that fits (1460 tok/s), is above the fit's limit (1329)
        let ceiling = e.ceiling_tok_per_s.expect("ceiling");
        assert!((ceiling - 1004.0 * 727.0 / 500.0).abs() < 0.1, "{ceiling}");
    }

    #[test]
    fn without_a_fit_or_a_target_there_is_no_answer() {
        assert!(check(&measured(), None, None, None, ClientFigures::default()).is_none());
        let e = check(
            &measured(),
            Some(&projection()),
            None,
            None,
            ClientFigures::default(),
        )
        .expect("check");
        assert_eq!((e.reach, e.expected_tok_per_s), (None, None));
    }

    /// Requests held back below a pool with room (b1 scenario: a conservative scheduler runs
    /// ~65 where today's pool holds ~109): filling today's pool is a change that fits, and the
    /// answer names it when it gets there before any memory change does.
    #[test]
    fn filling_todays_pool_is_a_change_that_fits() {
        let fill = crate::recommend::Fill {
            concurrency: 109.0,
            tok_per_s: 1000.0,
            gain_pct: 0.0,
            extrapolated: false,
            now: (44.0, 770.0),
        };
        // on the measured scale: 1000 x 727 / 770 (the fit's rate at today's batch)
        let at = 1000.0 * measured().value / 770.0;
        let e = check(
            &measured(),
            Some(&projection()),
            Some(fill),
            Some(Expectation::TokPerS(at - 1.0)),
            ClientFigures::default(),
        )
        .expect("check");
        assert_eq!(
            e.reach,
            Some(Reach::ByChange {
                change: FILL_LABEL.into(),
                alters_outputs: false
            })
        );
        let (label, rate) = e.best_change.expect("best");
        assert_eq!(label, FILL_LABEL);
        assert!((rate - at).abs() < 1e-9, "{rate}");
        // a pool already as full as the run (no gain over the measured rate): no such change
        let flat = crate::recommend::Fill {
            tok_per_s: 770.0,
            ..fill
        };
        let e = check(
            &measured(),
            Some(&projection()),
            Some(flat),
            None,
            ClientFigures::default(),
        )
        .expect("check");
        assert_ne!(e.best_change.map(|b| b.0), Some(FILL_LABEL.to_string()));
    }
}
