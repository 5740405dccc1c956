"""OpenMetrics backfill for the fleet scale measurement (issue 14): 100 instances x 8 DP ranks,
24 h at a 15 s step, ending at END (Unix seconds). Instance i is KV-bound (i%3==0), pinned at
a running cap (i%3==1) or nearly idle (i%3==2); DP rank 3 of instance 7 (10.0.0.8:30000)
carries a standing queue (imbalance). 4,300 series, 24.8 M samples, about 2.8 GB.

    python3 fleet_openmetrics.py fleet.om END
    promtool tsdb create-blocks-from openmetrics fleet.om data
    prometheus --storage.tsdb.path=data --storage.tsdb.retention.time=30d ...
    throughput-doctor diagnose --prometheus URL --start END-86385 --end END --step 15s
"""
import sys
N, R, STEP = 100, 8, 15
END = int(sys.argv[2]) // STEP * STEP
START = END - 24 * 3600 + STEP
T = list(range(START, END + 1, STEP))
out = open(sys.argv[1], "w", buffering=1 << 22)
def inst(i): return f"10.0.{i // 250}.{i % 250 + 1}:30000"
def noise(i, r, k, t): return ((i * 7919 + r * 104729 + k * 1299709 + t * 2654435761) >> 7) % 1000 / 1000.0
def gauge(i, r, k, t):
    kind = i % 3
    n = noise(i, r, k, t)
    if k == 0:  # running
        return [40 + 20 * n, 16, 1 + round(2 * n)][kind]
    if k == 1:  # queued
        q = [20 + 40 * n, 30 + 10 * n, 0][kind]
        return q * 3 + 30 if (i == 7 and r == 3) else q
    if k == 2:  # usage
        return round([0.9 + 0.08 * n, 0.1 + 0.02 * n, 0.02][kind], 2)
    if k == 3:  # gen throughput
        return [1500 + 300 * n, 900 + 50 * n, 60 + 20 * n][kind]
    return [24000, 400000, 400000][kind]  # max_total_num_tokens
names = ["num_running_reqs", "num_queue_reqs", "token_usage", "gen_throughput", "max_total_num_tokens"]
for k, name in enumerate(names):
    out.write(f"# TYPE sglang:{name} gauge\n")
    for i in range(N):
        for r in range(R):
            lab = f'sglang:{name}{{instance="{inst(i)}",job="sglang",dp_rank="{r}",engine_type="unified"}} '
            out.write("".join(f"{lab}{gauge(i, r, k, t)} {t}\n" for t in T))
for name, rate in [("generation_tokens", [12000, 7200, 480]), ("num_requests", [20, 12, 1]), ("prompt_tokens", [30000, 9000, 600])]:
    out.write(f"# TYPE sglang:{name} counter\n")
    for i in range(N):
        lab = f'sglang:{name}_total{{instance="{inst(i)}",job="sglang"}} '
        out.write("".join(f"{lab}{rate[i % 3] * (t - START)} {t}\n" for t in T))
out.write("# EOF\n")
