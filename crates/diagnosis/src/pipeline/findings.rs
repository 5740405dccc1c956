//! The findings stage: the verdict's own findings, then every registered finding rule's
//! (`rules::FINDING_RULES`, in its order), most important first.

use super::vote::Vote;
use crate::evidence::view::SchedulerView;
use crate::narrative;
use crate::report::{Bottleneck, Finding};
use crate::rules::ramp_only::RampOnly;
use crate::rules::retraction::Retraction;
use crate::rules::{self, Input, Rule};
use crate::verdict::Reason;

/// The rule facts that later stages use beside the findings.
pub(super) struct Found<'a> {
    /// The verdict's held admission, else (a weak vote) the first rank where admission is held.
    pub(super) held: Option<(&'a SchedulerView<'a>, rules::held_admission::Facts)>,
    /// `retraction`'s facts.
    pub(super) retraction: Option<rules::retraction::Facts>,
    /// `ramp_only`'s facts.
    pub(super) ramp: Option<rules::ramp_only::Facts>,
}

/// The verdict's findings, then every finding rule's, most important first, added to
/// `findings`.
pub(super) fn findings<'a>(
    input: &Input<'a>,
    vote: &Vote<'a>,
    findings: &mut Vec<Finding>,
) -> Found<'a> {
    let (views, capacity, retractions) = (input.views, input.capacity, input.retractions);
    let (bottleneck, carrier) = (vote.bottleneck, vote.carrier);
    let Vote {
        slow_decode,
        slow_prefill,
        ..
    } = vote;
    if let Some((v, r)) = carrier {
        findings.extend(narrative::bottleneck(
            v,
            r,
            capacity,
            retractions,
            input.timeline_range(v.tl),
        ));
        // a prefill budget that admits requests slowly is its own finding even when another
        // limit names the verdict (one request per prefill pass fills a cap more slowly); not
        // when the pool fills as the queue is admitted: a faster prefill only reaches it sooner
        if !matches!(
            r,
            Reason::PrefillLimit(_)
                | Reason::KvCache(rules::kv_cache_bound::Pattern::FillsAsAdmitted(_))
        ) && let Some(f) = rules::prefill_limit::check(v, capacity)
        {
            findings.extend(narrative::bottleneck(
                v,
                &Reason::PrefillLimit(f),
                capacity,
                retractions,
                input.timeline_range(v.tl),
            ));
        }
    }
    // the verdict's own facts, else (a weak vote) the first rank where admission is held
    let held = match carrier {
        Some((v, Reason::HeldAdmission(f))) => Some((v, *f)),
        Some((_, Reason::QueuedUnexplained)) | None => views
            .iter()
            .find_map(|v| rules::held_admission::check(v, capacity).map(|f| (v, f))),
        _ => None,
    };
    findings.extend(
        held.as_ref()
            .map(|(v, f)| rules::held_admission::finding(f, input.timeline_range(v.tl))),
    );
    // In a stall the crawl is a symptom of the hang, reported by the stall findings.
    if bottleneck != Bottleneck::Stall {
        findings.extend(slow_decode.as_ref().map(rules::decode_compute::finding));
    }
    findings.extend(slow_prefill.as_ref().map(rules::prefill_compute::finding));
    // every registered rule's findings, in the registry's order; the rules whose facts the
    // later stages read are checked once, here, for their findings and those stages
    let retraction = rules::retraction::check(input);
    let ramp = rules::ramp_only::check(input);
    for r in rules::FINDING_RULES {
        match r.name {
            Retraction::NAME => {
                findings.extend(retraction.iter().map(|f| Retraction::finding(f, input)))
            }
            RampOnly::NAME => findings.extend(ramp.iter().map(|f| RampOnly::finding(f, input))),
            _ => findings.extend((r.run)(input)),
        }
    }
    Found {
        held,
        retraction,
        ramp,
    }
}
