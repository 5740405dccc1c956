//! # `hicache_storage`: what HiCache's storage tier served
//!
//! **What it detects.** HiCache's storage-tier lines (`sglang_log::alarms::HiCacheLine`): the
//! backend (`Creating storage backend 'mooncake'`), prefetches started (`Prefetching N pages
//! for request …`), completed (`Prefetch … completed with N tokens`) and revoked (`Revoking
//! prefetch for request … due to insufficient hits (N)`), counted over the run.
//!
//! **Why it matters.** A storage tier (L3: Mooncake, 3FS, a file store) only pays when a
//! prompt's prefix is found there and arrives before the request runs. SGLang queries the
//! store first: with fewer hits than the prefetch threshold the prefetch is revoked (the store
//! held too little); with enough it starts (`Prefetching N pages …`: the store holds them).
//! A started prefetch that ends with 0 tokens was cut short: under the `best_effort` prefetch
//! policy (the default) a request is scheduled as soon as it can run, without waiting for its
//! prefetch, and the prompt is prefilled on the GPU as if there were no tier. Either way the
//! storage tier, like the host tier, extends the prefix cache: it never lets more requests
//! decode at once.
//!
//! **Evidence it needs.** The prefetch lines (debug level upstream; printed by builds that log
//! them at info).
//!
//! **What to change.** Prefetches that found the prefix but loaded nothing: the prefetch policy
//! (`--hicache-storage-prefetch-policy wait_complete` or `timeout` waits for the pages),
//! worth it only when loading from the store is faster than prefilling those tokens again.
//! Revoked prefetches: whether the prompts share prefixes and the store was written
//! (`--hicache-write-policy`, earlier requests' backups). A fuller store only shortens
//! prefill.
//!
//! **Source.** SGLang `mem_cache/hiradix_cache.py` (`prefetch_from_storage`,
//! `check_prefetch_progress`), `managers/cache_controller.py` (`prefetch_thread_func`, the
//! `prefetch_threshold` check).

use crate::evidence::alarms::HiCachePrefetches;
use crate::narrative::words::finding;
use crate::report::{Confidence, Figure, Finding, FindingKind, SourceRange, Unit};
use crate::rules::{Input, Rule};

/// What the rule saw.
#[derive(Clone, Debug, PartialEq)]
pub struct Facts {
    /// The storage tier's prefetches as the log counts them.
    pub prefetches: HiCachePrefetches,
    /// The first prefetch line.
    pub evidence: Option<SourceRange>,
    /// `hicache_storage_prefetch_policy` from the server's arguments, when printed.
    pub policy: Option<String>,
}

/// The rule.
pub fn check(input: &Input<'_>) -> Option<Facts> {
    let h = &input.ev.alarms.hicache;
    (h.started + h.completed + h.revoked > 0).then(|| Facts {
        prefetches: h.clone(),
        evidence: h.first.map(|l| input.line(l)),
        policy: input
            .ev
            .startup
            .arg("hicache_storage_prefetch_policy")
            .map(str::to_string),
    })
}

/// The rule as [`super::FINDING_RULES`] runs it: [`check`], then the finding in its words.
#[derive(Clone, Copy, Debug)]
pub struct HiCacheStorage;

impl Rule for HiCacheStorage {
    const NAME: &'static str = "hicache_storage";
    type Facts = Facts;

    fn check(input: &Input<'_>) -> impl IntoIterator<Item = Facts> {
        check(input)
    }

    fn finding(f: &Facts, _input: &Input<'_>) -> Finding {
        let tier = f
            .prefetches
            .backend
            .as_deref()
            .map(|b| format!("HiCache's storage tier ({b})"))
            .unwrap_or_else(|| "HiCache's storage tier".to_string());
        let nothing = f.prefetches.tokens_loaded == 0;
        let title = match (nothing, f.prefetches.started > 0) {
            (true, true) => format!(
                "{tier} held prefixes, but its prefetches loaded nothing before the requests ran"
            ),
            (true, false) => format!("{tier} held too little to prefetch"),
            (false, _) => format!("{tier} loaded {} prefix tokens", f.prefetches.tokens_loaded),
        };
        let plural = |n: u64| if n == 1 { "" } else { "es" };
        let mut detail = format!(
            "{} prefetch{} ended with {} tokens loaded in all ({} with 0 tokens; a revoked prefetch ends too).",
            f.prefetches.completed,
            plural(f.prefetches.completed),
            f.prefetches.tokens_loaded,
            f.prefetches.completed_empty,
        );
        if f.prefetches.revoked > 0 {
            detail.push_str(&format!(
                " {} prefetch{} revoked: the store held fewer of the prompt's tokens than the prefetch threshold.",
                f.prefetches.revoked,
                if f.prefetches.revoked == 1 { " was" } else { "es were" }
            ));
        }
        if f.prefetches.started > 0 {
            let policy = f.policy.as_deref().unwrap_or("best_effort");
            detail.push_str(&format!(
                " {} prefetch{} started (SGLang starts one only when the store's hits reach the threshold: the store held those prefixes).",
                f.prefetches.started,
                plural(f.prefetches.started)
            ));
            if nothing {
                detail.push_str(&if policy == "best_effort" {
                    format!(
                        " They loaded nothing before their requests ran: under the {policy} prefetch policy{} a request is scheduled as soon as it can run, without waiting for its prefetch, and its prompt is prefilled on the GPU as without the tier. --hicache-storage-prefetch-policy wait_complete (or timeout) waits for the pages; worth it only when loading from the store is faster than prefilling those tokens again.",
                        if f.policy.is_none() { " (SGLang's default; the log prints no server_args)" } else { "" }
                    )
                } else {
                    format!(
                        " They loaded nothing even under the {policy} prefetch policy: the store's transfers did not complete (its own log lines say why)."
                    )
                });
            } else {
                detail.push_str(" The tokens they loaded skipped prefill.");
            }
        }
        detail.push_str(" A storage tier, like the host tier, extends the prefix cache only: it shortens prefill and never lets more requests decode at once.");
        finding(
            FindingKind::HiCacheStorage,
            title,
            detail,
            vec![
                Figure::new(
                    "prefetches completed",
                    f.prefetches.completed as f64,
                    Unit::Events,
                ),
                Figure::new(
                    "prefetches revoked",
                    f.prefetches.revoked as f64,
                    Unit::Events,
                ),
                Figure::new(
                    "tokens loaded",
                    f.prefetches.tokens_loaded as f64,
                    Unit::Tokens,
                ),
            ],
            f.evidence.iter().cloned().collect(),
            Confidence::High,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{excerpt, whole, with_input};

    const MOONCAKE: &str =
        "real-2/104-hicache-mooncake-l3-llama3b-mem02-single-long-req-usage097-queue1.log";

    /// real-2/104: Mooncake behind HiCache; a prefetch found the prefix (line 106) but ended
    /// with 0 tokens (line 70), another was revoked for 9 hits (line 108).
    #[test]
    fn the_mooncake_tier_loaded_nothing() {
        with_input(&whole(MOONCAKE), |i| {
            let f = check(i).expect("prefetch lines");
            assert_eq!(f.prefetches.backend.as_deref(), Some("mooncake"));
            assert_eq!(
                (
                    f.prefetches.started,
                    f.prefetches.completed,
                    f.prefetches.completed_empty
                ),
                (1, 2, 2)
            );
            assert_eq!((f.prefetches.tokens_loaded, f.prefetches.revoked), (0, 1));
            assert_eq!(f.evidence.as_ref().map(|e| e.first_line), Some(70));
            let w = HiCacheStorage::finding(&f, i);
            // line 106's prefetch found 24316 pages in the store; line 70 ended it with 0 tokens
            // (best_effort: the request ran without waiting); line 108's was revoked (9 hits)
            assert_eq!(
                w.title,
                "HiCache's storage tier (mooncake) held prefixes, but its prefetches loaded nothing before the requests ran"
            );
            assert!(w.detail.contains("1 prefetch was revoked"), "{}", w.detail);
            assert!(w.detail.contains("wait_complete"), "{}", w.detail);
            assert!(!w.detail.contains("share prefixes"), "{}", w.detail);
        });
    }

    /// A completed prefetch that loaded tokens (the same log's line, with 4096 loaded).
    #[test]
    fn a_prefetch_that_loaded_tokens() {
        let log = "[2026-02-09 14:45:22] Prefetch 2547616e604d4756af454a269cb783fb completed with 4096 tokens\n";
        with_input(log, |i| {
            let f = check(i).expect("a prefetch");
            assert_eq!(
                (
                    f.prefetches.completed,
                    f.prefetches.completed_empty,
                    f.prefetches.tokens_loaded
                ),
                (1, 0, 4096)
            );
            assert_eq!(f.prefetches.backend, None);
            let w = HiCacheStorage::finding(&f, i);
            assert_eq!(w.title, "HiCache's storage tier loaded 4096 prefix tokens");
        });
    }

    /// The start-up lines alone (the backend, no prefetch) and a log without HiCache: none.
    #[test]
    fn no_prefetch_no_finding() {
        with_input(&excerpt(MOONCAKE, 1..=48), |i| assert_eq!(check(i), None));
        with_input(
            &excerpt("real/019-i5429-2x8h100-dsr1-dp-attn-queue990.log", 1..=5),
            |i| assert_eq!(check(i), None),
        );
    }
}
