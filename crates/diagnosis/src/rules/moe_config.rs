//! # `moe_config`: the MoE kernels run with untuned configs
//!
//! **What it detects.** `Using default MoE kernel config. Performance might be sub-optimal!
//! Config file not found at …` (and `Using MoE kernel config with … Performance might be
//! sub-optimal!`), printed by each TP rank when it builds the fused MoE layer.
//!
//! **Why it matters.** SGLang's fused MoE Triton kernels pick their tile sizes from a config
//! file per GPU, expert shape and dtype; without one they run with a generic default that can
//! be several times slower on GPUs SGLang ships no file for (new AMD and consumer cards): every
//! MoE layer of every step pays it, whatever the batch.
//!
//! **Evidence it needs.** The warning lines (start-up).
//!
//! **What to change.** Tune the kernels for this GPU (SGLang's
//! `benchmark/kernels/fused_moe_triton/tuning_fused_moe_triton.py` writes the file the warning
//! names), or use a build that ships one.
//!
//! **Source.** SGLang `layers/moe/fused_moe_triton/fused_moe_triton_config.py`
//! (`get_moe_configs`: the warning when no config file is found).

use super::watchdog::{Facts, facts};
use crate::narrative::words::{failure, with_levers};
use crate::report::{Confidence, Finding, FindingKind, Lever};
use crate::rules::{Input, Rule};

/// The rule.
pub fn check(input: &Input<'_>) -> Option<Facts> {
    facts(input, &input.ev.moe_config_untuned)
}

/// The rule as [`super::FINDING_RULES`] runs it: [`check`], then the finding in its words.
#[derive(Clone, Copy, Debug)]
pub struct MoeConfig;

impl Rule for MoeConfig {
    const NAME: &'static str = "moe_config";
    type Facts = Facts;

    fn check(input: &Input<'_>) -> impl IntoIterator<Item = Facts> {
        check(input)
    }

    fn finding(f: &Facts, _input: &Input<'_>) -> Finding {
        let mut out = failure(
            f.count,
            &f.first_text,
            f.evidence.as_ref(),
            FindingKind::MoeConfigUntuned,
            "MoE kernels run with default configs, not tuned for this GPU",
            "SGLang found no tuned fused-MoE kernel config for this GPU, expert shape and dtype, and runs every MoE layer with a generic default, which can be several times slower. Tune the kernels for this GPU (SGLang's tuning_fused_moe_triton.py writes the file the warning names).",
        );
        out.confidence = Confidence::Medium;
        with_levers(out, &[Lever::MoeKernelConfig])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{excerpt, whole, with_input};

    const RDNA4: &str = "real-4/105-amd-2x-r9700-rdna4-tp2-coder30b-awq-no-graph-23tps.log";

    #[test]
    fn default_moe_configs_on_two_ranks() {
        // lines 30-33: the default config and the down_moe variant, on TP0 and TP1
        with_input(&whole(RDNA4), |i| {
            let f = check(i).expect("untuned MoE configs");
            assert_eq!(f.count, 4);
            assert_eq!(f.evidence.map(|e| e.first_line), Some(30));
            assert!(f.first_text.starts_with("Using default MoE kernel config."));
        });
    }

    #[test]
    fn the_down_moe_variant_alone_counts() {
        with_input(&excerpt(RDNA4, 32..=32), |i| {
            assert_eq!(check(i).map(|f| f.count), Some(1))
        });
    }

    #[test]
    fn a_tuned_server_says_nothing() {
        with_input(&excerpt(RDNA4, 1..=29), |i| assert_eq!(check(i), None));
    }
}
