#!/usr/bin/env python3
"""ctxpar's tokenizer against the Rust `tokenizers` crate (through its Python package), one
thread, same 1 MiB text and same tokenizer.json, in one run.

Runs build/bench/tokenizer/tokenizer_bench, which writes its mixed text and the ids it
computes; encodes the same text with `tokenizers` (RAYON_NUM_THREADS=1), checks the ids are
identical, and prints MB/s of both and their ratio (ctxpar / Rust; the goal is >= 1.0).
Rust is timed three ways: Tokenizer.encode of the whole text (what vLLM calls), encode_batch_fast
of it (no offsets), and encode_batch_fast of the text cut into ~4 KiB pieces at line ends
(`tokenizers` slows down on one very long string); the ratio is taken against the fastest.
Both sides are timed in CPU time (Google Benchmark's default), so other load on the machine
does not tilt the ratio.

    /tmp/tok-venv/bin/python bench/tokenizer/compare_tokenizers.py \
        [--bench build/bench/tokenizer/tokenizer_bench] [--tokenizers llama3,qwen2]

The environment is tools/requirements-tokenizer-fixtures.txt.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

os.environ["RAYON_NUM_THREADS"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"

from tokenizers import Tokenizer  # noqa: E402  (after the thread settings)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEFAULT = "gpt2,llama3,qwen2,deepseek_v3,llama2,mistral"


def best_rate(fn, nbytes, min_seconds=1.0, repeats=3):
    """MB/s (CPU time) of the fastest of `repeats` timings, each at least min_seconds/repeats."""
    fn()  # warm the caches, as the C++ benchmark's iterations are warm
    best = 0.0
    for _ in range(repeats):
        n, start = 0, time.process_time()
        while True:
            fn()
            n += 1
            elapsed = time.process_time() - start
            if elapsed >= min_seconds / repeats:
                break
        best = max(best, n * nbytes / elapsed / 1e6)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bench", default=os.path.join(ROOT, "build", "bench", "tokenizer",
                                                        "tokenizer_bench"))
    parser.add_argument("--tokenizers", default=DEFAULT)
    args = parser.parse_args()
    names = args.tokenizers.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        text_path = os.path.join(tmp, "text.txt")
        out = subprocess.run(
            [args.bench, f"--save_text={text_path}", f"--ids_out={tmp}",
             f"--tokenizers={args.tokenizers}", "--benchmark_format=json",
             "--benchmark_min_time=1", "--benchmark_repetitions=3",
             "--benchmark_report_aggregates_only=true"],
            check=True, capture_output=True, text=True).stdout
        cpp = {}
        for b in json.loads(out)["benchmarks"]:
            if b.get("aggregate_name") == "max" or (b.get("aggregate_name") == "mean"
                                                    and b["run_name"] not in cpp):
                cpp[b["run_name"].split("/")[1]] = b["MB_per_s"]
        with open(text_path, "rb") as f:
            raw = f.read()
        text = raw.decode("utf-8")
        print(f"text: {len(raw)} bytes, {len(text)} characters; one thread\n")
        pieces, i = [], 0
        while i < len(text):
            j = text.find("\n", i + 4096)
            j = len(text) if j < 0 else j + 1
            pieces.append(text[i:j])
            i = j
        print(f"{'tokenizer':<12} {'tokens':>8} {'ctxpar MB/s':>12} {'Rust encode':>12} "
              f"{'Rust fast':>10} {'Rust 4KiB':>10} {'ratio':>6}  ids")
        ok = True
        for name in names:
            tok = Tokenizer.from_file(os.path.join(ROOT, "tests", "fixtures", "tokenizers", name,
                                                   "tokenizer.json"))
            ids = tok.encode(text, add_special_tokens=False).ids
            with open(os.path.join(tmp, f"{name}.ids")) as f:
                ours = [int(line) for line in f]
            same = ids == ours
            ok = ok and same
            rust = best_rate(lambda: tok.encode(text, add_special_tokens=False), len(raw))
            fast = best_rate(lambda: tok.encode_batch_fast([text], add_special_tokens=False),
                             len(raw))
            chunked = best_rate(lambda: tok.encode_batch_fast(pieces, add_special_tokens=False),
                                len(raw))
            ratio = cpp[name] / max(rust, fast, chunked)
            print(f"{name:<12} {len(ids):>8} {cpp[name]:>12.2f} {rust:>12.2f} {fast:>10.2f} "
                  f"{chunked:>10.2f} {ratio:>6.2f}  {'same' if same else 'DIFFERENT'}")
        if not ok:
            print("\nids differ: ctxpar does not match tokenizers on this text")
            sys.exit(1)


if __name__ == "__main__":
    main()
