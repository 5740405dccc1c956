//! # `kv_transfer`: PD disaggregation could not move KV
//!
//! **What it detects.** KV transfer failure lines (`KV transfer failed`, `KVTransferError`,
//! `… transfer failed for request …`), counted over all ranks.
//!
//! **Why it matters.** The affected requests fail or retry; the decode side waits for KV that
//! does not come, and throughput drops however the batch is tuned.
//!
//! **Evidence it needs.** Transfer failure lines on the prefill or decode server (the NIXL
//! transfer worker's `NIXL transport error for room …` among them); the side that wrote them
//! (`Prefill transfer failed` / `Decode transfer failed`) picks the words.
//!
//! **What to change.** Check the transfer backend (Mooncake, NIXL) and the network between the
//! prefill and decode nodes.
//!
//! **Source.** SGLang `disaggregation/decode.py` and `disaggregation/prefill.py` (transfer
//! status `Failed`); spec §1.5.

use super::watchdog::{Facts, facts};
use crate::narrative::words::failure;
use crate::report::{Finding, FindingKind};
use crate::rules::{Input, Rule};

/// The rule.
pub fn check(input: &Input<'_>) -> Option<Facts> {
    facts(input, &input.ev.kv_transfer_failures)
}

/// The rule as [`super::FINDING_RULES`] runs it: [`check`], then the finding in its words.
#[derive(Clone, Copy, Debug)]
pub struct KvTransfer;

impl Rule for KvTransfer {
    const NAME: &'static str = "kv_transfer";
    type Facts = Facts;

    fn check(input: &Input<'_>) -> impl IntoIterator<Item = Facts> {
        check(input)
    }

    fn finding(f: &Facts, input: &Input<'_>) -> Finding {
        let detail = match input.ev.kv_transfer_sides {
            // only the prefill side's words: this log is a prefill server's
            (p, 0) if p > 0 => {
                "PD disaggregation could not move KV from this prefill server to its decode server; SGLang's prefill side aborts a request whose transfer failed (each rank whose part failed logs it), and the decode side never gets its KV. Check the transfer backend and the network to the decode nodes; the transfer engine's own lines before the first failure say why it broke."
            }
            _ => {
                "PD disaggregation could not move KV from prefill to decode servers; SGLang's decode side aborts a request whose transfer failed (every TP rank of the decode server logs the same request). Check the transfer backend and network; the first failure's cause is logged where it happened (the prefill server or another rank)."
            }
        };
        failure(
            f.count,
            &f.first_text,
            f.evidence.as_ref(),
            FindingKind::KvTransferFailure,
            "KV transfers failed",
            detail,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{excerpt, with_input};

    // These lines follow the message SGLang's decode side writes (`Decode transfer failed for
    // request rank=…`), under a real envelope; real-3/012 is a whole real log of them.
    const FAILED: &str = "[2026-01-04 02:03:56 DP1 TP2 EP2] Decode transfer failed for request rank=2 req.rid='3f2a' req.bootstrap_room=7 with exception KVTransferError\n";

    #[test]
    fn a_failed_transfer_is_counted() {
        with_input(FAILED, |i| {
            let f = check(i).expect("transfer failure");
            assert_eq!(f.count, 1);
            assert_eq!(f.evidence.map(|e| e.first_line), Some(1));
        });
    }

    #[test]
    fn two_ranks_count_twice() {
        let two = format!("{FAILED}{}", FAILED.replace("DP1 TP2 EP2", "DP0 TP0 EP0"));
        with_input(&two, |i| assert_eq!(check(i).map(|f| f.count), Some(2)));
    }

    #[test]
    fn a_real_pd_decode_log_of_failed_transfers() {
        // real-3/012: TP1 and TP2 each report the failed transfer of the same request
        with_input(
            &crate::rules::testing::whole(
                "real-3/012-i10560-pd-mooncake-decode-transfer-failed.log",
            ),
            |i| {
                let f = check(i).expect("transfer failure");
                assert_eq!(f.count, 2);
                assert!(
                    f.first_text
                        .starts_with("Decode transfer failed for request rank=1"),
                    "{}",
                    f.first_text
                );
            },
        );
    }

    /// real/065, a PD prefill node over NIXL: the transfer worker's four `NIXL transport
    /// error` lines come first, then four ranks' `Prefill transfer failed`, then a worker
    /// error; the finding speaks of the prefill side. The decode side's words stay for
    /// real-3/012.
    #[test]
    fn a_real_pd_prefill_log_of_failed_transfers() {
        with_input(
            &crate::rules::testing::whole("real/065-nixl-i1983-pd-prefill-transfer-disconnect.log"),
            |i| {
                let f = check(i).expect("transfer failure");
                assert_eq!(f.count, 9);
                assert_eq!(f.evidence.as_ref().map(|e| e.first_line), Some(6));
                assert_eq!(i.ev.kv_transfer_sides, (4, 0));
                let w = KvTransfer::finding(&f, i);
                assert!(
                    w.detail.contains("from this prefill server"),
                    "{}",
                    w.detail
                );
                assert!(
                    w.detail.contains("NIXL_ERR_REMOTE_DISCONNECT"),
                    "{}",
                    w.detail
                );
            },
        );
        with_input(
            &crate::rules::testing::whole(
                "real-3/012-i10560-pd-mooncake-decode-transfer-failed.log",
            ),
            |i| {
                assert_eq!(i.ev.kv_transfer_sides, (0, 2));
                let w = KvTransfer::finding(&check(i).expect("failure"), i);
                assert!(w.detail.contains("decode side aborts"), "{}", w.detail);
            },
        );
    }

    #[test]
    fn decode_lines_are_not_failures() {
        with_input(
            &excerpt(
                "real-long/ascend-dsr1-pd-decode-maxrun2-queued.log",
                2225..=2225,
            ),
            |i| assert_eq!(check(i), None),
        );
    }
}
