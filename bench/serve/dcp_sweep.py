#!/usr/bin/env python3
"""DCP against no DCP at the same T and the same KV memory per rank, through `ctxpar serve`.

For each configuration (default: -tp 2 -dcp 1 and -tp 2 -dcp 2 on builtin:tiny-qwen2, whose
one KV head every rank replicates without DCP), starts a server on a free loopback port,
reads the KV capacity it reached from /metrics (ctxpar:kv_cache_token_capacity), then runs
bench_serve at rising --max-concurrency with long inputs and reports where the output
throughput plateaus: once the running requests no longer fit the KV cache, more concurrency
only queues (num_requests_waiting) or preempts (num_preemptions_total). With the same memory
DCP holds N times the tokens, so its plateau comes later.

  bench/serve/dcp_sweep.py --ctxpar build/apps/ctxpar [--input-len 3000] [--output-len 64]
"""

import argparse
import os
import socket
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_serve  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def metrics(url):
    with urllib.request.urlopen(url + "/metrics", timeout=30) as r:
        out = {}
        for line in r.read().decode().splitlines():
            if line and not line.startswith("#"):
                key, value = line.rsplit(" ", 1)
                out[key.split("{")[0]] = out.get(key.split("{")[0], 0.0) + float(value)
        return out


def wait_healthy(url, process, timeout=300):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"ctxpar serve exited with {process.returncode}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError("server not healthy in time")


def sweep(args, tp, dcp):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [args.ctxpar, "serve", args.model, "-tp", str(tp), "-dcp", str(dcp), "--port", str(port),
           "--max-model-len", str(args.max_model_len), "--kv-cache-memory", args.kv_cache_memory,
           "--block-size", "16", "--max-num-seqs", "64", "--max-num-batched-tokens",
           str(args.max_num_batched_tokens), "--dtype", "float32"]
    log = open(os.devnull, "w")
    server = subprocess.Popen(cmd, stdout=log, stderr=log)
    rows = []
    try:
        wait_healthy(url, server)
        m = metrics(url)
        capacity = int(m["ctxpar:kv_cache_token_capacity"])
        without = int(m["ctxpar:kv_cache_token_capacity_without_dcp"])
        kv_bytes = int(m["ctxpar:kv_cache_bytes_per_rank"])
        fits = capacity // (args.input_len + args.output_len)
        for c in args.concurrency:
            before = metrics(url)
            a = bench_serve.parse_args([
                "--base-url", url, "--random-input-len", str(args.input_len),
                "--random-output-len", str(args.output_len), "--num-prompts",
                str(max(2 * c, args.min_prompts)), "--max-concurrency", str(c), "--seed", str(c),
                "--timeout", str(args.timeout)])
            s = bench_serve.run(a)
            after = metrics(url)
            rows.append({"tp": tp, "dcp": dcp, "capacity": capacity, "without": without,
                         "kv_bytes": kv_bytes, "fits": fits, "concurrency": c, **s,
                         "preemptions": after["vllm:num_preemptions_total"]
                         - before["vllm:num_preemptions_total"]})
            print(f"T={tp} N={dcp} concurrency {c:>3}: {s['output_throughput']:8.1f} out tok/s, "
                  f"{s['request_throughput']:6.3f} req/s, TTFT {s['mean_ttft_ms']:8.1f} ms, "
                  f"TPOT {s['mean_tpot_ms']:7.2f} ms, preemptions {rows[-1]['preemptions']:.0f}, "
                  f"failed {s['failed']}", flush=True)
    finally:
        server.terminate()
        server.wait(timeout=60)
    return rows


def plateau(rows, within=0.9):
    """The smallest concurrency reaching `within` of the best output throughput."""
    best = max(r["output_throughput"] for r in rows)
    return min(r["concurrency"] for r in rows if r["output_throughput"] >= within * best)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ctxpar", required=True, help="path to the ctxpar binary")
    p.add_argument("--model", default="builtin:tiny-qwen2")
    p.add_argument("--tp", type=int, default=2)
    p.add_argument("--dcp", type=int, default=2)
    p.add_argument("--input-len", type=int, default=3000)
    p.add_argument("--output-len", type=int, default=64)
    p.add_argument("--max-model-len", type=int, default=4096)
    p.add_argument("--max-num-batched-tokens", type=int, default=4096)
    # tiny-qwen2 keeps 3 layers x K and V x 24 floats per token: 576 bytes per rank without
    # DCP. 8 MiB then holds ~4 requests of 3K tokens, and twice that with N = 2.
    p.add_argument("--kv-cache-memory", default="8MiB")
    p.add_argument("--concurrency", type=lambda s: [int(x) for x in s.split(",")],
                   default=[1, 2, 4, 6, 8, 12, 16])
    p.add_argument("--min-prompts", type=int, default=8)
    p.add_argument("--timeout", type=float, default=900)
    args = p.parse_args()
    results = {n: sweep(args, args.tp, n) for n in (1, args.dcp)}
    print()
    print(f"{args.model}, input {args.input_len}, output {args.output_len}, "
          f"--kv-cache-memory {args.kv_cache_memory} per rank")
    print(f"{'T':>2} {'N':>2} {'KV/rank':>10} {'capacity':>9} {'fit':>4} {'plateau at':>11} "
          f"{'best out tok/s':>15}")
    for n, rows in results.items():
        r = rows[0]
        print(f"{args.tp:>2} {n:>2} {r['kv_bytes']:>10} {r['capacity']:>9} {r['fits']:>4} "
              f"{plateau(rows):>11} {max(x['output_throughput'] for x in rows):>15.1f}")


if __name__ == "__main__":
    main()
