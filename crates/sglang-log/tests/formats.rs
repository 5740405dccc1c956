//! Data-driven format table: one `check(line, expected)` per format of the spec (§1 envelopes,
//! §2.1.4 decode examples D0–D15, §2.2.4 prefill examples P0–P20, §2.3 retractions, §2.9
//! startup lines) plus wrappers and lines that must stay `Other` or become `Malformed`.
//! The expected string is rendered by `common::render` from the typed accessors, so every
//! accessor's value (units: tokens, requests, fractions 0-1, tokens/s, GiB, s) is asserted.

mod common;
use common::check;

/// Spec §2.1.4: Decode lines D0–D15 (every optional field).
#[test]
fn spec_decode_examples() {
    check(
        "#running-req: 12, #token: 9811, token usage: 0.33, gen throughput (token/s): 402.17, #queue-req: 0",
        "decode running=12 queue=0 token=9811 usage=0.33 gen=402.17",
    );
    check(
        "[gpu_id=0] Decode batch. #running-req: 12, #token: 9811, token usage: 0.33, gen throughput (token/s): 402.17, #queue-req: 0",
        "decode [gpu=0] running=12 queue=0 token=9811 usage=0.33 gen=402.17",
    );
    check(
        "[gpu=0] Decode batch. #running-req: 20, #token: 26671, token usage: 0.90, gen throughput (token/s): 800.31, #queue-req: 11",
        "decode [gpu=0] running=20 queue=11 token=26671 usage=0.9 gen=800.31",
    );
    check(
        "[14:03:11 TP0] Decode batch. #running-req: 19, #token: 28659, token usage: 0.97, gen throughput (token/s): 769.40, #queue-req: 19",
        "decode @14:03:11 [TP0] running=19 queue=19 token=28659 usage=0.97 gen=769.4",
    );
    check(
        "[2024-12-10 09:14:31 TP0] Decode batch. #running-req: 18, #token: 27790, token usage: 0.94, gen throughput (token/s): 751.88, #queue-req: 22",
        "decode @2024-12-10 09:14:31 [TP0] running=18 queue=22 token=27790 usage=0.94 gen=751.88",
    );
    check(
        "[2025-02-01 10:00:05 TP0] Decode batch. #running-req: 8, #token: 9515, token usage: 0.32, accept len: 2.87, gen throughput (token/s): 463.19, #queue-req: 0",
        "decode @2025-02-01 10:00:05 [TP0] running=8 queue=0 token=9515 usage=0.32 gen=463.19 accept_len=2.87",
    );
    check(
        "[2025-03-10 10:00:05 TP0] Decode batch. #running-req: 14, #token: 22754, token usage: 0.77, gen throughput (token/s): 522.83, largest-len: 7900, #queue-req: 4, ",
        "decode @2025-03-10 10:00:05 [TP0] running=14 queue=4 token=22754 usage=0.77 gen=522.83",
    );
    check(
        "[2025-04-02 16:20:19 TP0] Decode batch. #running-req: 21, #token: 27793, token usage: 0.94, gen throughput (token/s): 845.00, #queue-req: 29, ",
        "decode @2025-04-02 16:20:19 [TP0] running=21 queue=29 token=27793 usage=0.94 gen=845",
    );
    check(
        "[2025-05-01 08:00:00 TP0] Decode batch. #running-req: 96, #token: 151234, token usage: 0.25, pre-allocated usage: 0.03, gen throughput (token/s): 3512.44, #queue-req: 0",
        "decode @2025-05-01 08:00:00 [TP0] running=96 queue=0 token=151234 usage=0.25 gen=3512.44 prealloc_usage=0.03",
    );
    check(
        "[2025-06-20 11:06:01] Decode batch. #running-req: 23, #token: 27605, token usage: 0.93, cuda graph: True, gen throughput (token/s): 877.27, #queue-req: 14",
        "decode @2025-06-20 11:06:01 running=23 queue=14 token=27605 usage=0.93 gen=877.27 graph=cuda:true",
    );
    check(
        "[2025-07-05 12:00:00] Decode batch. #running-req: 17, #token: full=52010, swa=31020, token usage: full=0.43, swa=0.32, cuda graph: True, gen throughput (token/s): 1203.55, #queue-req: 0",
        "decode @2025-07-05 12:00:00 running=17 queue=0 token=52010 swa_token=31020 usage=0.43 swa_usage=0.32 gen=1203.55 graph=cuda:true",
    );
    check(
        "[2025-07-10 08:01:02] Decode batch. #running-req: 23, #token: 27605, token usage: 0.93, cuda graph: True, gen throughput (token/s): 877.27, #queue-req: 14, timestamp: 2025-07-10T08:01:02.123456",
        "decode @2025-07-10 08:01:02 running=23 queue=14 token=27605 usage=0.93 gen=877.27 graph=cuda:true ts_field=2025-07-10 08:01:02.123",
    );
    check(
        "[2025-09-08 08:31:36 TP0] Decode batch. #running-req: 27, #token: 50259, token usage: 0.99, cuda graph: True, gen throughput (token/s): 634.34, #queue-req: 75, ",
        "decode @2025-09-08 08:31:36 [TP0] running=27 queue=75 token=50259 usage=0.99 gen=634.34 graph=cuda:true",
    );
    check(
        "[2025-10-07 03:15:29 TP0] Decode batch. #running-req: 145, #token: 592397, token usage: 0.97, pre-allocated usage: 0.00, #prealloc-req: 21, #transfer-req: 0, #retracted-req: 2, cuda graph: True, gen throughput (token/s): 5004.61, #queue-req: 1, ",
        "decode @2025-10-07 03:15:29 [TP0] running=145 queue=1 token=592397 usage=0.97 gen=5004.61 graph=cuda:true prealloc_usage=0 prealloc=21 transfer=0 retracted=2",
    );
    check(
        "[2025-10-15 09:00:00 TP0] Decode batch. #running-req: 40, #full token: 61234, full token usage: 0.21, mamba num: 80, mamba usage: 0.16, accept len: 2.41, accept rate: 0.60, cuda graph: True, gen throughput (token/s): 2250.10, #queue-req: 0, ",
        "decode @2025-10-15 09:00:00 [TP0] running=40 queue=0 token=61234 usage=0.21 mamba_num=80 mamba_usage=0.16 gen=2250.1 accept_len=2.41 accept_rate=0.6 graph=cuda:true",
    );
    check(
        "[2025-10-24 18:00:00] Decode batch [10421], #running-req: 22, #token: 28878, token usage: 0.97, cuda graph: True, gen throughput (token/s): 855.26, #queue-req: 24, ",
        "decode @2025-10-24 18:00:00 iter=10421 running=22 queue=24 token=28878 usage=0.97 gen=855.26 graph=cuda:true",
    );
    check(
        "[2026-01-12 13:47:43] Decode batch, #running-req: 22, #token: 28878, token usage: 0.97, cuda graph: True, gen throughput (token/s): 855.26, #queue-req: 24, ",
        "decode @2026-01-12 13:47:43 running=22 queue=24 token=28878 usage=0.97 gen=855.26 graph=cuda:true",
    );
    check(
        "[2026-07-14 18:30:14] Decode batch, #running-req: 21, #token: 28633, token usage: 0.97, cuda graph: True, gen throughput (token/s): 831.01, #queue-req: 31",
        "decode @2026-07-14 18:30:14 running=21 queue=31 token=28633 usage=0.97 gen=831.01 graph=cuda:true",
    );
    check(
        "[2026-07-14 18:30:14] Decode batch, #running-req: 21, #token: 28633, token usage: 0.97, cuda graph: True, gen throughput (token/s): 831.01, #queue-req: 31, est. decode TFLOPS/s (per GPU): 11.42, est. read BW (GB/s per GPU): 498.10, est. write BW (GB/s per GPU): 3.90, fwd occupancy: 87.31%",
        "decode @2026-07-14 18:30:14 running=21 queue=31 token=28633 usage=0.97 gen=831.01 graph=cuda:true tflops=11.42 read_bw=498.1 write_bw=3.9 occupancy=0.8731",
    );
    check(
        "[2025-12-01 12:00:00.123 TP0] Decode batch, #running-req: 1, #token: 10, token usage: 0.01, cuda graph: True, gen throughput (token/s): 50.00, #queue-req: 0",
        "decode @2025-12-01 12:00:00.123 [TP0] running=1 queue=0 token=10 usage=0.01 gen=50 graph=cuda:true",
    );
}

/// Spec §2.2.4: Prefill lines P0–P20 (PD, hybrid, mixed, v0.1 forms).
#[test]
fn spec_prefill_examples() {
    check(
        "new fill batch. #seq: 1. #cached_token: 25. #new_token: 704. #remaining_req: 0. #running_req: 3. tree_cache_hit_rate: 3.43%.",
        "prefill running=3 queue=0 new_seq=1 new_token=704 cached=25 hit=0.0343",
    );
    check(
        "[gpu_id=0] Prefil batch. #new-seq: 1, #new-token: 704, #cached-token: 25, cache hit rate: 3.43%, #running-req: 0, #queue-req: 0",
        "prefill [gpu=0] running=0 queue=0 new_seq=1 new_token=704 cached=25 hit=0.0343",
    );
    check(
        "[gpu=0] Prefill batch. #new-seq: 2, #new-token: 2048, #cached-token: 581, cache hit rate: 13.60%, #running-req: 2, #queue-req: 0",
        "prefill [gpu=0] running=2 queue=0 new_seq=2 new_token=2048 cached=581 hit=0.136",
    );
    check(
        "[09:02:11 TP0] Prefill batch(mixed #running-req: 14). #new-seq: 1, #new-token: 1331, #cached-token: 64, cache hit rate: 12.40%, #queue-req: 2",
        "prefill @09:02:11 [TP0] running=14 queue=2 new_seq=1 new_token=1331 cached=64 hit=0.124",
    );
    check(
        "[10:41:04 TP0] Prefill batch. #new-seq: 1, #new-token: 892, #cached-token: 239, cache hit rate: 14.72%, token usage: 0.02, #running-req: 1, #queue-req: 0",
        "prefill @10:41:04 [TP0] running=1 queue=0 usage=0.02 new_seq=1 new_token=892 cached=239 hit=0.1472",
    );
    check(
        "[2024-12-10 09:14:20 TP0] Prefill batch. #new-seq: 2, #new-token: 1988, #cached-token: 722, cache hit rate: 17.29%, token usage: 0.07, #running-req: 2, #queue-req: 0",
        "prefill @2024-12-10 09:14:20 [TP0] running=2 queue=0 usage=0.07 new_seq=2 new_token=1988 cached=722 hit=0.1729",
    );
    check(
        "[2025-04-02 16:20:05 TP0] Prefill batch. #new-seq: 1, #new-token: 1230, #cached-token: 47, token usage: 0.02, #running-req: 1, #queue-req: 0, ",
        "prefill @2025-04-02 16:20:05 [TP0] running=1 queue=0 usage=0.02 new_seq=1 new_token=1230 cached=47",
    );
    check(
        "[2025-05-01 03:15:00 TP0] Prefill batch. #new-seq: 3, #new-token: 11139, #cached-token: 2506, token usage: 0.01, #running-req: 0, #unbootstrapped-req: 2, #queue-req: 5, #transferring-req: 4 ",
        "prefill @2025-05-01 03:15:00 [TP0] running=0 queue=5 usage=0.01 new_seq=3 new_token=11139 cached=2506 bootstrap=2 inflight=4",
    );
    check(
        "[2025-06-20 11:05:44] Prefill batch. #new-seq: 1, #new-token: 600, #cached-token: 29, token usage: 0.00, #running-req: 0, #queue-req: 0",
        "prefill @2025-06-20 11:05:44 running=0 queue=0 usage=0 new_seq=1 new_token=600 cached=29",
    );
    check(
        "[2025-06-20 03:15:00 TP0] Prefill batch. #new-seq: 3, #new-token: 11139, #cached-token: 2506, token usage: 0.01, #unbootstrapped-req: 2, #queue-req: 5, #transferring-req: 4, input throughput (token/s): 14772.38 ",
        "prefill @2025-06-20 03:15:00 [TP0] queue=5 usage=0.01 input=14772.38 new_seq=3 new_token=11139 cached=2506 bootstrap=2 inflight=4",
    );
    check(
        "[2025-07-10 08:01:00] Prefill batch. #new-seq: 1, #new-token: 600, #cached-token: 29, #token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, timestamp: 2025-07-10T08:01:00.512345",
        "prefill @2025-07-10 08:01:00 running=0 queue=0 token=0 usage=0 new_seq=1 new_token=600 cached=29 ts_field=2025-07-10 08:01:00.512",
    );
    check(
        "[2025-08-01 07:44:12] Prefill batch. #new-seq: 2, #new-token: 8192, #cached-token: 2567, full token usage: 0.10, swa token usage: 0.18, #running-req: 2, #queue-req: 0, ",
        "prefill @2025-08-01 07:44:12 running=2 queue=0 usage=0.1 swa_usage=0.18 new_seq=2 new_token=8192 cached=2567",
    );
    check(
        "[2025-10-07 03:15:02 TP0] Prefill batch. #new-seq: 6, #new-token: 16384, #cached-token: 4551, token usage: 0.02, #running-req: 0, #queue-req: 1, #prealloc-req: 0, #inflight-req: 2, ",
        "prefill @2025-10-07 03:15:02 [TP0] running=0 queue=1 usage=0.02 new_seq=6 new_token=16384 cached=4551 prealloc=0 bootstrap=0 inflight=2",
    );
    check(
        "[2026-01-12 13:47:38] Prefill batch, #new-seq: 3, #new-token: 2048, #cached-token: 464, token usage: 0.57, #running-req: 13, #queue-req: 15, ",
        "prefill @2026-01-12 13:47:38 running=13 queue=15 usage=0.57 new_seq=3 new_token=2048 cached=464",
    );
    check(
        "[2025-11-20 03:15:02 TP0] Prefill batch, #new-seq: 6, #new-token: 16384, #cached-token: 4551, token usage: 0.02, #running-req: 0, #queue-req: 1, #prealloc-req: 0, #inflight-req: 2, input throughput (token/s): 13240.13, ",
        "prefill @2025-11-20 03:15:02 [TP0] running=0 queue=1 usage=0.02 input=13240.13 new_seq=6 new_token=16384 cached=4551 prealloc=0 bootstrap=0 inflight=2",
    );
    check(
        "[2026-03-03 09:02:20] Prefill batch, #new-seq: 1, #new-token: 912, #cached-token: 181, token usage: 0.34, #running-req: 8, #queue-req: 0, input throughput (token/s): 2723.80, cuda graph: False",
        "prefill @2026-03-03 09:02:20 running=8 queue=0 usage=0.34 input=2723.8 new_seq=1 new_token=912 cached=181 graph=cuda:false",
    );
    check(
        "[2026-05-10 18:30:02] Prefill batch, #new-seq: 1, #new-token: 600, #cached-token: 29, token usage: 0.02, #running-req: 0, #queue-req: 0, #pending-token: 0, cuda graph: False, input throughput (token/s): 5752.31",
        "prefill @2026-05-10 18:30:02 running=0 queue=0 usage=0.02 input=5752.31 new_seq=1 new_token=600 cached=29 pending=0 graph=cuda:false",
    );
    check(
        "[2026-08-01 03:15:02 TP0] Prefill batch, #new-seq: 6, #new-token: 16384, #cached-token: 4551, token usage: 0.05, #running-req: 0, #queue-req: 1, #pending-token: 3310, #bootstrap-req: 0, #inflight-req: 2, #optimistic-req: 1, cuda graph: False, input throughput (token/s): 41220.50",
        "prefill @2026-08-01 03:15:02 [TP0] running=0 queue=1 usage=0.05 input=41220.5 new_seq=6 new_token=16384 cached=4551 pending=3310 graph=cuda:false bootstrap=0 inflight=2 optimistic=1",
    );
}

/// Spec §2.3: every retraction wording.
#[test]
fn spec_retraction_examples() {
    check(
        "decode out of memory happened, #retracted_reqs: 1, #new_token_ratio: 0.0980 -> 0.4391",
        "retraction wording=DecodeOutOfMemory retracted=1 ratio=0.098->0.4391",
    );
    check(
        "[10:41:17 TP0] Decode out of memory happened. #retracted_reqs: 1, #new_token_ratio: 0.0980 -> 0.4024",
        "retraction @10:41:17 [TP0] wording=DecodeOutOfMemory retracted=1 ratio=0.098->0.4024",
    );
    check(
        "[2025-09-08 08:31:37 TP1] KV cache pool is full. Retract requests. #retracted_reqs: 1, #new_token_ratio: 0.0980 -> 0.4561",
        "retraction @2025-09-08 08:31:37 [TP1] wording=KvCachePoolFull retracted=1 ratio=0.098->0.4561",
    );
    check(
        "[2025-10-08 10:00:00 TP0] KV cache pool is full. Retract requests. #retracted_reqs: 3, #aborted_retracted_reqs: 0, #new_token_ratio: 0.1200 -> 0.5874",
        "retraction @2025-10-08 10:00:00 [TP0] wording=KvCachePoolFull retracted=3 aborted=0 ratio=0.12->0.5874",
    );
    check(
        "[2026-01-12 13:47:44] KV cache pool is full. Retract requests. #retracted_reqs: 1, #new_tokens_gained: 201, #new_token_ratio: 0.0980 -> 0.3298",
        "retraction @2026-01-12 13:47:44 wording=KvCachePoolFull retracted=1 gained=201 ratio=0.098->0.3298",
    );
    check(
        "[2026-06-01 10:00:00 TP0] KV cache pool is full. Retract requests. #retracted_reqs: 2, #new_tokens_gained: 5120, #mamba_num_gained: 2, #new_token_ratio: 0.0980 -> 0.5012",
        "retraction @2026-06-01 10:00:00 [TP0] wording=KvCachePoolFull retracted=2 gained=5120 mamba_gained=2 ratio=0.098->0.5012",
    );
    check(
        "[2026-02-01 10:00:00] Testing retraction. #retracted_reqs: 4, #new_tokens_gained: 800",
        "retraction @2026-02-01 10:00:00 wording=Testing retracted=4 gained=800",
    );
}

/// Spec §1 envelopes and wrappers: ms/ISO stamps, rank tags in any order, custom logging formats, docker-compose, Ray, markdown quote, ANSI colours, lost `[`, mangled pastes, CR segments, watchdog and KV transfer failures.
#[test]
fn envelopes_and_wrappers() {
    check(
        "[2025-10-20T03:02:22.5Z DP1 TP3] Decode batch, #running-req: 3, #token: 30, token usage: 0.10, cuda graph: True, gen throughput (token/s): 90.00, #queue-req: 2",
        "decode @2025-10-20 03:02:22.500Z [DP1 TP3] running=3 queue=2 token=30 usage=0.1 gen=90 graph=cuda:true",
    );
    check(
        "2025-10-20T03:02:22.123456789Z [2025-10-20 03:02:22 TP0] Decode batch, #running-req: 3, #token: 30, token usage: 0.10, cuda graph: True, gen throughput (token/s): 90.00, #queue-req: 2",
        "decode @2025-10-20 03:02:22 [TP0] running=3 queue=2 token=30 usage=0.1 gen=90 graph=cuda:true",
    );
    check(
        "[2025-06-01 12:00:00] Decode batch, #running-req: 2, #token: 20, token usage: 0.02, cuda graph: False, gen throughput (token/s): 10.00, #queue-req: 0",
        "decode @2025-06-01 12:00:00 running=2 queue=0 token=20 usage=0.02 gen=10 graph=cuda:false",
    );
    check(
        "[2025-06-01 12:00:00 DP0 TP0 EP0] Decode batch, #running-req: 2, #token: 20, token usage: 0.02, cuda graph: False, gen throughput (token/s): 10.00, #queue-req: 0",
        "decode @2025-06-01 12:00:00 [DP0 TP0 EP0] running=2 queue=0 token=20 usage=0.02 gen=10 graph=cuda:false",
    );
    check(
        "[2025-06-01 12:00:00 TP0 PP1] Prefill batch, #new-seq: 1, #new-token: 5, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, ",
        "prefill @2025-06-01 12:00:00 [PP1 TP0] running=0 queue=0 usage=0 new_seq=1 new_token=5 cached=0",
    );
    check(
        "[2025-06-01 12:00:00 DP2 PP0 ATTN_CP1 MOE_DP2 TP1 EP1] Decode batch, #running-req: 2, #token: 20, token usage: 0.02, cuda graph: False, gen throughput (token/s): 10.00, #queue-req: 0",
        "decode @2025-06-01 12:00:00 [DP2 PP0 ATTN_CP1 MOE_DP2 TP1 EP1] running=2 queue=0 token=20 usage=0.02 gen=10 graph=cuda:false",
    );
    check(
        "[ DP15 TP15 EP15] Decode batch, #running-req: 2, #token: 20, token usage: 0.02, npu graph: True, gen throughput (token/s): 10.00, #queue-req: 0",
        "decode [DP15 TP15 EP15] running=2 queue=0 token=20 usage=0.02 gen=10 graph=npu:true",
    );
    check(
        "2025-10-20 03:02:22 INFO 31223 [DP3 TP3 EP3 scheduler_metrics_mixin.py:222] Decode batch, #running-req: 5, #token: 50, token usage: 0.05, cuda graph: True, gen throughput (token/s): 100.00, #queue-req: 1",
        "decode @2025-10-20 03:02:22 [DP3 TP3 EP3] running=5 queue=1 token=50 usage=0.05 gen=100 graph=cuda:true",
    );
    check(
        "[2026-04-15 17:13:10][scheduler_metrics_mixin.py:424][INFO]: Prefill batch, #new-seq: 1, #new-token: 1, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, #prealloc-req: 18, #inflight-req: 1, cuda graph: False, input throughput (token/s): 2.49",
        "prefill @2026-04-15 17:13:10 running=0 queue=0 usage=0 input=2.49 new_seq=1 new_token=1 cached=0 graph=cuda:false prealloc=18 bootstrap=18 inflight=1",
    );
    check(
        "sglang-1  | [2025-06-05 15:08:56 TP0] Prefill batch. #new-seq: 3, #new-token: 15000, #cached-token: 0, token usage: 0.06, #running-req: 7, #queue-req: 40",
        "prefill @2025-06-05 15:08:56 [TP0] running=7 queue=40 usage=0.06 new_seq=3 new_token=15000 cached=0",
    );
    check(
        "(SchedulerActor pid=1234, ip=10.0.0.5) [2026-03-22 13:53:37 TP0] Decode batch, #running-req: 6, #token: 42414, token usage: 0.04, cuda graph: True, gen throughput (token/s): 1374.02, #queue-req: 0,",
        "decode @2026-03-22 13:53:37 [TP0] running=6 queue=0 token=42414 usage=0.04 gen=1374.02 graph=cuda:true",
    );
    check(
        "> [2025-07-11 17:40:14 DP0 TP2] Watchdog timeout (self.watchdog_timeout=300)",
        "watchdog_timeout @2025-07-11 17:40:14 [DP0 TP2] msg=\"Watchdog timeout (self.watchdog_timeout=300)\"",
    );
    check(
        "[2026-03-01 10:00:00 TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)",
        "watchdog_timeout @2026-03-01 10:00:00 [TP0] msg=\"Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)\"",
    );
    // The watchdog's py-spy dump (real excerpt 052).
    check(
        "[2026-03-17 17:31:53] Pyspy dump for PID 10366:",
        "watchdog_timeout @2026-03-17 17:31:53 msg=\"Pyspy dump for PID 10366:\"",
    );
    check(
        "[2026-03-01 10:00:00 TP0] Decode transfer failed for request rank=0 req.rid='abc' req.bootstrap_room=7",
        "kv_transfer_failed @2026-03-01 10:00:00 [TP0] msg=\"Decode transfer failed for request rank=0 req.rid='abc' req.bootstrap_room=7\"",
    );
    check(
        "[2026-03-01 10:00:00 TP0] KV transfer failed for bootstrap_room=7",
        "kv_transfer_failed @2026-03-01 10:00:00 [TP0] msg=\"KV transfer failed for bootstrap_room=7\"",
    );
    check(
        "\x1b[32m[2025-06-01 12:00:00 TP0] Decode batch, #running-req: 2, #token: 20, token usage: 0.02, cuda graph: False, gen throughput (token/s): 10.00, #queue-req: 0\x1b[0m",
        "decode @2025-06-01 12:00:00 [TP0] running=2 queue=0 token=20 usage=0.02 gen=10 graph=cuda:false",
    );
    check(
        "[2025-06-01 12:00:00 TP0] \x1b[33mKV cache pool is full. Retract requests. #retracted_reqs: 1, #new_token_ratio: 0.0980 -> 0.4561\x1b[0m",
        "retraction @2025-06-01 12:00:00 [TP0] wording=KvCachePoolFull retracted=1 ratio=0.098->0.4561",
    );
    check(
        "025-06-23 18:55:20 TP0] Decode batch. #running-req: 1, #token: 1069, token usage: 0.00, cuda graph: True, gen throughput (token/s): 81.99, #queue-req: 0",
        "decode [TP0] running=1 queue=0 token=1069 usage=0 gen=81.99 graph=cuda:true",
    );
    check(
        "2026-05-24 03:51:44 TP0] Decode batch, #running-req: 4, #full token: 2642688, full token usage: 1.00, #swa token: 14592, swa token usage: 0.06, cuda graph: True, gen throughput (token/s): 429.34, #queue-req: 3",
        "decode @2026-05-24 03:51:44 [TP0] running=4 queue=3 token=2642688 swa_token=14592 usage=1 swa_usage=0.06 gen=429.34 graph=cuda:true",
    );
    check(
        "Decode batch. #running-:, #: 484009, token usage: 0.95",
        "decode usage=0.95 unknown=#:484009 broken=1",
    );
    check(
        "[2025-12-17 05:10:46] Prefill batch. #bid: 1, #cache_miss: 2",
        "prefill @2025-12-17 05:10:46 unknown=#bid:1|#cache_miss:2",
    );
    check(
        "[2025-12-17 05:10:47] Decode batch. #running-req: 1, #token: 64, token usage: 0.00, gen throughput (token/s): 84.39, #queue-req: 0, #cache_miss: 1",
        "decode @2025-12-17 05:10:47 running=1 queue=0 token=64 usage=0 gen=84.39 unknown=#cache_miss:1",
    );
    check(
        "[2026-08-15 05:37:25 TP0] Decode batch, #running-req: 1, #full token: 512, full token usage: 0.00, #swa token: 512, swa token usage: 0.00, accept len: 4.22, accept rate: 0.65, cap len: 6.00, cuda graph: True, gen throughput (token/s): 3.08, #queue-req: 0",
        "decode @2026-08-15 05:37:25 [TP0] running=1 queue=0 token=512 swa_token=512 usage=0 swa_usage=0 gen=3.08 accept_len=4.22 accept_rate=0.65 cap_len=6 graph=cuda:true",
    );
    check(
        "Loading\r[2025-06-01 12:00:00 TP0] Decode batch, #running-req: 2, #token: 20, token usage: 0.02, cuda graph: False, gen throughput (token/s): 10.00, #queue-req: 0",
        "decode @2025-06-01 12:00:00 [TP0] running=2 queue=0 token=20 usage=0.02 gen=10 graph=cuda:false",
    );
}

/// Spec §2.9 startup lines: KV cache, memory, capacity, server_args, HiCache, ready banner.
#[test]
fn startup_lines() {
    // real-4/106: a hybrid SSM model's state slots; real-4/102: the cap lowered for speculation
    check(
        "[2026-05-25 17:30:11 TP0] Mamba Cache is allocated. max_mamba_cache_size: 40, conv_state size: 0.11GB, ssm_state size: 5.77GB ",
        "mamba_cache_allocated @2026-05-25 17:30:11 [TP0] max_mamba_cache_size=40",
    );
    check(
        "[2026-08-01 21:40:28] Max running requests is reset to 48 for speculative decoding. You can override this by explicitly setting --max-running-requests.",
        "max_running_reset @2026-08-01 21:40:28 max_running_requests=48",
    );
    // real-4/105: the fused MoE kernels' untuned config, and its down_moe form
    check(
        "[2026-05-25 18:04:09 TP1] Using default MoE kernel config. Performance might be sub-optimal! Config file not found at /x/E=128,N=384.json",
        "moe_config_untuned @2026-05-25 18:04:09 [TP1] msg=\"Using default MoE kernel config. Performance might be sub-optimal! Config file not found at /x/E=128,N=384.json\"",
    );
    check(
        "[2026-05-25 18:04:09 TP1] Using MoE kernel config with down_moe=False. Performance might be sub-optimal! Config file not found at /x",
        "moe_config_untuned @2026-05-25 18:04:09 [TP1] msg=\"Using MoE kernel config with down_moe=False. Performance might be sub-optimal! Config file not found at /x\"",
    );
    // real-3/045: DeepGEMM's JIT pre-compile entered after the first requests
    check(
        "[2025-12-26 23:02:39 DP0 TP0 EP0] Entering DeepGEMM JIT Pre-Compile session. It may take a long time (typically 10-20 mins) if you have not run `sglang.compile_deep_gemm`.",
        "jit_compile @2025-12-26 23:02:39 [DP0 TP0 EP0] msg=\"Entering DeepGEMM JIT Pre-Compile session. It may take a long time (typically 10-20 mins) if you have not run `sglang.compile_deep_gemm`.\"",
    );
    check(
        "[2025-10-03 20:34:47 DP0 TP0 EP0] KV Cache is allocated. #tokens: 1339395, K size: 58.76 GB, V size: 58.76 GB",
        "kv_cache_allocated @2025-10-03 20:34:47 [DP0 TP0 EP0] tokens=1339395 k_gb=58.76 v_gb=58.76",
    );
    check(
        "[2026-01-04 07:00:00 TP0] KV Cache is allocated. #tokens: 76032, KV size: 4.66 GB",
        "kv_cache_allocated @2026-01-04 07:00:00 [TP0] tokens=76032 kv_gb=4.66",
    );
    check(
        "[2026-02-10 14:00:00] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 116171, K size: 7.50 GB, V size: 7.50 GB",
        "kv_cache_allocated @2026-02-10 14:00:00 tokens=116171 k_gb=7.5 v_gb=7.5",
    );
    check(
        "[2025-10-03 20:34:47 DP0 TP0 EP0] Memory pool end. avail mem=34.30 GB",
        "memory_pool_end @2025-10-03 20:34:47 [DP0 TP0 EP0] avail_gb=34.3",
    );
    check(
        "[2025-10-03 20:34:48 DP0 TP0 EP0] max_total_num_tokens=1339395, chunked_prefill_size=2032, max_prefill_tokens=16384, max_running_requests=4096, context_len=131072, available_gpu_mem=33.74 GB",
        "capacity @2025-10-03 20:34:48 [DP0 TP0 EP0] max_total=1339395 chunked=2032 max_prefill=16384 max_running=4096 context=131072 avail_gb=33.74",
    );
    check(
        "[gpu=0] max_total_num_tokens=29655, max_prefill_tokens=16384, max_running_requests=2047, context_len=8192",
        "capacity [gpu=0] max_total=29655 max_prefill=16384 max_running=2047 context=8192",
    );
    check(
        "[2026-01-04 07:00:00 DP0 TP0 EP0] max_total_num_tokens=44416, chunked_prefill_size=-1, max_prefill_tokens=16384, max_running_requests=4, context_len=163840, available_cpu_mem=100.25 GB",
        "capacity @2026-01-04 07:00:00 [DP0 TP0 EP0] max_total=44416 chunked=-1 max_prefill=16384 max_running=4 context=163840 avail_gb=100.25",
    );
    check(
        "[2026-01-04 07:00:00 TP0] Load weight end. type=Qwen3MoeForCausalLM, dtype=torch.bfloat16, avail mem=50.12 GB, mem usage=30.44 GB.",
        "load_weight_end @2026-01-04 07:00:00 [TP0] avail_gb=50.12 usage_gb=30.44",
    );
    check(
        "[2026-09-13 16:05:10] Load weight end. elapsed=3.21 s, type=Qwen3ForCausalLM, avail mem=15.02 GB, mem usage=7.63 GB.",
        "load_weight_end @2026-09-13 16:05:10 avail_gb=15.02 usage_gb=7.63 elapsed_s=3.21",
    );
    check(
        "[gpu=0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=7.45 GB",
        "load_weight_end [gpu=0] avail_gb=7.45",
    );
    check(
        "[2026-01-04 07:00:00 TP0] Capture cuda graph end. Time elapsed: 12.50 s. mem usage=0.80 GB. avail mem=10.11 GB.",
        "cuda_graph_end @2026-01-04 07:00:00 [TP0] avail_gb=10.11 usage_gb=0.8 elapsed_s=12.5",
    );
    check(
        "[2026-01-04 07:00:00 TP0] Capture draft extend cuda graph end. Time elapsed: 2.00 s. mem usage=0.10 GB. avail mem=10.01 GB.",
        "cuda_graph_end @2026-01-04 07:00:00 [TP0] avail_gb=10.01 usage_gb=0.1 elapsed_s=2",
    );
    check(
        "[2026-02-10 13:58:00] server_args=ServerArgs(model_path='moonshotai/Kimi-K2.5', tp_size=8, mem_fraction_static=0.85, chunked_prefill_size=8192)",
        "server_args @2026-02-10 13:58:00 mem_fraction_static=0.85 tp_size=8",
    );
    check(
        "[2025-03-01 10:00:00 TP0] Allocating 120.50 GB host memory for hierarchical KV cache.",
        "hicache_allocated @2025-03-01 10:00:00 [TP0] host_gb=120.5",
    );
    check(
        "[2026-08-01 10:00:00 TP0] Allocating kv hierarchical KV host pool: 2000000 tokens, 75.25 GB host memory.",
        "hicache_allocated @2026-08-01 10:00:00 [TP0] host_gb=75.25 host_tokens=2000000",
    );
    // hybrid SWA pools (spec §2.6; tests/data/spec-examples/hybrid-swa-v0.5.4-v0.5.8.log line
    // 1; lowercase `sliding` from v0.5.7)
    check(
        "[2025-11-03 07:43:30] Use Sliding window memory pool. full_layer_tokens=120000, swa_layer_tokens=96000",
        "swa_pool @2025-11-03 07:43:30 full_tokens=120000 swa_tokens=96000",
    );
    check(
        "[2025-11-03 07:43:30 TP0] Use sliding window memory pool. full_layer_tokens=529536, swa_layer_tokens=423552",
        "swa_pool @2025-11-03 07:43:30 [TP0] full_tokens=529536 swa_tokens=423552",
    );
    check(
        "[2026-01-04 03:36:03] INFO:     The server is fired up and ready to roll!",
        "server_ready @2026-01-04 03:36:03",
    );
    check(
        "[2025-06-01 12:00:10] The server is fired up and ready to roll!",
        "server_ready @2025-06-01 12:00:10",
    );
}

/// Uvicorn's access lines are read with their status; lines that are not scheduler output stay
/// `Other`; lines with a batch marker that cannot be read are `Malformed`.
#[test]
fn other_and_malformed() {
    check(
        "[2024-12-10 09:13:58,650] INFO:     127.0.0.1:43986 - \"GET /get_model_info HTTP/1.1\" 200 OK",
        "http_access @2024-12-10 09:13:58.650 method=GET path=/get_model_info status=200",
    );
    check(
        "2025-10-20T03:02:22.123Z INFO:     127.0.0.1:1 - \"GET /health HTTP/1.1\" 200 OK",
        "http_access @2025-10-20 03:02:22.123Z method=GET path=/health status=200",
    );
    check(
        "INFO:     127.0.0.1:51234 - \"POST /generate HTTP/1.1\" 200 OK",
        "http_access method=POST path=/generate status=200",
    );
    check(
        "[2025-01-20 14:03:11] INFO:     127.0.0.1:51234 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK",
        "http_access @2025-01-20 14:03:11 method=POST path=/v1/chat/completions status=200",
    );
    check("Processing batches: 2it [00:00,  4.69it/s]", "other");
    check(
        "[DEBUG] prefill batch: ['5501e53c58974e86bc717219b0a6315c']",
        "other",
    );
    // a traceback's first line opens a stack (`StackCollector`); its frames stay other lines
    check("Traceback (most recent call last):", "traceback_start");
    check(
        "  File \"/usr/lib/python3/dist-packages/sglang/srt/managers/scheduler.py\", line 2974, in run",
        "other",
    );
    check(
        "    logger.info(f\"Decode batch. #running-req: {num_running}\")",
        "malformed reason=\"batch line without any numeric value\"",
    );
    check(
        "[2025-06-01 12:00:00] Decode batches were slow",
        "malformed @2025-06-01 12:00:00 reason=\"batch marker not followed by a separator\"",
    );
    check(
        "[2025-06-01 12:00:00] Prefill batch",
        "malformed @2025-06-01 12:00:00 reason=\"batch head without fields\"",
    );
    check(
        "[2025-06-01 12:00:00] Decode batch. nothing to see here",
        "malformed @2025-06-01 12:00:00 reason=\"batch line without key: value fields\"",
    );
    check(
        "INFO 10-20 03:02:22 [loggers.py:116] Engine 000: Avg prompt throughput: 1024.0 tokens/s, Avg generation throughput: 512.3 tokens/s, Running: 12 reqs, Waiting: 0 reqs, GPU KV cache usage: 45.2%, Prefix cache hit rate: 10.0%",
        "other",
    );
    check(
        "  0%|          | 0/7 [00:00<?, ?it/s]\rCapturing batches (bs=24 avail_mem=2.04 GB):   0%|          | 0/7 [00:00<?, ?it/s]",
        "graph_capture stage=Progress avail_gb=2.04",
    );
    check(
        "[2025-06-01 12:00:00] Decode out of memory. Try to lower your batch size.",
        "other @2025-06-01 12:00:00",
    );
}

/// Issue 15 item 4: the formats the parser used to miss.
#[test]
fn issue_15_formats() {
    // real: shared/testdata/real-2/120-i33483-…, line 2: the capacity summary glued to the end
    // of the CUDA-graph line by the user's paste (was `cuda_graph_end`, the capacity lost)
    check(
        "Capture target decode CUDA graph end. elapsed=0.89 s, mem usage=0.15 GB, avail mem=6.95 GB max_total_num_tokens=2980168, chunked_prefill_size=4096, max_prefill_tokens=16384, max_running_requests=4096, context_len=32768, available_gpu_mem=6.95 GB",
        "capacity max_total=2980168 chunked=4096 max_prefill=16384 max_running=4096 context=32768 avail_gb=6.95 glued_avail_gb=6.95 glued_usage_gb=0.15 glued_elapsed_s=0.89",
    );
    // line 1 of the same file stays what it was
    check(
        "Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, bs=[1, 2, 4, 8, 12, 16, 24, 32], avail mem=7.10 GB",
        "graph_capture stage=Begin avail_gb=7.1 max_bs=32",
    );
    // the tracing format of SGLang inside NVIDIA Dynamo (ISO stamp with `Z`, level, module
    // path), as issue 15 quotes it; no log of this form is in shared/testdata, the messages
    // are real ones (real-long/ascend-dsr1-dp16-mtp-mixed.log line 1294, and the decode line
    // of real/019)
    check(
        "2026-01-05T08:00:00.123Z  INFO dynamo_sglang.worker: KV Cache is allocated. #tokens: 76032, KV size: 4.98 GB",
        "kv_cache_allocated @2026-01-05 08:00:00.123Z tokens=76032 kv_gb=4.98",
    );
    check(
        "2026-01-05T08:00:01.500Z  INFO dynamo.sglang::scheduler: Decode batch. #running-req: 92, #token: 264288, token usage: 0.92, gen throughput (token/s): 324.86, #queue-req: 990, ",
        "decode @2026-01-05 08:00:01.500Z running=92 queue=990 token=264288 usage=0.92 gen=324.86",
    );
    // a record glued behind a tqdm bar that lost its `\r` (the bar: real-long/ascend-…
    // line 1394; the record: line 1294 of the same file)
    check(
        "Capturing batches (bs=16 avail_mem=15.48 GB):  33%|███▎      | 1/3 [00:30<01:00, 30.48s/it][2026-01-04 07:05:26 DP10 TP10 EP10] KV Cache is allocated. #tokens: 76032, KV size: 4.98 GB",
        "kv_cache_allocated @2026-01-04 07:05:26 [DP10 TP10 EP10] tokens=76032 kv_gb=4.98",
    );
    check(
        "Capturing batches (bs=16 avail_mem=15.48 GB):   0%|          | 0/3 [00:00<?, ?it/s][2026-01-04 07:05:26 DP10 TP10 EP10] KV Cache is allocated. #tokens: 76032, KV size: 4.98 GB",
        "kv_cache_allocated @2026-01-04 07:05:26 [DP10 TP10 EP10] tokens=76032 kv_gb=4.98",
    );
    // a torch warning glued behind a bar stays other (real-long/ascend-… line 1345)
    check(
        "Capturing batches (bs=16 avail_mem=15.48 GB):   0%|          | 0/3 [00:00<?, ?it/s][rank14]:[W104 07:05:30.021503222 compiler_depend.ts:83] Warning: [Check][offset] Check input storage_offset[%ld] = 0 failed",
        "other",
    );
}

/// Issue 29: the lines that end or block serving, HTTP answers, HiCache's storage tier and
/// pool lines, each on a real line (file and line named) or SGLang's / PyTorch's own format
/// string where no shared log holds one.
#[test]
fn serving_alarm_lines() {
    // real-4/101 (DGX Spark, context exceeded), line 122
    check(
        "[2026-02-21 13:06:55] INFO:     127.0.0.1:43920 - \"POST /v1/chat/completions HTTP/1.1\" 400 Bad Request",
        "http_access @2026-02-21 13:06:55 method=POST path=/v1/chat/completions status=400",
    );
    // real-long/ascend-dsr1-pd-decode-dp32.log:1891 (a probe while the server starts)
    check(
        "[2025-12-01 08:55:02] INFO:     192.0.2.1:52108 - \"GET /health_generate HTTP/1.1\" 503 Service Unavailable",
        "http_access @2025-12-01 08:55:02 method=GET path=/health_generate status=503",
    );
    // real-4/101, the context-length message
    check(
        "[2026-02-21 13:06:55] Error in request: Requested token count exceeds the model's maximum context length of 131072 tokens. You requested a total of 140000 tokens: 139000 tokens from the input messages and 1000 tokens for the completion. Please reduce the number of tokens in the input messages or the completion to fit within the limit.",
        "context_rejected @2026-02-21 13:06:55 context=131072 input=139000 max_new=1000",
    );
    // real-2/107 (AMD R9700, weight load), line 81: a traceback's last line
    check(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 256.00 MiB. GPU 0 has a total capacity of 31.86 GiB of which 70.00 MiB is free. Of the allocated memory 30.90 GiB is allocated by PyTorch.",
        "out_of_memory device=CUDA tried=268435456 gpu=0 free=73400320",
    );
    // PyTorch `ProcessGroupNCCL.cpp` watchdog (the c10 prefix as PyTorch prints it)
    check(
        "[rank0]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST, NumelIn=131072000, NumelOut=131072000, Timeout(ms)=600000) ran for 600081 milliseconds before timing out.",
        "nccl kind=CollectiveTimeout rank=0 op=BROADCAST timeout_ms=600000 ran_ms=600081",
    );
    // real-long/rtx4090-qwen3-4b-kv-retraction.log:671 (at exit)
    check(
        "[rank0]:[W913 16:10:17.041066816 ProcessGroupNCCL.cpp:1624] Warning: WARNING: destroy_process_group() was not called before program exit, which can leak resources. For more info, please see https://pytorch.org/docs/stable/distributed.html#shutdown (function operator())",
        "nccl kind=Shutdown",
    );
    // the slow-pass tracer's format string
    check(
        "[2026-03-01 10:00:00 TP0] slow scheduler pass: event_loop_overlap took 812.4ms (>= 500.0ms; thread stacks were dumped to stderr by the faulthandler watchdog)",
        "slow_scheduler_pass @2026-03-01 10:00:00 [TP0] label=event_loop_overlap took_ms=812.4 threshold_ms=500",
    );
    // `http_server.py` health_generate
    check(
        "[2025-10-15 10:47:27] Health check failed. Server couldn't get a response from detokenizer for last 20 seconds. tic start time: 10:47:07. last_heartbeat time: 09:44:42",
        "health_check_failed @2025-10-15 10:47:27 timeout_s=20",
    );
    // real-long/rtx4090-qwen3-4b-kv-retraction.log:672 and real-4/101:129
    check(
        "[2025-09-13 16:10:17] kill_process_tree called: parent_pid=30489, include_parent=True, pid=30489",
        "signal @2025-09-13 16:10:17 signal=KillProcessTree",
    );
    check(
        "[2026-02-21 13:07:40] No live scheduler processes found; skipping py-spy and CUDA coredump.",
        "signal @2026-02-21 13:07:40 signal=NoLiveSchedulers",
    );
    // real-2/104 (HiCache with Mooncake), lines 12, 70, 106, 108
    check(
        "[2026-02-09 14:38:38] Creating storage backend 'mooncake' (sglang.srt.mem_cache.storage.mooncake_store.mooncake_store.MooncakeStore)",
        "hicache @2026-02-09 14:38:38 line=StorageBackend(\"mooncake\")",
    );
    check(
        "[2026-02-09 14:45:22] Prefetch 2547616e604d4756af454a269cb783fb completed with 0 tokens",
        "hicache @2026-02-09 14:45:22 line=PrefetchDone { tokens: Some(0) }",
    );
    check(
        "[2026-02-09 14:45:22] Prefetching 24316 pages for request 2547616e604d4756af454a269cb783fb.",
        "hicache @2026-02-09 14:45:22 line=PrefetchStarted { pages: Some(24316) }",
    );
    check(
        "[2026-02-09 14:45:22] Revoking prefetch for request 9b956e2796094b30b65bd7b1465a5a80 due to insufficient hits (9).",
        "hicache @2026-02-09 14:45:22 line=PrefetchRevoked { hits: Some(9) }",
    );
    // real-4/100 (DGX Spark, SWA), line 13; real-2/104, line 2
    check(
        "[2026-03-02 09:12:40] SWAKVPool mem usage: 28.93 GB, swa size: 148717, full size: 185897",
        "swa_pool @2026-03-02 09:12:40 full_tokens=185897 swa_tokens=148717",
    );
    check(
        "[2026-02-09 14:38:28] Using KV cache dtype: torch.bfloat16",
        "kv_cache_dtype @2026-02-09 14:38:28 dtype=torch.bfloat16",
    );
}

/// A launcher's progress dots glued in front of the server's first line (real-long/
/// ascend-qwen3next-80b-hybrid-mamba.log:498): the line is read as if they were not there.
#[test]
fn progress_dots_before_a_line() {
    check(
        "....[2026-01-04 07:35:49] INFO:     127.0.0.1:52992 - \"GET /health_generate HTTP/1.1\" 503 Service Unavailable",
        "http_access @2026-01-04 07:35:49 method=GET path=/health_generate status=503",
    );
    check("....", "other");
}

/// real/050 (blockquoted watchdog), line 3: the watchdog could not dump a hung process; and
/// real-long/ascend-dsr1-dp16-mtp-mixed.log:1377, the Ascend build's NCCL warning before graph
/// capture: an NCCL line of no consequence.
#[test]
fn pyspy_failures_and_npu_nccl_warnings() {
    check(
        "> [2025-07-11 17:40:14 DP0 TP2] Pyspy failed to dump PID 546. Error: /bin/sh: 1: py-spy: not found",
        "pyspy_failed @2025-07-11 17:40:14 [DP0 TP2]",
    );
    check(
        "[rank11]:[W104 07:05:50.898247453 compiler_depend.ts:207] Warning: Waiting for pending NCCL work to finish before starting graph capture. (function operator())",
        "nccl kind=Other",
    );
}
