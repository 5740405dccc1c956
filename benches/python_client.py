#!/usr/bin/env python3
"""Python comparison client for `sglang-client`'s batch runner (asyncio + aiohttp).

Does what `crates/sglang-client/examples/bench_client.rs` does: writes N prompts to a JSONL
file, reads them back, sends them to /v1/chat/completions with at most C requests in flight
(an asyncio.Semaphore; a task is created when a slot frees), and appends one JSON record per
request (id, content, finish reason, usage, submit/start/end times, permit wait, attempts) to an
output file, flushed per record. Then prints one JSON object: requests, ok, wall_s, req_per_s,
cpu_s (user + system of this process, resource.getrusage), cpu_s_per_1000_req.

Usage:
    target/release/sglang-sim --near-zero --port 30001 &
    python3 benches/python_client.py --url http://127.0.0.1:30001 --requests 20000 --concurrency 256

Needs aiohttp (`pip install aiohttp`).
"""
import argparse
import asyncio
import json
import os
import resource
import sys
import tempfile
import time

try:
    import aiohttp
except ImportError:
    sys.stderr.write("python_client.py: the aiohttp package is not installed; run `pip install aiohttp` "
                     "and try again.\n")
    sys.exit(2)


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


async def one(session, url, prompt, sem_wait, submit, out):
    body = {"messages": [{"role": "user", "content": prompt["prompt"]}], "max_tokens": 8, "stream": False}
    start = time.time()
    rec = {"id": prompt["id"], "ok": False, "submit_unix_s": submit, "permit_wait_s": sem_wait,
           "start_unix_s": start, "attempts": 1}
    try:
        async with session.post(url + "/v1/chat/completions", json=body) as resp:
            if resp.status != 200:
                rec["error"] = f"HTTP {resp.status}: {(await resp.text())[:300]}"
            else:
                data = await resp.json()
                ch = data["choices"][0]
                rec.update(ok=True, content=ch["message"].get("content"),
                           reasoning_content=ch["message"].get("reasoning_content"),
                           finish_reason=ch.get("finish_reason"), usage=data.get("usage"))
    except Exception as e:  # recorded per request, the run goes on
        rec["error"] = repr(e)
    rec["end_unix_s"] = time.time()
    rec["latency_s"] = rec["end_unix_s"] - start
    out.write(json.dumps(rec) + "\n")
    out.flush()
    return rec["ok"]


async def run(a):
    tmp = tempfile.mkdtemp(prefix="python_client_")
    inp = os.path.join(tmp, "prompts.jsonl")
    with open(inp, "w") as f:
        for i in range(a.requests):
            f.write(json.dumps({"id": f"b{i}", "prompt": f"benchmark prompt number {i}"}) + "\n")
    with open(inp) as f:
        prompts = [json.loads(line) for line in f if line.strip()]
    sem = asyncio.Semaphore(a.concurrency)
    conn = aiohttp.TCPConnector(limit=a.concurrency)
    timeout = aiohttp.ClientTimeout(total=3600, connect=10)
    ok = 0
    cpu0, t0 = cpu_seconds(), time.time()
    async with aiohttp.ClientSession(connector=conn, timeout=timeout) as session:
        with open(os.path.join(tmp, "out.jsonl"), "a") as out:
            tasks = set()

            async def guarded(p, waited, submit):
                try:
                    return await one(session, a.url, p, waited, submit, out)
                finally:
                    sem.release()

            for p in prompts:
                w0 = time.monotonic()
                await sem.acquire()
                t = asyncio.create_task(guarded(p, time.monotonic() - w0, time.time()))
                tasks.add(t)
                t.add_done_callback(tasks.discard)
            results = await asyncio.gather(*list(tasks)) if tasks else []
    # count from the output file (tasks finished before gather are not in `results`)
    with open(os.path.join(tmp, "out.jsonl")) as f:
        ok = sum(1 for line in f if json.loads(line)["ok"])
    wall, cpu = time.time() - t0, cpu_seconds() - cpu0
    del results
    print(json.dumps({"client": "python-aiohttp", "requests": a.requests, "ok": ok, "failed": a.requests - ok,
                      "concurrency": a.concurrency, "wall_s": round(wall, 3), "req_per_s": round(ok / wall),
                      "cpu_s": round(cpu, 2), "cpu_s_per_1000_req": round(cpu * 1000 / a.requests, 4)}))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default="http://127.0.0.1:30001")
    p.add_argument("--requests", type=int, default=20000)
    p.add_argument("--concurrency", type=int, default=256)
    asyncio.run(run(p.parse_args()))


if __name__ == "__main__":
    main()
