#!/usr/bin/env python3
"""A load client for `ctxpar serve`, measured the way `vllm bench serve` measures.

Random token-id prompts of --random-input-len tokens asking for --random-output-len tokens
(ignore_eos, so every request generates exactly that many), sent as streaming completions
with stream_options.include_usage, at --request-rate (Poisson arrivals; inf: all at once)
and at most --max-concurrency in flight. Reports request throughput, output and total token
throughput, and TTFT, TPOT and ITL (mean, median, p99) with vLLM's definitions:
  TTFT  the first chunk whose `choices` is not empty, from the request's start;
  ITL   the gap between consecutive such chunks;
  TPOT  (latency - TTFT) / (output tokens - 1), output tokens from usage.completion_tokens.
Standard library only (asyncio streams, no aiohttp), loopback only, bounded in time and count.
"""

import argparse
import asyncio
import json
import random
import statistics
import sys
import time
import urllib.parse
import urllib.request


def percentile(values, p):
    """The p-th percentile with linear interpolation (numpy's default)."""
    if not values:
        return 0.0
    s = sorted(values)
    k = (len(s) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


async def read_chunked_events(reader):
    """Yields the SSE `data:` payloads of a chunked HTTP body as they arrive."""
    buffer = b""
    while True:
        size_line = await reader.readline()
        if not size_line:
            return
        size = int(size_line.strip().split(b";")[0], 16)
        if size == 0:
            await reader.readline()
            return
        buffer += await reader.readexactly(size)
        await reader.readexactly(2)  # CRLF after the chunk
        while b"\n\n" in buffer:
            event, buffer = buffer.split(b"\n\n", 1)
            for line in event.split(b"\n"):
                if line.startswith(b"data: "):  # ':' comment lines (pings) are skipped
                    yield line[len(b"data: "):]


async def one_request(host, port, path, body, timeout):
    """Streams one completion; returns its measurements (or an error)."""
    result = {"ttft": None, "itl": [], "latency": None, "output_tokens": 0, "error": None}
    start = time.perf_counter()
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
        payload = json.dumps(body).encode()
        writer.write(
            f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n".encode() + payload)
        await writer.drain()
        status = await asyncio.wait_for(reader.readline(), timeout)
        if b" 200 " not in status:
            raise RuntimeError(status.decode().strip())
        while (await asyncio.wait_for(reader.readline(), timeout)) not in (b"\r\n", b""):
            pass
        last = None
        events = read_chunked_events(reader)
        while True:
            data = await asyncio.wait_for(events.__anext__(), timeout)
            if data == b"[DONE]":
                break
            chunk = json.loads(data)
            if "error" in chunk:
                raise RuntimeError(chunk["error"]["message"])
            now = time.perf_counter()
            if chunk.get("choices"):
                if result["ttft"] is None:
                    result["ttft"] = now - start
                else:
                    result["itl"].append(now - last)
                last = now
            if chunk.get("usage"):
                result["output_tokens"] = chunk["usage"]["completion_tokens"]
        result["latency"] = time.perf_counter() - start
        writer.close()
    except (StopAsyncIteration, asyncio.TimeoutError, OSError, RuntimeError, ValueError) as e:
        result["error"] = f"{type(e).__name__}: {e}"
    return result


async def run_load(args, prompts):
    url = urllib.parse.urlparse(args.base_url)
    semaphore = asyncio.Semaphore(args.max_concurrency or len(prompts))
    rng = random.Random(args.seed)

    async def limited(prompt):
        async with semaphore:
            body = {"model": args.model, "prompt": prompt, "max_tokens": args.random_output_len,
                    "temperature": 0.0, "ignore_eos": True, "stream": True,
                    "stream_options": {"include_usage": True}}
            return await one_request(url.hostname, url.port, args.endpoint, body,
                                     args.request_timeout)

    tasks = []
    start = time.perf_counter()
    for prompt in prompts:
        tasks.append(asyncio.create_task(limited(prompt)))
        if args.request_rate != float("inf"):
            await asyncio.sleep(rng.expovariate(args.request_rate))
    results = await asyncio.wait_for(asyncio.gather(*tasks), args.timeout)
    return results, time.perf_counter() - start


def summarize(results, duration, args, input_len):
    ok = [r for r in results if r["error"] is None]
    ttft = [r["ttft"] * 1000 for r in ok if r["ttft"] is not None]
    itl = [x * 1000 for r in ok for x in r["itl"]]
    tpot = [(r["latency"] - r["ttft"]) * 1000 / (r["output_tokens"] - 1)
            for r in ok if r["output_tokens"] > 1]
    e2el = [r["latency"] * 1000 for r in ok]
    output = sum(r["output_tokens"] for r in ok)
    summary = {
        "completed": len(ok),
        "failed": len(results) - len(ok),
        "errors": sorted({r["error"] for r in results if r["error"]})[:5],
        "duration_s": duration,
        "max_concurrency": args.max_concurrency,
        "request_rate": args.request_rate,
        "input_len": input_len,
        "output_len": args.random_output_len,
        "request_throughput": len(ok) / duration,
        "output_throughput": output / duration,
        "total_token_throughput": (output + input_len * len(ok)) / duration,
    }
    for name, values in (("ttft", ttft), ("tpot", tpot), ("itl", itl), ("e2el", e2el)):
        summary[f"mean_{name}_ms"] = statistics.fmean(values) if values else 0.0
        for p in args.percentiles:
            summary[f"p{p:g}_{name}_ms"] = percentile(values, p)
    return summary


def print_summary(s, percentiles):
    print("============ Serving Benchmark Result ============")
    rows = [("Successful requests:", s["completed"]), ("Failed requests:", s["failed"]),
            ("Maximum request concurrency:", s["max_concurrency"]),
            ("Benchmark duration (s):", f"{s['duration_s']:.2f}"),
            ("Request throughput (req/s):", f"{s['request_throughput']:.2f}"),
            ("Output token throughput (tok/s):", f"{s['output_throughput']:.2f}"),
            ("Total Token throughput (tok/s):", f"{s['total_token_throughput']:.2f}")]
    for label, value in rows:
        print(f"{label:<40}{value:>10}")
    for name, title in (("ttft", "Time to First Token"), ("tpot", "Time per Output Token (excl. 1st token)"),
                        ("itl", "Inter-token Latency")):
        print(f"{'-' * 15}{title}{'-' * 15}")
        print(f"{'Mean ' + name.upper() + ' (ms):':<40}{s[f'mean_{name}_ms']:>10.2f}")
        for p in percentiles:
            label = "Median" if p == 50 else f"P{p:g}"
            print(f"{label + ' ' + name.upper() + ' (ms):':<40}{s[f'p{p:g}_{name}_ms']:>10.2f}")
    for e in s["errors"]:
        print(f"error: {e}")
    print("=" * 50)


def served_model(base_url):
    with urllib.request.urlopen(base_url + "/v1/models", timeout=30) as r:
        return json.load(r)["data"][0]["id"]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--base-url", default="http://127.0.0.1:8000")
    p.add_argument("--endpoint", default="/v1/completions")
    p.add_argument("--model", default=None, help="default: the server's model")
    p.add_argument("--random-input-len", type=int, default=1024)
    p.add_argument("--random-output-len", type=int, default=128)
    p.add_argument("--num-prompts", type=int, default=64)
    p.add_argument("--max-concurrency", type=int, default=None)
    p.add_argument("--request-rate", type=float, default=float("inf"))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--vocab", type=int, default=256, help="prompt ids are drawn from [0, vocab)")
    p.add_argument("--percentiles", type=lambda s: [float(x) for x in s.split(",")],
                   default=[50.0, 99.0])
    p.add_argument("--timeout", type=float, default=600, help="bound on the whole run (s)")
    p.add_argument("--request-timeout", type=float, default=300, help="bound per read (s)")
    p.add_argument("--save-result", default=None, help="write the summary as JSON here")
    args = p.parse_args(argv)
    host = urllib.parse.urlparse(args.base_url).hostname
    if host not in ("127.0.0.1", "localhost", "::1"):
        p.error(f"--base-url {args.base_url}: this client only talks to loopback")
    if not 1 <= args.num_prompts <= 100000:
        p.error("--num-prompts must be in [1, 100000]")
    return args


def run(args):
    if args.model is None:
        args.model = served_model(args.base_url)
    rng = random.Random(args.seed)
    prompts = [[rng.randrange(args.vocab) for _ in range(args.random_input_len)]
               for _ in range(args.num_prompts)]
    results, duration = asyncio.run(run_load(args, prompts))
    summary = summarize(results, duration, args, args.random_input_len)
    if args.save_result:
        with open(args.save_result, "w") as f:
            json.dump(summary, f, indent=2)
    return summary


if __name__ == "__main__":
    a = parse_args()
    s = run(a)
    print_summary(s, a.percentiles)
    sys.exit(0 if s["failed"] == 0 else 1)
