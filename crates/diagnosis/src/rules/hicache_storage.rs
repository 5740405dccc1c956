//! # `hicache_storage`: what HiCache's storage tier served
//!
//! **What it detects.** HiCache's storage-tier lines (`sglang_log::alarms::HiCacheLine`): the
//! backend (`Creating storage backend 'mooncake'`), prefetches started (`Prefetching N pages
//! for request …`), completed (`Prefetch … completed with N tokens`) and revoked (`Revoking
//! prefetch for request … due to insufficient hits (N)`), counted over the run.
//!
//! **Why it matters.** A storage tier (L3: Mooncake, 3FS, a file store) only pays when a
//! prompt's prefix is found there: a prefetch that completes with 0 tokens, or is revoked
//! because the store held fewer tokens than the prefetch threshold, loaded nothing, and the
//! prompt was prefilled on the GPU as if there were no tier. Either way the storage tier, like
//! the host tier, extends the prefix cache: it never lets more requests decode at once.
//!
//! **Evidence it needs.** The prefetch lines (debug level upstream; printed by builds that log
//! them at info).
//!
//! **What to change.** When nothing was loaded: whether the prompts share prefixes at all,
//! whether the store was written (`--hicache-write-policy`, the backup of earlier requests),
//! and the prefetch threshold (`--hicache-storage-prefetch-policy`); a fuller store only
//! shortens prefill.
//!
//! **Source.** SGLang `mem_cache/hiradix_cache.py` (`prefetch_from_storage`,
//! `check_prefetch_progress`), `managers/cache_controller.py` (`prefetch_thread_func`, the
//! `prefetch_threshold` check).

use crate::narrative::words::finding;
use crate::report::{Confidence, Figure, Finding, FindingKind, SourceRange, Unit};
use crate::rules::{Input, Rule};

/// What the rule saw.
#[derive(Clone, Debug, PartialEq)]
pub struct Facts {
    /// The storage backend, when the start-up names it.
    pub backend: Option<String>,
    /// Prefetches started.
    pub started: u64,
    /// Prefetches completed.
    pub completed: u64,
    /// Completed prefetches that loaded nothing.
    pub completed_empty: u64,
    /// Tokens the completed prefetches loaded. Unit: tokens.
    pub tokens_loaded: u64,
    /// Prefetches revoked for too few hits.
    pub revoked: u64,
    /// The first prefetch line.
    pub evidence: Option<SourceRange>,
}

/// The rule.
pub fn check(input: &Input<'_>) -> Option<Facts> {
    let h = &input.ev.alarms.hicache;
    (h.started + h.completed + h.revoked > 0).then(|| Facts {
        backend: h.backend.clone(),
        started: h.started,
        completed: h.completed,
        completed_empty: h.completed_empty,
        tokens_loaded: h.tokens_loaded,
        revoked: h.revoked,
        evidence: h.first.map(|l| input.line(l)),
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
            .backend
            .as_deref()
            .map(|b| format!("HiCache's storage tier ({b})"))
            .unwrap_or_else(|| "HiCache's storage tier".to_string());
        let nothing = f.tokens_loaded == 0;
        let title = if nothing {
            format!("{tier} loaded no prefix tokens")
        } else {
            format!("{tier} loaded {} prefix tokens", f.tokens_loaded)
        };
        let revoked = match f.revoked {
            0 => String::new(),
            n => format!(
                ", {n} revoked because the store held fewer tokens than the prefetch threshold"
            ),
        };
        let reading = if nothing {
            " Every prompt token was prefilled on the GPU as without the tier: check that the prompts share prefixes and that the store was written (the write policy, earlier requests' backups)."
        } else {
            " Those tokens skipped prefill."
        };
        finding(
            FindingKind::HiCacheStorage,
            title,
            format!(
                "{} prefetch{} started, {} completed ({} with 0 tokens, {} tokens loaded in all){revoked}.{reading} A storage tier, like the host tier, extends the prefix cache only: it shortens prefill and never lets more requests decode at once.",
                f.started,
                if f.started == 1 { "" } else { "es" },
                f.completed,
                f.completed_empty,
                f.tokens_loaded,
            ),
            vec![
                Figure::new("prefetches completed", f.completed as f64, Unit::Events),
                Figure::new("prefetches revoked", f.revoked as f64, Unit::Events),
                Figure::new("tokens loaded", f.tokens_loaded as f64, Unit::Tokens),
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

    /// real-2/104: Mooncake behind HiCache; its prefetches loaded nothing (line 70 first).
    #[test]
    fn the_mooncake_tier_loaded_nothing() {
        with_input(&whole(MOONCAKE), |i| {
            let f = check(i).expect("prefetch lines");
            assert_eq!(f.backend.as_deref(), Some("mooncake"));
            assert_eq!((f.started, f.completed, f.completed_empty), (1, 2, 2));
            assert_eq!((f.tokens_loaded, f.revoked), (0, 1));
            assert_eq!(f.evidence.as_ref().map(|e| e.first_line), Some(70));
            let w = HiCacheStorage::finding(&f, i);
            assert_eq!(
                w.title,
                "HiCache's storage tier (mooncake) loaded no prefix tokens"
            );
            assert!(w.detail.contains("1 revoked"), "{}", w.detail);
        });
    }

    /// A completed prefetch that loaded tokens (the same log's line, with 4096 loaded).
    #[test]
    fn a_prefetch_that_loaded_tokens() {
        let log = "[2026-02-09 14:45:22] Prefetch 2547616e604d4756af454a269cb783fb completed with 4096 tokens\n";
        with_input(log, |i| {
            let f = check(i).expect("a prefetch");
            assert_eq!(
                (f.completed, f.completed_empty, f.tokens_loaded),
                (1, 0, 4096)
            );
            assert_eq!(f.backend, None);
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
