"""ctxpar against llama.cpp on the same weights, threads and machine (run it with run.sh).

The model: random weights in the Llama-3.2-1B shape (hidden 2048, 16 layers, 32 q / 8 KV
heads of 64, FFN 8192, vocab 128256, tied embeddings, default RoPE), bf16, written once as a
Hugging Face directory (config.json + model.safetensors, read by ctxpar) and as a GGUF file
with the same values (read by llama.cpp; q/k rows permuted to llama.cpp's RoPE layout, as
its converter does).

Measured, for each thread count, at batch 1:
  prefill P       prompt tokens per second for a P-token prompt
  decode 0-N      tokens per second decoding from a 1-token prompt up to context N
  decode at C     tokens per second of D decode tokens after a C-token prompt; with
                  --fill-context the C tokens' KV is filled, not computed (ctxpar:
                  `bench --dummy-context`, random values; llama.cpp: the K/V of a real
                  512-token prefill repeated to C cells through its sequence-state API),
                  so 64K rows take minutes instead of hours of llama.cpp prefill
ctxpar runs `ctxpar bench` (bf16 KV cache; one untimed warm-up batch of the same shape on the
loaded engine, as llama.cpp's model stays loaded across repeats, after an untimed 64-token
prefill and 4 decode steps right after its load); llama.cpp runs through
llama-cpp-python's Llama.eval (flash attention on, f16 KV cache, n_batch 2048 / n_ubatch 512,
its defaults but flash attention). Runs of the two engines alternate, each case is run --repeats times and
the best is kept, and the read ceiling (bench/support/read_ceiling, same threads) is
measured right before and right after every run: on these VMs bandwidth moves with host
placement (a 2-core VM read 35 GB/s and 60 GB/s in alternate seconds), so each figure is
printed with the ceiling it ran beside, as a range where the two measurements differ by more
than 15%; such a run is repeated (--tries in all), and the best of each case is taken among
the runs beside a steady ceiling where there are any. For decode, "roofline" is the higher of the two ceilings / weight bytes read per
token (every weight once, the tied embedding as lm_head). Prefill is also given as a fraction
of the compute peak of the same threads (bench/support/compute_ceiling, the better of a
measurement before and after the runs of that thread count: the faster of the f32
FMA and AVX-512 BF16's vdpbf16ps; both engines' bf16 matmuls use the latter where it is the
faster, AMX tiles go beyond it), counting 2 FLOPs per multiply-add of the linears, of the
causal attention (QK and PV) and of the last token's lm_head: 1.5x another engine needs 1.5x
its fraction of that peak. run.sh --isa avx2 holds both engines to AVX2 (and its compute peak
to the AVX2 FMA); the last line printed says what each ran.
"""

import argparse
import json
import os
import struct
import subprocess
import sys
import time

import numpy as np

HIDDEN, LAYERS, HEADS, KV_HEADS, HEAD_DIM, FFN, VOCAB = 2048, 16, 32, 8, 64, 8192, 128256
ROPE_THETA, EPS = 500000.0, 1e-5


def bf16_bits(x):
    """float32 array -> uint16 bf16 bits, round to nearest even."""
    u = x.astype(np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def model_tensors(seed):
    """HF name -> (uint16 bf16 bits, shape), in checkpoint order."""
    rng = np.random.default_rng(seed)

    def w(*shape, scale=0.02):
        return bf16_bits(rng.standard_normal(shape, dtype=np.float32) * scale)

    def norm():
        return bf16_bits(1.0 + 0.1 * rng.standard_normal(HIDDEN, dtype=np.float32))

    t = {"model.embed_tokens.weight": w(VOCAB, HIDDEN)}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"] = norm()
        t[p + "self_attn.q_proj.weight"] = w(HEADS * HEAD_DIM, HIDDEN)
        t[p + "self_attn.k_proj.weight"] = w(KV_HEADS * HEAD_DIM, HIDDEN)
        t[p + "self_attn.v_proj.weight"] = w(KV_HEADS * HEAD_DIM, HIDDEN)
        t[p + "self_attn.o_proj.weight"] = w(HIDDEN, HEADS * HEAD_DIM)
        t[p + "post_attention_layernorm.weight"] = norm()
        t[p + "mlp.gate_proj.weight"] = w(FFN, HIDDEN)
        t[p + "mlp.up_proj.weight"] = w(FFN, HIDDEN)
        t[p + "mlp.down_proj.weight"] = w(HIDDEN, FFN)
    t["model.norm.weight"] = norm()
    return t


def decode_weight_bytes():
    """bf16 bytes read per decode token: every linear once, the tied embedding as lm_head."""
    per_layer = (HEADS + 2 * KV_HEADS) * HEAD_DIM * HIDDEN + HIDDEN * HEADS * HEAD_DIM
    per_layer += 3 * FFN * HIDDEN
    return 2 * (LAYERS * per_layer + VOCAB * HIDDEN)


def write_config(path):
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": VOCAB,
        "hidden_size": HIDDEN,
        "intermediate_size": FFN,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS,
        "head_dim": HEAD_DIM,
        "max_position_embeddings": 131072,
        "rms_norm_eps": EPS,
        "rope_theta": ROPE_THETA,
        "attention_bias": False,
        "mlp_bias": False,
        "tie_word_embeddings": True,
        "hidden_act": "silu",
        "bos_token_id": 1,
        "eos_token_id": 2,
        "torch_dtype": "bfloat16",
    }
    with open(path, "w") as f:
        json.dump(config, f, indent=2)


def write_safetensors(path, tensors):
    """The safetensors layout: u64 header size, JSON header, then the raw tensor bytes."""
    header, offset = {}, 0
    for name, bits in tensors.items():
        header[name] = {"dtype": "BF16", "shape": list(bits.shape),
                        "data_offsets": [offset, offset + bits.nbytes]}
        offset += bits.nbytes
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-len(blob) % 8)  # data starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        for bits in tensors.values():
            f.write(bits.tobytes())


def rope_permute(bits, heads):
    """HF's rotate-half q/k rows -> llama.cpp's interleaved pairs, per head."""
    rows, cols = bits.shape
    return bits.reshape(heads, 2, rows // heads // 2, cols).swapaxes(1, 2).reshape(rows, cols)


def write_gguf(path, tensors):
    import gguf

    w = gguf.GGUFWriter(path, "llama")
    w.add_context_length(131072)
    w.add_embedding_length(HIDDEN)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_dimension_count(HEAD_DIM)
    w.add_rope_freq_base(ROPE_THETA)
    w.add_layer_norm_rms_eps(EPS)
    w.add_vocab_size(VOCAB)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_BF16)
    # A SentencePiece-style vocabulary of the right size: <unk> <s> </s>, the 256 byte
    # tokens, then placeholders. Only token ids are fed, so the strings never matter.
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    tokens += [f"t{i}" for i in range(len(tokens), VOCAB)]
    types = [2, 3, 3] + [6] * 256 + [1] * (VOCAB - 259)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * VOCAB)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    bf16 = gguf.GGMLQuantizationType.BF16
    f32 = gguf.GGMLQuantizationType.F32

    def as_f32(bits):
        return (bits.astype(np.uint32) << 16).view(np.float32)

    w.add_tensor("token_embd.weight", tensors["model.embed_tokens.weight"], raw_dtype=bf16)
    names = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
             "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
             "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        w.add_tensor(f"blk.{i}.attn_norm.weight", as_f32(tensors[p + "input_layernorm.weight"]),
                     raw_dtype=f32)
        w.add_tensor(f"blk.{i}.ffn_norm.weight",
                     as_f32(tensors[p + "post_attention_layernorm.weight"]), raw_dtype=f32)
        for hf, gg in names.items():
            bits = tensors[p + hf + ".weight"]
            if gg == "attn_q":
                bits = rope_permute(bits, HEADS)
            elif gg == "attn_k":
                bits = rope_permute(bits, KV_HEADS)
            w.add_tensor(f"blk.{i}.{gg}.weight", np.ascontiguousarray(bits), raw_dtype=bf16)
    w.add_tensor("output_norm.weight", as_f32(tensors["model.norm.weight"]), raw_dtype=f32)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def prepare_model(model_dir, seed):
    done = os.path.join(model_dir, "complete")
    gguf_path = os.path.join(model_dir, "model.gguf")
    if os.path.exists(done):
        return gguf_path
    os.makedirs(model_dir, exist_ok=True)
    print(f"writing the random bf16 model to {model_dir} (HF + GGUF, ~5 GB) ...", flush=True)
    tensors = model_tensors(seed)
    write_config(os.path.join(model_dir, "config.json"))
    write_safetensors(os.path.join(model_dir, "model.safetensors"), tensors)
    write_gguf(gguf_path, tensors)
    open(done, "w").close()
    return gguf_path


def read_ceiling(binary, threads, passes):
    out = subprocess.run([binary, "--json", "--passes", str(passes), str(threads)], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["gb_per_s"]


def compute_peak(binary, threads, avx2_only):
    """(GFLOP/s, instruction) of the faster multiply-add loop on `threads` pinned threads."""
    out = subprocess.run([binary, "--json"] + (["--avx2"] if avx2_only else []) + [str(threads)],
                         check=True, capture_output=True, text=True).stdout
    c = json.loads(out.strip().splitlines()[-1])
    if c["bf16_dot_gflop_per_s"] > c["fma_gflop_per_s"]:
        return c["bf16_dot_gflop_per_s"], "bf16 dot" + (" (AMX not counted)" if c["amx"] else "")
    return c["fma_gflop_per_s"], f"{c['fma_isa']} FMA" + (" (AMX not counted)" if c["amx"] else "")


def prefill_flops_per_token(prompt):
    """FLOPs per prompt token of a `prompt`-token prefill: the linears, causal attention
    (token i attends to i + 1 keys: 4 FLOPs per key per head dim, QK and PV) and the lm_head of
    the last token only."""
    linears = LAYERS * ((HEADS + 2 * KV_HEADS) * HEAD_DIM * HIDDEN + HIDDEN * HEADS * HEAD_DIM
                        + 3 * FFN * HIDDEN)
    attention = LAYERS * HEADS * 4 * HEAD_DIM * (prompt + 1) / 2
    return 2 * linears + attention + 2 * VOCAB * HIDDEN / prompt


def ceiling_steady(before, after):
    """Whether the read ceilings before and after a run agree within 15%."""
    return max(before, after) <= 1.15 * min(before, after)


def ceiling_cell(before, after):
    """The read ceiling beside a run: one figure, or a range where it moved by more than 15%."""
    return f"[{max(before, after):.1f}]" if ceiling_steady(before, after) else \
        f"[{before:.1f}->{after:.1f}]"


FILL_SEED = 512  # tokens prefilled for real before --fill-context repeats their K/V


def parse_seq_state(blob, cells):
    """llama_state_seq_get_data's bytes for one sequence of `cells` tokens, one stream, V not
    transposed (flash attention) -> (the 8-byte header before the cache, kept as is,
    [(type, row bytes, data) per K then V layer]). Raises on anything else."""
    def u32(at):
        return struct.unpack_from("<I", blob, at)[0]

    at = 8
    if u32(at) != 1 or u32(at + 4) != cells:
        raise RuntimeError(f"unexpected sequence state: streams {u32(at)}, cells {u32(at + 4)}")
    at += 8
    for i in range(cells):  # pos, n_seq_id (1), seq_id
        pos, n_seq, _ = struct.unpack_from("<iIi", blob, at)
        if pos != i or n_seq != 1:
            raise RuntimeError(f"unexpected cell {i}: pos {pos}, {n_seq} sequences")
        at += 12
    v_trans, n_layer = struct.unpack_from("<II", blob, at)
    if v_trans != 0:
        raise RuntimeError("llama.cpp's V cache is transposed (flash attention off?)")
    at += 8
    layers = []
    for _ in range(2 * n_layer):
        kind, row = struct.unpack_from("<iQ", blob, at)
        at += 12
        layers.append((kind, row, blob[at:at + cells * row]))
        at += cells * row
    if at != len(blob):
        raise RuntimeError(f"sequence state has {len(blob) - at} bytes past its last layer")
    return blob[:8], layers


def build_seq_state(prefix, layers, seed_cells, cells):
    """The inverse of parse_seq_state, with each layer's seed_cells rows repeated to `cells`."""
    cell_meta = np.zeros((cells, 3), dtype="<i4")  # pos, n_seq_id, seq_id 0
    cell_meta[:, 0] = np.arange(cells)
    cell_meta[:, 1] = 1
    parts = [prefix, struct.pack("<II", 1, cells), cell_meta.tobytes(),
             struct.pack("<II", 0, len(layers) // 2)]
    for kind, row, data in layers:
        rows = np.frombuffer(data, dtype=np.uint8).reshape(seed_cells, row)
        parts.append(struct.pack("<iQ", kind, row))
        parts.append(np.resize(rows, (cells, row)).tobytes())
    return b"".join(parts)


def random_prompt(rng, n):
    return [int(x) for x in rng.integers(259, VOCAB, size=n)]


class LlamaCpp:
    """llama.cpp through llama-cpp-python, one model load per thread count."""

    def __init__(self, gguf_path, threads, n_ctx):
        from llama_cpp import Llama

        self.llm = Llama(model_path=gguf_path, n_ctx=n_ctx, n_threads=threads,
                         n_threads_batch=threads, n_batch=2048, n_ubatch=512, flash_attn=True,
                         verbose=False)
        # Untimed, as ctxpar's bench warms up before it times: the first eval after a load
        # faults the mapped weights in and builds llama.cpp's repacked copies (its first
        # 512-token prefill ran 45-79 tok/s on 1 thread, warm ones 86-87 on the Zen 4 VM).
        self.run(list(range(259, 259 + 64)), 4)

    def run(self, prompt, decode_tokens, fill=False):
        """(prefill tok/s, decode tok/s) for one request: the prompt, then decode_tokens
        single-token steps (greedy next token, as ctxpar's bench samples). With fill, the
        prompt's KV is not computed but filled (fill_context) and the prefill rate is 0."""
        import llama_cpp

        llm = self.llm
        llm.reset()
        t0 = time.perf_counter()
        if fill:
            self.fill_context(prompt)
        else:
            llm.eval(prompt)
        prefill_s = time.perf_counter() - t0
        decode_s = 0.0
        if decode_tokens > 0:
            n_vocab = llm.n_vocab()
            token = prompt[-1]
            t0 = time.perf_counter()
            for _ in range(decode_tokens):
                llm.eval([token])
                logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits(llm.ctx),
                                               shape=(n_vocab,))
                token = int(np.argmax(logits))
            decode_s = time.perf_counter() - t0
        prefill = 0.0 if fill else len(prompt) / prefill_s
        return prefill, (decode_tokens / decode_s if decode_tokens else 0.0)

    def fill_context(self, prompt):
        """Leave sequence 0's cache holding len(prompt) tokens at positions 0..n-1 without
        computing them: the first FILL_SEED tokens are prefilled for real and their K/V rows
        repeated to length n, written back through llama.cpp's own sequence-state API. A
        decode step reads every cell whatever its values, so it costs what it costs after a
        real prefill (compare a row with and without --fill-context). The state's layout
        (llama-kv-cache.cpp, state_write) is parsed strictly and the parse must rebuild the
        saved bytes exactly, so a llama.cpp whose layout differs fails here instead of
        measuring something else."""
        import ctypes

        import llama_cpp

        llm = self.llm
        n = len(prompt)
        seed = prompt[:min(n, FILL_SEED)]
        llm.eval(seed)
        size = llama_cpp.llama_state_seq_get_size(llm.ctx, 0)
        buf = (ctypes.c_uint8 * size)()
        blob = bytes(buf[:llama_cpp.llama_state_seq_get_data(llm.ctx, buf, size, 0)])
        prefix, layers = parse_seq_state(blob, len(seed))
        if build_seq_state(prefix, layers, len(seed), len(seed)) != blob:
            raise RuntimeError("llama.cpp's sequence state does not rebuild from its parse: "
                               "its layout changed; --fill-context needs updating")
        filled = bytearray(build_seq_state(prefix, layers, len(seed), n))
        src = (ctypes.c_uint8 * len(filled)).from_buffer(filled)
        if llama_cpp.llama_state_seq_set_data(llm.ctx, src, len(filled), 0) != len(filled):
            raise RuntimeError(f"llama.cpp refused the filled {n}-token state")
        mem = llama_cpp.llama_get_memory(llm.ctx)
        last = llama_cpp.llama_memory_seq_pos_max(mem, 0)
        if last != n - 1:
            raise RuntimeError(f"filled cache ends at position {last}, expected {n - 1}")
        llm.n_tokens = n  # the next eval decodes at position n


def run_ctxpar(binary, model_dir, threads, context, decode_tokens, fill=False):
    """(prefill tok/s, decode tok/s, the ISA its kernels ran) from `ctxpar bench`: the prefill
    samples one token, then
    decode_tokens decode steps (so --output-len is decode_tokens + 1). With fill the prompt
    is not computed: --dummy-context fills its KV with random values."""
    kv_bytes = (context + decode_tokens + 64) * LAYERS * 2 * KV_HEADS * HEAD_DIM * 2
    # The checkpoint written for both engines, not `ctxpar bench`'s default of dummy weights.
    cmd = [binary, "bench", "--model", model_dir, "--load-format", "safetensors", "--dtype",
           "bfloat16", "--kv-cache-dtype", "bfloat16", "--batch-sizes", "1", "--context-lengths",
           str(context), "--output-len", str(decode_tokens + 1), "--threads-per-rank",
           str(threads), "--max-model-len", str(context + decode_tokens + 1),
           "--kv-cache-memory", str(max(kv_bytes * 2, 64 << 20)), "--num-iters-warmup", "1",
           "--json"] + (["--dummy-context"] if fill else [])
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    row = json.loads(out.strip().splitlines()[-1])[0]
    return row["prefill_tokens_per_second"], row["decode_tokens_per_second"], row["isa"]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ctxpar", required=True, help="the ctxpar binary")
    ap.add_argument("--read-ceiling", required=True, help="bench/support's read_ceiling binary")
    ap.add_argument("--compute-ceiling", required=True,
                    help="bench/support's compute_ceiling binary")
    ap.add_argument("--avx2-only", action="store_true",
                    help="both engines are held to AVX2 (run.sh --isa avx2): the compute peak "
                         "is AVX2's FMA (compute_ceiling --avx2)")
    ap.add_argument("--model-dir", required=True, help="where the model is written (reused)")
    ap.add_argument("--threads", default="1,2", help="thread counts, comma-separated")
    ap.add_argument("--prefill", default="512,4096", help="prefill prompt lengths")
    ap.add_argument("--short-decode", type=int, default=512,
                    help="decode from a 1-token prompt up to this context")
    ap.add_argument("--decode-at", default="4096,16384", help="contexts for the decode rows")
    ap.add_argument("--decode-tokens", type=int, default=32, help="decode tokens per row")
    ap.add_argument("--fill-context", action="store_true",
                    help="decode-at rows fill their context instead of prefilling it (both "
                         "engines; makes 64K rows take minutes, not hours)")
    ap.add_argument("--repeats", type=int, default=1, help="runs per case (best kept)")
    ap.add_argument("--passes", type=int, default=4, help="read-ceiling passes per measurement")
    ap.add_argument("--tries", type=int, default=3,
                    help="runs of a case and engine until the read ceiling before and after "
                         "agree within 15%% (at most)")
    ap.add_argument("--quick", action="store_true",
                    help="--short-decode 128 --decode-at 4096 --decode-tokens 16")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="also write every measurement to this file")
    a = ap.parse_args()
    if a.tries < 1 or a.repeats < 1:
        ap.error(f"--tries {a.tries} and --repeats {a.repeats} must be >= 1")
    if a.quick:
        a.short_decode, a.decode_at, a.decode_tokens = 128, "4096", 16
    ints = lambda s: [int(x) for x in s.split(",") if x]
    threads, prefills, decode_at = ints(a.threads), ints(a.prefill), ints(a.decode_at)

    gguf_path = prepare_model(a.model_dir, a.seed)
    rng = np.random.default_rng(a.seed + 1)
    # case: (label, prompt tokens, decode tokens, which figure is reported, filled context)
    cases = [(f"prefill {p}", p, 0, "prefill", False) for p in prefills]
    cases.append((f"decode 0-{a.short_decode}", 1, a.short_decode - 1, "decode", False))
    fill = " filled" if a.fill_context else ""
    cases += [(f"decode at {c}{fill}", c, a.decode_tokens, "decode", a.fill_context)
              for c in decode_at]
    n_ctx = max([c[1] for c in cases]) + max(a.decode_tokens, a.short_decode) + 16

    results = []  # dicts: case, engine, threads, tok_s, ceilings before and after
    ctxpar_isas = set()
    peaks = {}  # threads -> (GFLOP/s, instruction)
    for t in threads:
        peaks[t] = compute_peak(a.compute_ceiling, t, a.avx2_only)
        llama = LlamaCpp(gguf_path, t, n_ctx)
        for label, prompt_len, decode, kind, filled in cases:
            prompt = random_prompt(rng, prompt_len)
            for rep in range(a.repeats):
                # Alternate the engines; each between two fresh ceilings.
                for engine in ("llama.cpp", "ctxpar"):
                    # A run whose ceiling moved is run again, up to --tries times in all.
                    for attempt in range(a.tries):
                        before = read_ceiling(a.read_ceiling, t, a.passes)
                        if engine == "llama.cpp":
                            pf, dc = llama.run(prompt, decode, filled)
                        else:
                            pf, dc, isa = run_ctxpar(a.ctxpar, a.model_dir, t, prompt_len,
                                                     decode, filled)
                            ctxpar_isas.add(isa)
                        after = read_ceiling(a.read_ceiling, t, a.passes)
                        value = pf if kind == "prefill" else dc
                        print(f"  {label:16s} {t}T {engine:9s} {value:9.2f} tok/s "
                              f"(read ceiling {before:.1f} GB/s before, {after:.1f} after)",
                              flush=True)
                        if ceiling_steady(before, after):
                            break
                    results.append({"case": label, "engine": engine, "threads": t,
                                    "tok_s": value, "ceiling_gb_s": before,
                                    "ceiling_after_gb_s": after, "repeat": rep})
        del llama
        # The peak is the machine's: the better of a measurement before and after the runs
        # (a host that takes a core for a moment lowers one of them).
        peaks[t] = max(peaks[t], compute_peak(a.compute_ceiling, t, a.avx2_only))
        print(f"  compute peak {t}T: {peaks[t][0]:.1f} GFLOP/s ({peaks[t][1]})", flush=True)

    best = {}  # the fastest run of each case among those beside a steady ceiling, if any
    for r in results:
        key = (r["case"], r["engine"], r["threads"])
        rank = (ceiling_steady(r["ceiling_gb_s"], r["ceiling_after_gb_s"]), r["tok_s"])
        if key not in best or rank > best[key][0]:
            best[key] = (rank, r)
    best = {key: r for key, (_, r) in best.items()}
    wbytes = decode_weight_bytes()
    print(f"\nbatch 1, bf16 weights ({wbytes / 1e9:.2f} GB read per decode token), tokens/s; "
          "[read ceiling GB/s, before->after where it moved]; prefill also as a fraction of "
          "the compute peak, decode 0-N of the weight-read roofline")
    head = "| case |"
    for t in threads:
        head += f" llama.cpp {t}T | ctxpar {t}T | ctxpar/llama.cpp {t}T |"
    print(head)
    print("|" + " --- |" * (1 + 3 * len(threads)))
    for label, _, _, kind, _ in cases:
        line = f"| {label} |"
        for t in threads:
            cells = []
            for engine in ("llama.cpp", "ctxpar"):
                r = best[(label, engine, t)]
                cell = f"{r['tok_s']:.2f} {ceiling_cell(r['ceiling_gb_s'], r['ceiling_after_gb_s'])}"
                if kind == "prefill":
                    flops = r["tok_s"] * prefill_flops_per_token(int(label.split()[1]))
                    cell += f" {flops / 1e9 / peaks[t][0]:.2f} peak"
                if kind == "decode" and label.startswith("decode 0"):
                    ceiling = max(r["ceiling_gb_s"], r["ceiling_after_gb_s"])
                    cell += f" {r['tok_s'] / (ceiling * 1e9 / wbytes):.2f} roof"
                cells.append(cell)
            ratio = best[(label, "ctxpar", t)]["tok_s"] / best[(label, "llama.cpp", t)]["tok_s"]
            line += f" {cells[0]} | {cells[1]} | {ratio:.2f} |"
        print(line)
    import llama_cpp

    print("compute peaks: " + ", ".join(f"{t}T {p:.1f} GFLOP/s ({i})" for t, (p, i) in
                                        peaks.items()))
    print(f"ctxpar kernels: isa {', '.join(sorted(ctxpar_isas))}; llama.cpp: "
          f"{llama_cpp.llama_print_system_info().decode().strip(' |')}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
