//! The diagnosis, top to bottom: evidence → views → rules → verdict → findings → report.

use crate::context::Context;
use crate::evidence::Evidence;
use crate::evidence::view;
use crate::narrative;
use crate::recommend::{self, Load};
use crate::report::*;
use crate::rules::kv_cache_bound::Pattern;
use crate::rules::{self, Input};
use crate::verdict::{self, Overrides, Reason};
use crate::{bench, capacity, projection};

mod client;
mod headline;
mod inputs;
mod runs;
mod summary;

use client::{benchmark_findings, client_findings};
use headline::incident_of;
use inputs::{dp_size, dp_totals, input_summaries, missing};
use runs::server_runs;
use summary::{metrics_summary, scheduler_summary};

/// Diagnose from log evidence alone.
pub fn diagnose(ev: &Evidence) -> Report {
    diagnose_with(ev, &Context::default())
}

/// Diagnose from log evidence and whatever else the context holds (server info, `/metrics`
/// polls, GPU memory, model config, client records).
pub fn diagnose_with(ev: &Evidence, ctx: &Context) -> Report {
    // Evidence: a polled server stands for the logs when they hold no batch lines; files that
    // repeat or continue each other are joined.
    let with_metrics;
    let ev = match &ctx.metrics {
        Some(m) if ev.schedulers.is_empty() && !m.samples.is_empty() => {
            with_metrics = ev.with_metrics_scheduler(m);
            &with_metrics
        }
        _ => ev,
    };
    let (consolidated, joins) = ev.consolidated();
    let ev = &*consolidated;
    let capacity = view::capacity_summary(ev, ctx);
    let views = view::views(ev);
    let span_s = view::longest_span_s(&views);
    let retractions = view::retraction_summary(ev, span_s);
    let input = Input {
        ev,
        views: &views,
        capacity: &capacity,
        retractions: &retractions,
    };

    // The verdict: each scheduler's, then the server's.
    let reasons: Vec<Reason> = views
        .iter()
        .map(|v| verdict::classify(v, &capacity))
        .collect();
    let slow_decode = rules::decode_compute::check(&views);
    let slow_prefill = rules::prefill_compute::check(&input);
    let long_stall = rules::stall::has_long_stall(&views);
    // Events that end or block serving: the verdict without batch lines, and a crash, OOM or
    // watchdog after them too (`verdict::ENDS_SERVING`).
    let oom = rules::oom::check(&input);
    let crash = rules::scheduler_exception::check(&input);
    let incomplete = rules::startup_incomplete::check(&input);
    let watchdog = rules::watchdog::check(&input);
    let rejected = rules::rejected_requests::check(&input);
    let transfer = rules::kv_transfer::check(&input);
    let votes: Vec<(Bottleneck, u64)> = views
        .iter()
        .zip(&reasons)
        .map(|(v, r)| (r.bottleneck(), v.steady.len() as u64))
        .collect();
    let overrides = Overrides {
        slow_decode: slow_decode.is_some(),
        slow_prefill: slow_prefill.is_some(),
        long_stall,
        watchdog: ev.watchdog.count > 0,
        retractions: retractions.events > 0,
        oom: oom.is_some(),
        crash: crash.is_some(),
        startup_incomplete: incomplete
            .as_ref()
            .is_some_and(|f| f.before_pool || f.in_capture),
        startup_capacity: ev.startup.max_total_num_tokens.is_some() && ev.benchmarks.is_empty(),
        rejections: rejected.is_some(),
        transfer_failed: transfer.is_some(),
    };
    let bottleneck = verdict::decide(&votes, overrides);
    // A hung server hangs on every rank: a rank whose own lines look weak (client bound,
    // inconclusive) shows the stall in the table too, as the headline does.
    let row_verdict = |r: &Reason| match bottleneck {
        Bottleneck::Stall => verdict::decide(&[(r.bottleneck(), 1)], overrides),
        _ => r.bottleneck(),
    };
    let carrier = views
        .iter()
        .zip(&reasons)
        .find(|(_, r)| r.bottleneck() == bottleneck);
    // the KV-bound pattern's facts, for the headline and the plans
    let (pool_fill, long_requests) = match carrier.map(|c| c.1) {
        Some(Reason::KvCache(Pattern::FillsAsAdmitted(f))) => (Some(*f), None),
        Some(Reason::KvCache(Pattern::FewLongRequests(l))) => (None, Some(*l)),
        _ => (None, None),
    };

    // Findings, most important first.
    let mut findings = Vec::new();
    if let Some((v, r)) = carrier {
        findings.extend(narrative::bottleneck(
            v,
            r,
            &capacity,
            &retractions,
            input.timeline_range(v.tl),
        ));
        // a prefill budget that admits requests slowly is its own finding even when another
        // limit names the verdict (one request per prefill pass fills a cap more slowly); not
        // when the pool fills as the queue is admitted: a faster prefill only reaches it sooner
        if !matches!(
            r,
            Reason::PrefillLimit(_)
                | Reason::KvCache(rules::kv_cache_bound::Pattern::FillsAsAdmitted(_))
        ) && let Some(f) = rules::prefill_limit::check(v, &capacity)
        {
            findings.extend(narrative::bottleneck(
                v,
                &Reason::PrefillLimit(f),
                &capacity,
                &retractions,
                input.timeline_range(v.tl),
            ));
        }
    }
    // the verdict's own facts, else (a weak vote) the first rank where admission is held
    let held = match carrier {
        Some((v, Reason::HeldAdmission(f))) => Some((v, *f)),
        Some((_, Reason::QueuedUnexplained)) | None => views
            .iter()
            .find_map(|v| rules::held_admission::check(v, &capacity).map(|f| (v, f))),
        _ => None,
    };
    findings.extend(
        held.as_ref()
            .map(|(v, f)| narrative::held_admission(f, input.timeline_range(v.tl))),
    );
    // In a stall the crawl is a symptom of the hang, reported by the stall findings.
    if bottleneck != Bottleneck::Stall {
        findings.extend(slow_decode.as_ref().map(narrative::decode_compute));
    }
    findings.extend(slow_prefill.as_ref().map(narrative::prefill_compute));
    findings.extend(
        rules::prefill_interference::check(&input)
            .map(|f| narrative::prefill_interference(&f, &capacity)),
    );
    findings.extend(rules::stall::check(&input).iter().map(narrative::stall));
    let retraction = rules::retraction::check(&input);
    findings.extend(
        retraction
            .as_ref()
            .map(|f| narrative::retraction(f, &retractions)),
    );
    findings.extend(oom.as_ref().map(narrative::oom));
    findings.extend(rejected.as_ref().map(narrative::rejected_requests));
    findings.extend(crash.as_ref().map(narrative::scheduler_exception));
    findings.extend(watchdog.as_ref().map(narrative::watchdog));
    findings.extend(incomplete.as_ref().map(narrative::startup_incomplete));
    // Startup lines only: the capacity the startup fixed is what can be judged.
    if views.iter().all(|v| v.tl.decode.pushed() == 0) {
        findings.extend(
            rules::cuda_graph::startup_coverage(&input)
                .as_ref()
                .map(narrative::cuda_graph_coverage),
        );
        findings.extend(
            rules::tiny_pool::few_full_context(&input)
                .as_ref()
                .map(narrative::few_full_context),
        );
    }
    findings.extend(transfer.as_ref().map(narrative::kv_transfer));
    findings.extend(rules::moe_config::check(&input).map(|f| narrative::moe_config(&f)));
    findings.extend(rules::prefix_reuse::check(&input).map(|f| narrative::prefix_reuse(&f)));
    findings.extend(rules::idle_window::check(&input).map(|f| narrative::idle_window(&f)));
    findings.extend(rules::cuda_graph::check(&input).map(|f| narrative::cuda_graph(&f)));
    findings.extend(rules::speculative::check(&input).map(|f| narrative::speculative(&f)));
    findings.extend(rules::dp_imbalance::check(&views).map(|f| narrative::dp_imbalance(&f)));
    let ramp = rules::ramp_only::check(&input);
    findings.extend(ramp.as_ref().map(narrative::ramp_only));
    findings.extend(rules::tiny_pool::check(&input).map(|f| narrative::tiny_pool(&f)));

    // The server's rate and the client's view of it.
    let steady_gen_throughput = view::steady_throughput(&views);
    let primary = views.iter().max_by_key(|v| v.tl.decode.pushed());
    let benchmark_runs = bench::collect_runs(ev, ctx);
    let client = if benchmark_runs.is_empty() || bench::clients_have_times(ctx) {
        client_findings(ctx, primary, steady_gen_throughput.as_ref(), &mut findings)
    } else {
        bench::client_summary(&benchmark_runs, steady_gen_throughput.as_ref())
    };
    let server_cap =
        capacity
            .max_running_requests
            .map(|per_rank| rules::bench_concurrency_limit::ServerCap {
                per_rank,
                dp_ranks: dp_size(ev, ctx).unwrap_or(0).max(
                    views
                        .iter()
                        .filter_map(|v| v.key.dp)
                        .max()
                        .map_or(1, |m| m + 1),
                ),
            });
    benchmark_findings(&benchmark_runs, bottleneck, server_cap, &mut findings);

    // Capacity, projection, recommendations.
    let mut not_concluded = Vec::new();
    let cached_share = primary.and_then(|v| {
        let agg = &v.tl.agg;
        let total = agg.prefill_cached_tokens + agg.prefill_new_tokens;
        (total > 0).then(|| agg.prefill_cached_tokens as f64 / total as f64)
    });
    // The KV tokens a running request holds where the pool binds: what sizes each what-if
    // row's decode concurrency when no records give the requests' lengths.
    let observed_held = primary
        .filter(|v| v.kv_full())
        .and_then(|v| Some(v.usage_per_request()? * capacity.max_total_num_tokens? as f64));
    let capacity_model =
        match capacity::capacity_model(ev, ctx, &capacity, cached_share, observed_held) {
            Ok(b) => {
                let mut cm = b.model;
                cm.pre_source = narrative::memory_source(&b.pre);
                cm.free_now_source = b.free_now.as_ref().map(narrative::memory_source);
                if let capacity::CellSource::LogDisagreesWithConfig { config, log } = b.cell {
                    not_concluded.push(narrative::not_concluded(
                        NotConcludedReason::ModelConfigDisagrees,
                        Some(&narrative::cell_disagreement(config, log)),
                    ));
                }
                findings.extend(narrative::capacity(&cm));
                Some(cm)
            }
            Err(why) => {
                not_concluded.push(narrative::not_concluded(
                    NotConcludedReason::NoWhatIfTable,
                    Some(&why.to_string()),
                ));
                None
            }
        };
    // a drain's lines change batch, context and graph mode together: no fit, no ceiling
    let projection = primary
        .filter(|_| bottleneck != Bottleneck::Drain)
        .and_then(|v| projection::projection(v.tl.decode.samples(), capacity_model.as_ref()));
    // the scheduler behind the verdict, as in the headline (else the busiest)
    let load = carrier.map(|c| c.0).or(primary).and_then(|v| {
        Some(Load {
            running_median: v.running.median?,
            usage_median: v.usage.median?,
            usage_p90: v.usage.p90,
            usage_per_request: v.usage_per_request(),
            max_running_requests: capacity.max_running_requests.filter(|&c| c > 0),
        })
    });
    let levers: Vec<(Lever, FindingKind)> = findings
        .iter()
        .flat_map(|f| f.levers.iter().map(|&l| (l, f.kind)))
        .collect();
    // an MLA model at TP > 1 without DP attention: every rank holds the whole latent KV
    let kv_replicated_by_tp = {
        let par = capacity::parallel(ev, ctx);
        let mla = ctx.model.as_ref().map_or(ev.startup.kv_alloc_mla, |m| {
            m.config.attention_kind() == kv_capacity::AttentionKind::Mla
        });
        // lines tagged with DP ranks: DP (attention) is already on, whatever the args say
        let dp_tagged = views.iter().any(|v| v.key.dp.is_some());
        (mla && par.tp_size > 1 && par.attn_tp_size.is_none() && !dp_tagged).then_some(par.tp_size)
    };
    let recommendations = recommend::plans(&recommend::Input {
        bottleneck,
        capacity: capacity_model.as_ref(),
        projection: projection.as_ref(),
        client: client.as_ref(),
        retractions: &retractions,
        retraction_material: retraction.as_ref().is_some_and(|f| f.material()),
        load,
        mem_fraction_static: capacity.mem_fraction_static,
        measured_tok_per_s: steady_gen_throughput.as_ref().map(|r| r.value),
        levers: &levers,
        long_requests: long_requests.is_some(),
        pd_decode: carrier.is_some_and(|(v, _)| v.is_pd_decode()),
        kv_replicated_by_tp,
        cap_advice: recommend::CapAdvice {
            client: server_cap.and_then(|cap| {
                Some(recommend::ClientLimit {
                    limit: benchmark_runs.last()?.summary.max_concurrency?,
                    server_total: cap.total(),
                    per_rank: cap.per_rank,
                    dp_ranks: cap.dp_ranks,
                })
            }),
            graph_sizes_listed: rules::cuda_graph::graph_sizes_listed(&input),
            graph_max_bs: rules::cuda_graph::graph_max_bs(&input).filter(|&g| {
                capacity
                    .max_running_requests
                    .is_some_and(|c| c > 0 && g <= c)
            }),
        },
    })
    .iter()
    .map(narrative::recommendation)
    .collect();

    let inputs = input_summaries(ev);
    not_concluded.extend(missing(
        ev,
        ctx,
        &inputs,
        &capacity,
        steady_gen_throughput
            .as_ref()
            .is_some_and(|r| r.window_s > 0.0),
        client.as_ref(),
        benchmark_runs.is_empty(),
    ));
    // What went wrong with the inputs themselves comes first: it explains the rest.
    not_concluded.sort_by_key(|n| {
        !matches!(
            n.reason,
            NotConcludedReason::EmptyInput { .. } | NotConcludedReason::SourceError
        )
    });

    let mut sources: Vec<String> = joins.iter().map(narrative::join_note).collect();
    sources.extend(narrative::sources(ctx));
    sources.extend(
        benchmark_runs
            .iter()
            .filter(|r| ev.sources.iter().any(|s| s.name == r.source.source))
            .map(|r| {
                format!(
                    "benchmark summary: {}:{}-{}",
                    r.source.source, r.source.first_line, r.source.last_line
                )
            }),
    );

    // The headline: the verdict and the figures of the scheduler that carries it.
    let dp_ranks = views.iter().filter(|v| v.key.dp.is_some()).count();
    let dp_totals = dp_totals(ev, ctx, &views);
    let a = carrier.map(|(v, _)| v);
    let mut headline = Headline {
        verdict: bottleneck,
        label: String::new(),
        summary: String::new(),
        text: String::new(),
        running_median: a.and_then(|a| a.running.median),
        running_peak: a.and_then(|a| a.running.max),
        running_total: (dp_ranks > 1).then(|| views.iter().filter_map(|v| v.running.median).sum()),
        dp_ranks,
        dp_ranks_of: dp_totals.as_ref().and_then(|t| {
            t.dp_size
                .filter(|&n| n as usize > t.ranks)
                .or(t.ranks_at_least.filter(|_| t.dp_size.is_none()))
        }),
        queued_median: a.and_then(|a| a.queued.median),
        queued_peak: a.and_then(|a| a.queued.max),
        refill_queue_peak: a
            .filter(|a| {
                a.queued.max.is_some_and(|q| q < 1.0)
                    && a.steady_decode.iter().any(|d| d.queue.is_some())
            })
            .and_then(|a| a.steady_prefill.iter().filter_map(|p| p.queue).max())
            .filter(|&q| q >= 1)
            .map(|q| q as f64),
        token_usage_median: a.and_then(|a| a.usage.median),
        gen_throughput: steady_gen_throughput.clone(),
        busy_gen_tok_per_s: a.and_then(|a| a.gen_tps.median),
        ramp_only: ramp.map(|r| r.ramp),
        retraction_events: (a.is_none()
            && bottleneck == Bottleneck::KvCacheBound
            && retractions.events > 0)
            .then_some(retractions.events),
        slow_prefill: slow_prefill.map(|p| p.slow),
        pd_prefill_tok_per_s: None,
        pd_prefill_tokens: None,
        incident: incident_of(
            bottleneck,
            oom.as_ref(),
            crash.as_ref(),
            watchdog.as_ref(),
            incomplete.as_ref(),
            transfer.as_ref(),
            views.iter().any(|v| !v.steady.is_empty()),
        ),
        startup: matches!(
            bottleneck,
            Bottleneck::StartupOnly | Bottleneck::StartupIncomplete
        )
        .then(|| StartupCapacity {
            pool_tokens: capacity.max_total_num_tokens,
            max_running_requests: capacity.max_running_requests,
            context_len: capacity.context_len,
            graph_max_bs: rules::cuda_graph::graph_max_bs(&input),
        }),
        benchmark_not_streamed: benchmark_runs
            .last()
            .is_some_and(|r| rules::bench_not_streamed::check(r).is_some()),
        held_admission: held
            .as_ref()
            .filter(|_| {
                matches!(
                    bottleneck,
                    Bottleneck::AdmissionHeld | Bottleneck::Inconclusive
                )
            })
            .map(|(_, f)| HeldAdmissionFacts {
                prefill_gap_iters: f.prefill_gap_iters,
                prefill_gap_s: f.prefill_gap_s,
            }),
        pd_decode_transfer: a
            .filter(|_| bottleneck == Bottleneck::ClientBound)
            .and_then(|a| {
                let t: Vec<f64> = a
                    .steady_decode
                    .iter()
                    .filter_map(|d| d.transfer_req)
                    .map(|x| x as f64)
                    .collect();
                (!t.is_empty()).then(|| t.iter().sum::<f64>() / t.len() as f64)
            }),
        pool_fill,
        long_requests,
        one_per_pass: matches!(
            carrier.map(|c| c.1),
            Some(Reason::PrefillLimit(f)) if f.one_per_pass.is_some()
        ),
        drain: match carrier.map(|c| c.1) {
            Some(Reason::Drain(f)) => Some((f.from, f.to)),
            _ => None,
        },
        at_cap_share: match carrier.map(|c| c.1) {
            Some(Reason::RunningCap(l)) => Some(l.share()),
            _ => None,
        },
        rejected: rejected
            .as_ref()
            .filter(|_| bottleneck == Bottleneck::RequestsRejected)
            .map(|f| RejectedRequests {
                client_errors: f.client_errors,
                server_errors: f.server_errors,
                context_len: f.context.map(|c| c.context_len),
                largest_requested: f.context.and_then(|c| c.largest_requested),
            }),
    };
    if matches!(
        bottleneck,
        Bottleneck::ClientBound | Bottleneck::Inconclusive | Bottleneck::PdTransferBound
    ) && let Some((tokens, rate)) = rules::pd_transfer::prefill_instance(&input)
    {
        headline.pd_prefill_tokens = Some(tokens);
        headline.pd_prefill_tok_per_s = Some(rate);
    }
    let (label, summary) = narrative::headline(&headline, long_stall, &benchmark_runs);
    headline.text = format!("{label}: {summary}");
    (headline.label, headline.summary) = (label, summary);

    let figures = crate::expectation::ClientFigures {
        printed_req_per_s: client.as_ref().and_then(|c| c.printed_req_per_s),
        now_req_per_s: client.as_ref().and_then(|c| {
            c.windowed_req_per_s
                .as_ref()
                .or(c.implied_req_per_s.as_ref())
                .map(|r| r.value)
        }),
        mean_completion_tokens: client.as_ref().and_then(|c| c.mean_completion_tokens),
    };
    let mut expectation = steady_gen_throughput
        .as_ref()
        .and_then(|m| crate::expectation::check(m, projection.as_ref(), ctx.expectation, figures));
    if let Some(e) = expectation.as_mut() {
        e.kv_replicated_by_tp = kv_replicated_by_tp;
        e.text = narrative::expectation(e);
    } else if ctx.expectation.is_some() {
        // asked and not answered: said, not silently dropped
        not_concluded.push(narrative::not_concluded(
            NotConcludedReason::ExpectationUnanswered {
                has_rate: steady_gen_throughput.is_some(),
            },
            None,
        ));
    }
    let mut report = Report {
        schema_version: SCHEMA_VERSION,
        inputs,
        bottleneck,
        headline,
        schedulers: views
            .iter()
            .zip(&reasons)
            .map(|(v, r)| scheduler_summary(ev, v, row_verdict(r)))
            .collect(),
        dp_totals,
        steady_gen_throughput,
        capacity,
        retractions,
        findings,
        not_concluded,
        client,
        benchmark_runs,
        capacity_model,
        projection,
        recommendations,
        sources,
        server_metrics: ctx.metrics.as_ref().and_then(metrics_summary),
        expectation,
        runs: None,
    };
    narrative::fill_methods(&mut report);
    report.runs = server_runs(ev, &report);
    report
}
