#!/usr/bin/env python3
"""Build tiny random Hugging Face checkpoints and golden logits for ctxpar's model tests.

This is the transformers "oracle" for the model layer. It writes, for each architecture, a
directory under tests/fixtures/:

    <name>/config.json        Hugging Face config, as saved by save_pretrained
    <name>/model.safetensors  single file, float32, safe serialization (the GLM-5 FP8 fixture:
                              two shards and model.safetensors.index.json, see below)
    <name>/golden.json        prompts, stored positions, logits, greedy continuations

The C++ tests only read those files; CI never needs torch or transformers.

Fixtures
    tiny-llama-fixture        LlamaForCausalLM, GQA 8 q heads / 2 kv heads, untied lm_head
    tiny-qwen2-fixture        Qwen2ForCausalLM, q/k/v biases, GQA 4/2, tied embeddings
    tiny-deepseek-v2-fixture  DeepseekV2ForCausalLM, MLA without q LoRA, softmax/greedy MoE
    tiny-deepseek-v3-fixture  DeepseekV3ForCausalLM, MLA with q LoRA, YaRN, sigmoid/noaux_tc MoE
    tiny-deepseek-v32-fixture DeepseekV32ForCausalLM, V3 + Lightning Indexer (rotate-half rope)
    tiny-glm5-fixture         GlmMoeDsaForCausalLM, indexer with pair rope, shared-indexer layers
    tiny-qwen3-fixture        Qwen3ForCausalLM, per-head q/k RMSNorm, tied embeddings
    tiny-qwen3-moe-fixture    Qwen3MoeForCausalLM, softmax top-k renormalised, no shared expert
    tiny-glm5-fp8-fixture     GlmMoeDsaForCausalLM stored FP8 block-scaled (e4m3, 128x128
                              weight_scale_inv, F32 and BF16 scales, scales in another shard);
                              goldens from the transformers model on the dequantized weights
    tiny-qwen3-fp8-fixture    Qwen3ForCausalLM stored the way llm-compressor / RedHatAI FP8
                              checkpoints are: compressed-tensors "float-quantized", weight-only
                              FP8 (W8A16), per-tensor scales for attention, per-channel for the
                              MLP, layer 0's weight_scale F32 and layer 1's BF16; written by the
                              compressed-tensors package's own compressor, goldens from
                              transformers loading that directory itself (see
                              convert_to_compressed_tensors)

golden.json schema
    prompts    [[token id, ...], ...]      3 prompts of lengths 1, 7 and 23
    positions  [[pos, ...], ...]           which positions of each prompt have logits stored
                                           (all of them for these sizes)
    logits     [[[vocab floats] per stored position] per prompt], float32 printed as %.9g,
               from one full forward pass per prompt (batch 1, no padding, no cache)
    greedy     [[8 token ids], ...]        model.generate(do_sample=False, use_cache=True,
                                           max_new_tokens=8), new tokens only
    meta       versions, seed, and margins (smallest top-1/top-2 logit gap along the greedy
               paths; smallest MoE routing gap) so a test can choose tolerances

Self-check
    Besides transformers' own outputs, the script runs an independent float64 numpy
    reference of each architecture that reads only config.json + model.safetensors (the
    same inputs the C++ engine gets) and follows tests/fixtures/NOTES.md. The script fails
    unless that reference reproduces the golden logits (max abs diff < 2e-4) and the greedy
    tokens, the checkpoint reloads to identical logits, the generate() continuation equals
    the no-cache argmax continuation, and every MoE layer stores per-expert tensors.
    For the compressed-tensors fixture it also checks, independently of torch's casts, that
    the stored e4m3 values and scales are exactly amax/448 + round-to-nearest-even, that the
    weights transformers ends up with equal fp8 · scale in float32 bit for bit, and that its
    logits equal a plain (unquantized) model given those weights, i.e. no activation
    fake-quantization.

Versions (pinned in tools/requirements-fixtures.txt)
    Python 3.11, torch 2.9.1 (PyPI wheel, run on CPU), transformers 5.23.0,
    safetensors 0.8.0, numpy 2.4.6, compressed-tensors 0.15.0.1 (only
    tiny-qwen3-fp8-fixture imports it; it needs psutil, which it does not declare). One
    version for every fixture: the four older ones were regenerated with 5.23 (their
    weights are unchanged, their goldens moved by float32 rounding only) so one environment
    reproduces everything.
    transformers 5 keeps MoE experts fused in memory (gate_up_proj [E, 2I, H], down_proj
    [E, H, I]) but save_pretrained writes them back in the official per-expert layout
    model.layers.L.mlp.experts.E.{gate,up,down}_proj.weight; check_names verifies it.
    The PyPI torch wheel for Linux x86_64 is the CUDA build: its shared libraries link
    against the nvidia-* wheels, so `pip install --no-deps torch` does not import. The full
    dependency set (about 3 GB download, 7 GB installed) is needed even though only the
    CPU is used.

How to run (never install into the repository)
    python3.11 -m venv /tmp/fixtures-venv   # never inside the repository
    /tmp/fixtures-venv/bin/pip install -r tools/requirements-fixtures.txt
    /tmp/fixtures-venv/bin/python tools/make_model_fixtures.py            # all fixtures
    /tmp/fixtures-venv/bin/python tools/make_model_fixtures.py --only tiny-qwen2-fixture
    /tmp/fixtures-venv/bin/python tools/make_model_fixtures.py --out /tmp/fx  # elsewhere

The output is deterministic for the pinned versions (fixed seeds, one CPU thread).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "tests" / "fixtures"

PROMPT_LENGTHS = (1, 7, 23)
PROMPT_SEED = 20240611
GREEDY_TOKENS = 8
VOCAB = 256
REF_TOLERANCE = 2e-4
PINNED = {"torch": "2.9.1", "transformers": "5.23.0"}
PINNED_COMPRESSED_TENSORS = "0.15.0.1"
FP8_BLOCK = 128
E4M3_MAX = 448.0

# ----------------------------------------------------------------------------
# fixture specifications
# ----------------------------------------------------------------------------

COMMON = dict(
    vocab_size=VOCAB,
    hidden_act="silu",
    bos_token_id=None,
    eos_token_id=None,
    pad_token_id=None,
    use_cache=True,
    attention_dropout=0.0,
)

SPECS = {
    "tiny-llama-fixture": dict(
        cls="LlamaForCausalLM",
        cfg="LlamaConfig",
        seed=1001,
        config=dict(
            COMMON,
            hidden_size=128,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=8,
            num_key_value_heads=2,
            head_dim=16,
            max_position_embeddings=256,
            rms_norm_eps=1e-5,
            rope_parameters=dict(rope_type="default", rope_theta=500000.0),
            attention_bias=False,
            mlp_bias=False,
            tie_word_embeddings=False,
            initializer_range=0.08,
        ),
    ),
    "tiny-qwen2-fixture": dict(
        cls="Qwen2ForCausalLM",
        cfg="Qwen2Config",
        seed=1002,
        config=dict(
            COMMON,
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=256,
            rms_norm_eps=1e-6,
            rope_parameters=dict(rope_type="default", rope_theta=1000000.0),
            use_sliding_window=False,
            tie_word_embeddings=True,
            initializer_range=0.08,
        ),
    ),
    "tiny-deepseek-v2-fixture": dict(
        cls="DeepseekV2ForCausalLM",
        cfg="DeepseekV2Config",
        seed=1003,
        config=dict(
            COMMON,
            hidden_size=64,
            intermediate_size=128,
            moe_intermediate_size=32,
            num_hidden_layers=3,
            num_attention_heads=4,
            num_key_value_heads=4,
            q_lora_rank=None,
            kv_lora_rank=32,
            qk_nope_head_dim=16,
            qk_rope_head_dim=8,
            v_head_dim=16,
            n_routed_experts=8,
            n_shared_experts=1,
            num_experts_per_tok=2,
            first_k_dense_replace=1,
            moe_layer_freq=1,
            topk_method="greedy",
            scoring_func="softmax",
            n_group=None,
            topk_group=None,
            norm_topk_prob=False,
            routed_scaling_factor=1.5,
            max_position_embeddings=256,
            rms_norm_eps=1e-6,
            rope_parameters=dict(rope_type="default", rope_theta=10000.0),
            attention_bias=False,
            tie_word_embeddings=False,
            initializer_range=0.08,
        ),
    ),
    "tiny-deepseek-v3-fixture": dict(
        cls="DeepseekV3ForCausalLM",
        cfg="DeepseekV3Config",
        seed=1004,
        config=dict(
            COMMON,
            hidden_size=64,
            intermediate_size=128,
            moe_intermediate_size=32,
            num_hidden_layers=3,
            num_attention_heads=4,
            num_key_value_heads=4,
            q_lora_rank=48,
            kv_lora_rank=32,
            qk_nope_head_dim=16,
            qk_rope_head_dim=8,
            v_head_dim=16,
            n_routed_experts=8,
            n_shared_experts=1,
            num_experts_per_tok=2,
            first_k_dense_replace=1,
            moe_layer_freq=1,
            topk_method="noaux_tc",
            scoring_func="sigmoid",
            n_group=2,
            topk_group=1,
            norm_topk_prob=True,
            routed_scaling_factor=2.5,
            max_position_embeddings=256,
            rms_norm_eps=1e-6,
            rope_parameters=dict(
                rope_type="yarn",
                rope_theta=10000.0,
                factor=4.0,
                original_max_position_embeddings=64,
                beta_fast=32,
                beta_slow=1,
                mscale=1.0,
                mscale_all_dim=1.0,
            ),
            attention_bias=False,
            tie_word_embeddings=False,
            initializer_range=0.08,
        ),
    ),
    # DeepSeek-V3.2: V3 plus a Lightning Indexer per layer (rotate-half rope on its rope part).
    # index_topk 6 < the 7- and 23-token prompts, so selection is really sparse; 8 indexer heads
    # keep ReLU-zero ties out of the top-k (the script checks the smallest deciding gap).
    "tiny-deepseek-v32-fixture": dict(
        cls="DeepseekV32ForCausalLM",
        cfg="DeepseekV32Config",
        seed=1025,
        config=dict(
            COMMON,
            hidden_size=64,
            intermediate_size=128,
            moe_intermediate_size=32,
            num_hidden_layers=3,
            num_attention_heads=4,
            num_key_value_heads=4,
            q_lora_rank=48,
            kv_lora_rank=32,
            qk_nope_head_dim=16,
            qk_rope_head_dim=8,
            v_head_dim=16,
            n_routed_experts=8,
            n_shared_experts=1,
            num_experts_per_tok=2,
            first_k_dense_replace=1,
            n_group=2,
            topk_group=1,
            norm_topk_prob=True,
            routed_scaling_factor=2.5,
            index_n_heads=8,
            index_head_dim=16,
            index_topk=6,
            max_position_embeddings=256,
            rms_norm_eps=1e-6,
            rope_parameters=dict(rope_type="default", rope_theta=10000.0),
            attention_bias=False,
            tie_word_embeddings=False,
            initializer_range=0.08,
        ),
    ),
    # GLM-5: V3.2's layout with interleaved (pair) rope in the indexer and shared-indexer layers
    # (index_topk_freq 2, offset 1: full, shared, full); n_group 1; v_head_dim != nope.
    "tiny-glm5-fixture": dict(
        cls="GlmMoeDsaForCausalLM",
        cfg="GlmMoeDsaConfig",
        seed=1006,
        config=dict(
            COMMON,
            hidden_size=64,
            intermediate_size=96,
            moe_intermediate_size=32,
            num_hidden_layers=3,
            num_attention_heads=4,
            num_key_value_heads=4,
            q_lora_rank=48,
            kv_lora_rank=32,
            qk_nope_head_dim=16,
            qk_rope_head_dim=8,
            v_head_dim=24,
            n_routed_experts=4,
            n_shared_experts=1,
            num_experts_per_tok=2,
            first_k_dense_replace=1,
            n_group=1,
            topk_group=1,
            norm_topk_prob=True,
            routed_scaling_factor=2.5,
            index_n_heads=8,
            index_head_dim=16,
            index_topk=6,
            index_topk_freq=2,
            index_skip_topk_offset=1,
            max_position_embeddings=256,
            rms_norm_eps=1e-5,
            rope_parameters=dict(rope_type="default", rope_theta=10000.0),
            attention_bias=False,
            tie_word_embeddings=False,
            initializer_range=0.08,
        ),
    ),
    # Qwen3: per-head q/k RMSNorm before rope, head_dim (24) given apart from hidden / heads.
    "tiny-qwen3-fixture": dict(
        cls="Qwen3ForCausalLM",
        cfg="Qwen3Config",
        seed=1007,
        config=dict(
            COMMON,
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=24,
            max_position_embeddings=256,
            rms_norm_eps=1e-6,
            rope_parameters=dict(rope_type="default", rope_theta=1000000.0),
            attention_bias=False,
            use_sliding_window=False,
            tie_word_embeddings=True,
            initializer_range=0.08,
        ),
    ),
    # Qwen3-MoE: softmax top-2 of 6 experts renormalised, no shared expert; layer 0 dense
    # (mlp_only_layers).
    "tiny-qwen3-moe-fixture": dict(
        cls="Qwen3MoeForCausalLM",
        cfg="Qwen3MoeConfig",
        seed=1008,
        config=dict(
            COMMON,
            hidden_size=64,
            intermediate_size=128,
            moe_intermediate_size=32,
            num_hidden_layers=3,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=16,
            num_experts=6,
            num_experts_per_tok=2,
            norm_topk_prob=True,
            decoder_sparse_step=1,
            mlp_only_layers=[0],
            max_position_embeddings=256,
            rms_norm_eps=1e-6,
            rope_parameters=dict(rope_type="default", rope_theta=1000000.0),
            attention_bias=False,
            use_sliding_window=False,
            tie_word_embeddings=False,
            initializer_range=0.08,
        ),
    ),
    # GLM-5 saved as an FP8 block-scaled checkpoint (e4m3, 128x128 weight_scale_inv), the layout
    # of the official FP8 releases. Dims >= 128 where the kernels block (hidden 160 and the
    # 144-row kv_a / 64-row indexer wk end in partial blocks); the tensor-parallel cuts (q_b rows,
    # o_proj columns, MLP and expert intermediates: 256) fall on 128 for T = 2. Unquantized tensors
    # (embeddings, lm_head, norms, router, indexer weights_proj) are BF16, the router bias F32.
    # The goldens are the transformers model run on the dequantized weights (float32 compute).
    "tiny-glm5-fp8-fixture": dict(
        cls="GlmMoeDsaForCausalLM",
        cfg="GlmMoeDsaConfig",
        seed=1049,
        fp8=dict(bf16_scale_layers=[1], shard_layers=[1]),
        config=dict(
            COMMON,
            hidden_size=160,
            intermediate_size=256,
            moe_intermediate_size=256,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=4,
            q_lora_rank=128,
            kv_lora_rank=128,
            qk_nope_head_dim=48,
            qk_rope_head_dim=16,
            v_head_dim=64,
            n_routed_experts=3,
            n_shared_experts=1,
            num_experts_per_tok=2,
            first_k_dense_replace=1,
            n_group=1,
            topk_group=1,
            norm_topk_prob=True,
            routed_scaling_factor=2.5,
            index_n_heads=8,
            index_head_dim=64,
            index_topk=6,
            indexer_types=["full", "shared"],
            max_position_embeddings=256,
            rms_norm_eps=1e-5,
            rope_parameters=dict(rope_type="default", rope_theta=10000.0),
            attention_bias=False,
            tie_word_embeddings=False,
            initializer_range=0.06,
        ),
    ),
}

# The compressed-tensors quantization_config of an llm-compressor FP8 weight-only (W8A16)
# checkpoint: attention projections per-tensor, MLP projections per-output-channel, static
# symmetric e4m3 weight scales, activations not quantized. The compressed-tensors package
# expands it with its own defaults (observer, format per group, version, ...) when it writes
# config.json; the script checks that everything here is in what it wrote.
CT_FP8_WEIGHTS = dict(num_bits=8, type="float", symmetric=True, dynamic=False)
CT_FP8_QUANTIZATION_CONFIG = {
    "quant_method": "compressed-tensors",
    "format": "float-quantized",
    "quantization_status": "compressed",
    "ignore": ["lm_head"],
    "kv_cache_scheme": None,
    "config_groups": {
        "group_0": {"targets": [r"re:.*self_attn\.(q|k|v|o)_proj$"],
                    "weights": dict(CT_FP8_WEIGHTS, strategy="tensor"),
                    "input_activations": None, "output_activations": None},
        "group_1": {"targets": [r"re:.*mlp\.(gate|up|down)_proj$"],
                    "weights": dict(CT_FP8_WEIGHTS, strategy="channel"),
                    "input_activations": None, "output_activations": None},
    },
}

# Qwen3 (tiny-qwen3-fixture's config, another seed) saved as llm-compressor / RedHatAI FP8
# checkpoints are: compressed-tensors float-quantized, F8_E4M3 weights with weight_scale
# (W = fp8 · scale); layer 1's scales BF16 as in the RedHatAI releases, layer 0's F32.
# Embeddings and norms stay float32, embeddings tied (no lm_head.weight). Seed 1052 of
# 1050-1057: the smallest greedy top-1/top-2 gap is 0.048 (1050 gave 0.0024).
SPECS["tiny-qwen3-fp8-fixture"] = dict(
    cls="Qwen3ForCausalLM",
    cfg="Qwen3Config",
    seed=1052,
    compressed_tensors=dict(quantization_config=CT_FP8_QUANTIZATION_CONFIG, bf16_scale_layers=[1]),
    config=dict(SPECS["tiny-qwen3-fixture"]["config"]),
)

# ----------------------------------------------------------------------------
# building with transformers
# ----------------------------------------------------------------------------


def perturb_defaults(model, torch, seed):
    """HF initialises RMSNorm weights to 1 and biases / the V3 correction bias to 0.
    Randomise them so a reimplementation that skips one of them fails the fixture."""
    gen = torch.Generator().manual_seed(seed + 7919)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name and name.endswith(".weight"):
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
            elif name.endswith(".bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
        for name, b in model.named_buffers():
            if name.endswith("e_score_correction_bias"):
                # non-zero, but small enough that (sigmoid score + bias) stays positive, so
                # HF's masked_fill(..., 0.0) of non-selected groups never wins a top-k slot
                b.copy_(0.05 * torch.randn(b.shape, generator=gen))


def make_prompts():
    rng = np.random.default_rng(PROMPT_SEED)
    return [[int(t) for t in rng.integers(0, VOCAB, size=n)] for n in PROMPT_LENGTHS]


def hf_logits(model, torch, prompt):
    with torch.no_grad():
        ids = torch.tensor([prompt], dtype=torch.long)
        out = model(input_ids=ids, use_cache=False)
    return out.logits[0].float().numpy()


def hf_greedy(model, torch, prompt):
    from transformers import GenerationConfig

    gc = GenerationConfig(
        do_sample=False,
        num_beams=1,
        max_new_tokens=GREEDY_TOKENS,
        min_new_tokens=GREEDY_TOKENS,
        use_cache=True,
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=0,
    )
    with torch.no_grad():
        ids = torch.tensor([prompt], dtype=torch.long)
        seq = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), generation_config=gc)
    return [int(t) for t in seq[0, len(prompt):]]


def nocache_greedy(model, torch, prompt):
    """Greedy continuation by full recomputation, also returning the top1-top2 gaps."""
    seq = list(prompt)
    toks, gaps = [], []
    for _ in range(GREEDY_TOKENS):
        last = hf_logits(model, torch, seq)[-1].astype(np.float64)
        order = np.argsort(-last, kind="stable")
        toks.append(int(order[0]))
        gaps.append(float(last[order[0]] - last[order[1]]))
        seq.append(int(order[0]))
    return toks, gaps


def fp8_quantized(name, shape):
    """Which tensors an FP8 release stores as e4m3 with block scales: the 2-D linear weights,
    except embeddings, lm_head, norms, the MoE router and the indexer's weights_proj."""
    keep = ("embed_tokens", "lm_head", "norm", ".mlp.gate.weight", "weights_proj")
    return len(shape) == 2 and name.endswith(".weight") and not any(k in name for k in keep)


FP8_NOT_CONVERTED = ["lm_head", "model.embed_tokens", "mlp.gate", "indexer.weights_proj"]


def quantize_block_fp8(w, torch):
    """w [out, in] float32 → (q float8_e4m3fn [out, in], scale float32 [ceil(out/128),
    ceil(in/128)]) with w ≈ q · scale per 128x128 block; scale = block amax / 448."""
    b = FP8_BLOCK
    out, inn = w.shape
    ro, ri = -(-out // b), -(-inn // b)
    padded = torch.zeros(ro * b, ri * b, dtype=torch.float32)
    padded[:out, :inn] = w
    blocks = padded.view(ro, b, ri, b)
    amax = blocks.abs().amax(dim=(1, 3))
    scale = torch.where(amax > 0, amax / 448.0, torch.ones_like(amax))
    q = (blocks / scale[:, None, :, None]).view(ro * b, ri * b)[:out, :inn].to(torch.float8_e4m3fn)
    return q, scale


def dequantize_block_fp8(q, scale, torch):
    b = FP8_BLOCK
    full = scale.float().repeat_interleave(b, 0).repeat_interleave(b, 1)
    return q.float() * full[: q.shape[0], : q.shape[1]]


def convert_to_fp8(d, opts, model_cls, torch):
    """Rewrites the float32 checkpoint in d as an FP8 block-scaled one (two shards: the layers
    in opts["shard_layers"] go to the second, except their weights, so those weights find their
    weight_scale_inv in another file; scales of opts["bf16_scale_layers"] stored as BF16), and
    returns the transformers model loaded from the dequantized weights."""
    from safetensors.torch import load_file, save_file

    state = load_file(str(d / "model.safetensors"))
    stored, dequant = {}, {}
    for k, w in state.items():
        layer = int(k.split(".")[2]) if k.startswith("model.layers.") else -1
        if fp8_quantized(k, w.shape):
            q, scale = quantize_block_fp8(w, torch)
            if layer in opts["bf16_scale_layers"]:
                scale = scale.to(torch.bfloat16)
            stored[k], stored[k + "_scale_inv"] = q, scale
            dequant[k] = dequantize_block_fp8(q, scale, torch)
        elif k.endswith("e_score_correction_bias"):
            stored[k], dequant[k] = w, w
        else:
            stored[k] = w.to(torch.bfloat16)
            dequant[k] = stored[k].float()
    tmp = d.parent / (d.name + ".dequantized")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    shutil.copy(d / "config.json", tmp / "config.json")
    save_file(dequant, str(tmp / "model.safetensors"), metadata={"format": "pt"})
    model = model_cls.from_pretrained(tmp, dtype=torch.float32, attn_implementation="eager").eval()
    shutil.rmtree(tmp)

    def shard_of(k):
        layer = int(k.split(".")[2]) if k.startswith("model.layers.") else -1
        moved = layer in opts["shard_layers"] and not (k.endswith(".weight") and k + "_scale_inv" in stored)
        return "model-00002-of-00002.safetensors" if moved else "model-00001-of-00002.safetensors"

    weight_map = {k: shard_of(k) for k in sorted(stored)}
    (d / "model.safetensors").unlink()
    for f in sorted(set(weight_map.values())):
        save_file({k: stored[k].contiguous() for k in weight_map if weight_map[k] == f}, str(d / f),
                  metadata={"format": "pt"})
    (d / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {"total_size": sum(t.numel() * t.element_size() for t in stored.values())},
         "weight_map": weight_map}, indent=2) + "\n")
    cfg = json.loads((d / "config.json").read_text())
    cfg["dtype"] = "bfloat16"
    cfg["quantization_config"] = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                                  "weight_block_size": [FP8_BLOCK, FP8_BLOCK],
                                  "modules_to_not_convert": FP8_NOT_CONVERTED}
    (d / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    return model


def e4m3_nearest_even(x):
    """float64 values already clamped to ±448 → the nearest float8_e4m3fn value, ties to the
    even code: the rounding of a float → e4m3 cast, done from the bit layout in numpy so it
    does not rely on torch's cast."""
    table = e4m3_to_float(np.arange(0x7F))  # the finite non-negative codes, increasing
    a = np.abs(x)
    hi = np.clip(np.searchsorted(table, a), 1, len(table) - 1)
    lo = hi - 1
    d_lo, d_hi = a - table[lo], table[hi] - a
    code = np.where(d_hi < d_lo, hi, np.where(d_lo < d_hi, lo, np.where(lo % 2 == 0, lo, hi)))
    return np.where(x < 0, -1.0, 1.0) * table[code]


def f32_to_bf16_nearest_even(x):
    """float32 array → the bfloat16 values (round to nearest even), returned as float32."""
    b = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000
    return b.astype(np.uint32).view(np.float32)


def config_contains(want, got):
    """Every key of want is in got with the same value (recursively for objects)."""
    if isinstance(want, dict):
        return isinstance(got, dict) and all(k in got and config_contains(v, got[k]) for k, v in want.items())
    return want == got


def convert_to_compressed_tensors(d, opts, model, model_cls, torch, prompts):
    """Rewrites the float32 checkpoint in d as a compressed-tensors FP8 weight-only one, the way
    llm-compressor does it: the compressed-tensors package attaches the quantization scheme,
    the scales are llm-compressor's memoryless min-max observer (min/max of the whole weight
    or of each output row, then the package's calculate_qparams: amax / 448), the package's
    own ModelCompressor turns the weights into e4m3 and writes quantization_config. Layers in
    opts["bf16_scale_layers"] keep their scales as BF16 (rounded before quantizing, so the
    e4m3 values are computed with the stored scale, as with a bf16 model).

    Then checks the files independently of the package (amax/448 and round-to-nearest-even
    e4m3 in numpy), loads the directory with transformers (from_pretrained's default for
    compressed-tensors: the checkpoint loads compressed and compressed-tensors decompresses
    it on the first forward pass) and fails unless its weights equal fp8 · scale computed in
    float32 bit for bit and its logits equal a plain model given those weights (no activation
    fake-quantization). Returns that transformers model, which gives the goldens, and meta."""
    import compressed_tensors
    import transformers
    from compressed_tensors.compressors import ModelCompressor
    from compressed_tensors.quantization import QuantizationConfig, QuantizationStatus, apply_quantization_config
    from compressed_tensors.quantization.utils import calculate_qparams
    from safetensors.torch import load_file, save_file

    want = opts["quantization_config"]
    original = {k: v.detach().clone() for k, v in model.state_dict().items()}
    qcfg = QuantizationConfig(config_groups=json.loads(json.dumps(want["config_groups"])),
                              ignore=list(want["ignore"]), kv_cache_scheme=want["kv_cache_scheme"])
    apply_quantization_config(model, qcfg)

    quantized = {}  # module name -> (strategy, layer)
    with torch.no_grad():
        for name, module in model.named_modules():
            scheme = getattr(module, "quantization_scheme", None)
            if scheme is None:
                continue
            args, w = scheme.weights, module.weight.data
            if args.strategy == "tensor":
                lo, hi = torch.aminmax(w)
            elif args.strategy == "channel":
                lo, hi = w.amin(1, keepdim=True), w.amax(1, keepdim=True)
            else:
                raise SystemExit(f"{d.name}: unexpected strategy {args.strategy}")
            scale, zp = calculate_qparams(lo, hi, args)
            layer = int(name.split(".")[2])
            if layer in opts["bf16_scale_layers"]:
                scale = scale.to(torch.bfloat16)
            if scale.shape != module.weight_scale.shape or zp.shape != module.weight_zero_point.shape:
                raise SystemExit(f"{d.name}: {name}: scale {tuple(scale.shape)} does not fit "
                                 f"{tuple(module.weight_scale.shape)}")
            module.weight_scale = torch.nn.Parameter(scale, requires_grad=False)
            module.weight_zero_point = torch.nn.Parameter(zp.to(module.weight_zero_point.dtype), requires_grad=False)
            module.quantization_status = QuantizationStatus.FROZEN
            quantized[name] = (args.strategy, layer)
    compressor = ModelCompressor.from_pretrained_model(model, quantization_format=want["format"])
    compressor.compress_model(model)
    for f in d.iterdir():
        f.unlink()
    model.save_pretrained(d, safe_serialization=True)
    compressor.update_config(d)
    gen_cfg = d / "generation_config.json"
    if gen_cfg.exists():
        gen_cfg.unlink()
    files = sorted(p.name for p in d.iterdir())
    if files != ["config.json", "model.safetensors"]:
        raise SystemExit(f"{d.name}: unexpected files after the compressed save: {files}")
    written = json.loads((d / "config.json").read_text())["quantization_config"]
    if not config_contains(want, written):
        raise SystemExit(f"{d.name}: quantization_config written by compressed-tensors lacks the "
                         f"intended one: {json.dumps(written, sort_keys=True)}")

    # the stored tensors, checked without the package or torch's float8 cast
    stored = load_file(str(d / "model.safetensors"))
    expect_keys = {k for k in original if not (k.endswith(".weight") and k[: -len(".weight")] in quantized)}
    expect_keys.discard("lm_head.weight")  # tied
    expect_keys |= {n + s for n in quantized for s in (".weight", ".weight_scale")}
    if set(stored) != expect_keys:
        raise SystemExit(f"{d.name}: stored tensors differ: {sorted(set(stored) ^ expect_keys)}")
    dequant = {}
    for k in sorted(stored):
        if k.endswith(".weight_scale"):
            continue
        name = k[: -len(".weight")]
        if name not in quantized:
            if stored[k].dtype != torch.float32 or not torch.equal(stored[k], original[k]):
                raise SystemExit(f"{d.name}: {k} is not the original float32 tensor")
            dequant[k] = stored[k]
            continue
        strategy, layer = quantized[name]
        q, scale = stored[k], stored[name + ".weight_scale"]
        w = original[k].numpy()
        scale_dtype = torch.bfloat16 if layer in opts["bf16_scale_layers"] else torch.float32
        scale_shape = (1,) if strategy == "tensor" else (w.shape[0], 1)
        if q.dtype != torch.float8_e4m3fn or tuple(q.shape) != w.shape or scale.dtype != scale_dtype \
                or tuple(scale.shape) != scale_shape:
            raise SystemExit(f"{d.name}: {k}: {q.dtype} {tuple(q.shape)}, scale {scale.dtype} "
                             f"{tuple(scale.shape)}; want e4m3 {w.shape}, {scale_dtype} {scale_shape}")
        amax = np.abs(w).max() if strategy == "tensor" else np.abs(w).max(axis=1, keepdims=True)
        want_scale = (np.asarray(amax, dtype=np.float32) / np.float32(E4M3_MAX)).reshape(scale_shape)
        if scale_dtype == torch.bfloat16:
            want_scale = f32_to_bf16_nearest_even(want_scale)
        got_scale = scale.float().numpy()
        if not np.array_equal(got_scale, want_scale):
            raise SystemExit(f"{d.name}: {k}_scale {got_scale.ravel()[:4]} != amax/448 {want_scale.ravel()[:4]}")
        want_q = e4m3_nearest_even(np.clip((w / want_scale).astype(np.float64), -E4M3_MAX, E4M3_MAX))
        got_q = e4m3_to_float(q.view(torch.uint8).numpy())
        if not np.array_equal(got_q, want_q):
            raise SystemExit(f"{d.name}: {k}: e4m3 values differ from round-to-nearest-even of "
                             f"w / scale at {int((got_q != want_q).sum())} places")
        dequant[k] = torch.from_numpy(got_q.astype(np.float32) * got_scale)  # float32 product

    # transformers loads the directory itself
    load = dict(dtype=torch.float32, attn_implementation="eager")
    hf = model_cls.from_pretrained(d, **load).eval()
    if type(getattr(hf, "hf_quantizer", None)).__name__ != "CompressedTensorsHfQuantizer":
        raise SystemExit(f"{d.name}: transformers did not load it through compressed-tensors")
    hf_logits(hf, torch, prompts[0])  # the first forward pass decompresses every module
    for name, (strategy, layer) in quantized.items():
        module = hf.get_submodule(name)
        scheme = module.quantization_scheme
        if scheme.input_activations is not None or scheme.output_activations is not None \
                or scheme.weights.strategy != strategy:
            raise SystemExit(f"{d.name}: transformers' scheme for {name} is {scheme}")
        if module.quantization_status != QuantizationStatus.DECOMPRESSED:
            raise SystemExit(f"{d.name}: {name} is {module.quantization_status} after a forward pass")
    got = hf.state_dict()
    for k, v in dequant.items():
        if got[k].dtype != torch.float32 or not torch.equal(got[k], v):
            raise SystemExit(f"{d.name}: transformers' {k} differs from fp8 · scale in float32 by "
                             f"{float((got[k].float() - v).abs().max()):g}")

    # the same weights in a plain model: transformers' logits must equal it exactly, so nothing
    # quantizes activations on the way (with input_activations null nothing should)
    tmp = d.parent / (d.name + ".dequantized")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    cfg = json.loads((d / "config.json").read_text())
    del cfg["quantization_config"]
    (tmp / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    save_file(dequant, str(tmp / "model.safetensors"), metadata={"format": "pt"})
    plain = model_cls.from_pretrained(tmp, **load).eval()
    shutil.rmtree(tmp)
    if getattr(plain, "hf_quantizer", None) is not None:
        raise SystemExit(f"{d.name}: the dequantized copy loaded with a quantizer")
    own_diff = 0.0
    for p in prompts:
        a, b = hf_logits(hf, torch, p), hf_logits(plain, torch, p)
        own_diff = max(own_diff, float(np.abs(a - b).max()))
    if own_diff != 0.0:
        raise SystemExit(f"{d.name}: transformers' logits differ from the plain model on fp8 · scale "
                         f"by {own_diff:g}: activations are quantized or the weights differ")

    # For contrast: dequantize=True (what run_compressed=False now means) decompresses with the
    # checkpoint's scale tensor as is, x_q.to(scale.dtype) * scale, so BF16 scales give weights
    # rounded to bfloat16. Not the goldens; checked so that this stays understood.
    deq = model_cls.from_pretrained(d, quantization_config=transformers.CompressedTensorsConfig(dequantize=True),
                                    **load).eval()
    got = deq.state_dict()
    for k, v in dequant.items():
        layer = int(k.split(".")[2]) if k.startswith("model.layers.") else -1
        if k[: -len(".weight")] in quantized and layer in opts["bf16_scale_layers"]:
            v = v.to(torch.bfloat16).float()
        if not torch.equal(got[k], v):
            raise SystemExit(f"{d.name}: dequantize=True gives {k} off by {float((got[k] - v).abs().max()):g}")
    deq_diff = max(float(np.abs(hf_logits(deq, torch, p) - hf_logits(hf, torch, p)).max()) for p in prompts)

    meta = dict(
        compressed_tensors=compressed_tensors.__version__,
        quantization="compressed-tensors float-quantized W8A16: e4m3 weights, weight_scale per tensor "
                     "(attention) or per output channel (MLP), layer 0 F32 scales, layer 1 BF16",
        golden_source="transformers from_pretrained of this directory (compressed-tensors, default "
                      "dequantize=False: decompressed on the first forward pass to float32)",
        own_dequant_logits_max_abs_diff=own_diff,
        dequantize_true_logits_max_abs_diff=deq_diff,
    )
    return hf, meta


def build_one(name, spec, out_dir, prompts):
    import torch
    import transformers

    torch.manual_seed(spec["seed"])
    cfg_cls = getattr(transformers, spec["cfg"])
    model_cls = getattr(transformers, spec["cls"])
    config = cfg_cls(**json.loads(json.dumps(spec["config"])))
    config._attn_implementation = "eager"
    model = model_cls(config).to(torch.float32).eval()
    perturb_defaults(model, torch, spec["seed"])

    d = out_dir / name
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    model.save_pretrained(d, safe_serialization=True)
    gen_cfg = d / "generation_config.json"
    if gen_cfg.exists():
        gen_cfg.unlink()
    files = sorted(p.name for p in d.iterdir())
    if files != ["config.json", "model.safetensors"]:
        raise SystemExit(f"{name}: unexpected files after save_pretrained: {files}")
    extra_meta = {}
    if "fp8" in spec:
        # The goldens come from the model whose weights are what the FP8 checkpoint decodes to.
        model = convert_to_fp8(d, spec["fp8"], model_cls, torch)
    elif "compressed_tensors" in spec:
        # The goldens come from transformers loading the compressed-tensors directory itself.
        model, extra_meta = convert_to_compressed_tensors(d, spec["compressed_tensors"], model, model_cls,
                                                          torch, prompts)

    logits = [hf_logits(model, torch, p) for p in prompts]
    greedy = [hf_greedy(model, torch, p) for p in prompts]

    # the generate() path (KV cache) must agree with plain recomputation
    margins = []
    for p, g in zip(prompts, greedy):
        toks, gaps = nocache_greedy(model, torch, p)
        if toks != g:
            raise SystemExit(f"{name}: generate() {g} != no-cache argmax {toks}")
        margins.extend(gaps)

    # the saved checkpoint reloads to the same logits (FP8: convert_to_fp8 already reloaded)
    reloaded = model if "fp8" in spec else model_cls.from_pretrained(
        d, dtype=torch.float32, attn_implementation="eager").eval()
    for p, ref in zip(prompts, logits):
        again = hf_logits(reloaded, torch, p)
        if not np.array_equal(again, ref):
            raise SystemExit(f"{name}: reloaded checkpoint gives different logits "
                             f"(max diff {np.abs(again - ref).max()})")

    meta = dict(
        architecture=spec["cls"],
        dtype="float32",
        seed=spec["seed"],
        transformers=transformers.__version__,
        torch=torch.__version__.split("+")[0],
        attn_implementation="eager",
        logits_abs_max=float(max(np.abs(l).max() for l in logits)),
        logits_std=float(np.concatenate([l.ravel() for l in logits]).std()),
        greedy_min_top1_top2_gap=float(min(margins)),
    )
    meta.update(extra_meta)
    return dict(prompts=prompts, logits=logits, greedy=greedy, meta=meta)


def write_golden(path, prompts, logits, greedy, meta):
    def fl(v):
        return ", ".join("%.9g" % float(x) for x in v)

    lines = ["{"]
    lines.append('  "prompts": [' + ", ".join("[" + ", ".join(map(str, p)) + "]" for p in prompts) + "],")
    lines.append('  "positions": [' + ", ".join(
        "[" + ", ".join(str(i) for i in range(len(p))) + "]" for p in prompts) + "],")
    lines.append('  "greedy": [' + ", ".join("[" + ", ".join(map(str, g)) + "]" for g in greedy) + "],")
    lines.append('  "meta": ' + json.dumps(meta, sort_keys=True) + ",")
    lines.append('  "logits": [')
    for pi, l in enumerate(logits):
        lines.append("    [")
        for ri, row in enumerate(l):
            lines.append("      [" + fl(row) + "]" + ("," if ri + 1 < len(l) else ""))
        lines.append("    ]" + ("," if pi + 1 < len(logits) else ""))
    lines.append("  ]")
    lines.append("}")
    path.write_text("\n".join(lines) + "\n")
    # round-trip: what a reader parses equals the float32 values exactly
    back = json.loads(path.read_text())
    for a, b in zip(back["logits"], logits):
        if not np.array_equal(np.asarray(a, dtype=np.float32), b.astype(np.float32)):
            raise SystemExit(f"{path}: logits do not round-trip through %.9g")


# ----------------------------------------------------------------------------
# independent numpy reference (float64), reading only config.json + safetensors
# ----------------------------------------------------------------------------


def e4m3_to_float(u8):
    """float8_e4m3fn bytes to float64, from the bit layout (no torch)."""
    u8 = u8.astype(np.int64)
    sign = np.where(u8 & 0x80, -1.0, 1.0)
    e, m = (u8 >> 3) & 0xF, u8 & 0x7
    val = np.where(e == 0, m / 8.0 * 2.0 ** -6, (1 + m / 8.0) * 2.0 ** (e - 7.0))
    val = np.where((e == 0xF) & (m == 0x7), np.nan, val)
    return sign * val


def load_checkpoint_f64(d):
    """Every tensor of a checkpoint directory (one file or an index of shards) as float64;
    FP8 weights dequantized with their 128x128 weight_scale_inv blocks, or (compressed-tensors)
    with their weight_scale of shape [1] (per tensor) or [out, 1] (per output row)."""
    from safetensors import safe_open

    index = d / "model.safetensors.index.json"
    files = sorted(set(json.loads(index.read_text())["weight_map"].values())) if index.exists() \
        else ["model.safetensors"]
    raw = {}
    for f in files:
        with safe_open(str(d / f), framework="pt") as h:
            for k in h.keys():
                t = h.get_tensor(k)
                if str(t.dtype) == "torch.float8_e4m3fn":
                    raw[k] = ("fp8", t.view(__import__("torch").uint8).numpy())
                else:
                    raw[k] = ("float", t.double().numpy())
    out = {}
    for k, (kind, v) in raw.items():
        if k.endswith("_scale_inv") or k.endswith(".weight_scale"):
            continue
        if kind == "fp8":
            w = e4m3_to_float(v)
            if k + "_scale_inv" in raw:
                scale = raw[k + "_scale_inv"][1]
                rows = np.repeat(np.repeat(scale, 128, axis=0), 128, axis=1)[: w.shape[0], : w.shape[1]]
                out[k] = w * rows
            else:
                scale = raw[k + "_scale"][1]
                if scale.shape not in ((1,), (w.shape[0], 1)):
                    raise SystemExit(f"{k}_scale has shape {scale.shape}")
                out[k] = w * scale
        else:
            out[k] = v
    return out


class Ref:
    def __init__(self, d):
        self.cfg = json.loads((d / "config.json").read_text())
        self.w = load_checkpoint_f64(d)
        self.arch = self.cfg["architectures"][0]
        self.route_gaps = []      # smallest gap deciding each top-k / group choice
        self.route_sets = set()   # distinct expert sets chosen
        self.index_gaps = []      # indexer: gap between the k-th and (k+1)-th score per query
        self.min_choice_score = math.inf
        self.selection = None

    # -- helpers --------------------------------------------------------------
    def W(self, name):
        return self.w[name]

    @staticmethod
    def rms(x, w, eps):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w

    def lin(self, x, prefix, bias=False):
        y = x @ self.W(prefix + ".weight").T
        if bias:
            y = y + self.W(prefix + ".bias")
        return y

    @staticmethod
    def silu(x):
        return x / (1.0 + np.exp(-x))

    def mlp(self, x, p):
        return self.lin(self.silu(self.lin(x, p + ".gate_proj")) * self.lin(x, p + ".up_proj"), p + ".down_proj")

    @staticmethod
    def softmax(x):
        x = x - x.max(-1, keepdims=True)
        e = np.exp(x)
        return e / e.sum(-1, keepdims=True)

    @staticmethod
    def attend(q, k, v, scale):
        # q [T,H,Dk] k [T,H,Dk] v [T,H,Dv], causal
        T = q.shape[0]
        s = np.einsum("thd,shd->hts", q, k) * scale
        s = s + np.triu(np.full((T, T), -np.inf), 1)[None]
        p = Ref.softmax(s)
        return np.einsum("hts,shd->thd", p, v)

    def rope_params(self):
        """rope_parameters (transformers 5: theta inside) or rope_theta + rope_scaling."""
        c = self.cfg
        rp = dict(c.get("rope_parameters") or c.get("rope_scaling") or {})
        rp.setdefault("rope_theta", c.get("rope_theta", 10000.0))
        rp.setdefault("rope_type", rp.get("type", "default"))
        return rp

    def inv_freq(self, dim):
        c = self.cfg
        rs = self.rope_params()
        base = rs["rope_theta"]
        exps = np.arange(0, dim, 2, dtype=np.float64) / dim
        if rs["rope_type"] == "default":
            return base ** -exps, 1.0
        assert rs["rope_type"] == "yarn", rs
        f = rs["factor"]
        orig = rs.get("original_max_position_embeddings") or c["max_position_embeddings"]
        bf, bs = rs.get("beta_fast") or 32, rs.get("beta_slow") or 1

        def corr(rot):
            return dim * math.log(orig / (rot * 2 * math.pi)) / (2 * math.log(base))

        lo, hi = max(math.floor(corr(bf)), 0), min(math.ceil(corr(bs)), dim - 1)
        if lo == hi:
            hi += 0.001
        ramp = np.clip((np.arange(dim // 2) - lo) / (hi - lo), 0, 1)
        extra = base ** -exps
        inter = extra / f
        inv = inter * ramp + extra * (1 - ramp)

        def ms(scale, m=1.0):
            return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

        m, mad = rs.get("mscale"), rs.get("mscale_all_dim")
        att = rs.get("attention_factor")
        if att is None:
            att = ms(f, m) / ms(f, mad) if (m and mad) else ms(f)
        return inv, att

    @staticmethod
    def rope_half(x, ang):  # x [T,H,D], ang [T,D/2]; rotate-half pairing (i, i + D/2)
        h = x.shape[-1] // 2
        c, s = np.cos(ang)[:, None], np.sin(ang)[:, None]
        x1, x2 = x[..., :h], x[..., h:]
        return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], -1)

    @staticmethod
    def rope_pairs(x, ang):  # interleaved pairing (2i, 2i+1)
        c, s = np.cos(ang)[:, None], np.sin(ang)[:, None]
        a, b = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = a * c - b * s
        out[..., 1::2] = b * c + a * s
        return out

    # -- attention ------------------------------------------------------------
    def gqa_attention(self, x, L, pos):
        c = self.cfg
        H, KV = c["num_attention_heads"], c["num_key_value_heads"]
        D = c.get("head_dim") or c["hidden_size"] // H
        bias = self.arch == "Qwen2ForCausalLM" or c.get("attention_bias", False)
        p = f"model.layers.{L}.self_attn"
        T = x.shape[0]
        q = self.lin(x, p + ".q_proj", bias).reshape(T, H, D)
        k = self.lin(x, p + ".k_proj", bias).reshape(T, KV, D)
        v = self.lin(x, p + ".v_proj", bias).reshape(T, KV, D)
        if self.arch.startswith("Qwen3"):
            # per-head RMSNorm over head_dim, before rope
            q = self.rms(q, self.W(p + ".q_norm.weight"), c["rms_norm_eps"])
            k = self.rms(k, self.W(p + ".k_norm.weight"), c["rms_norm_eps"])
        inv, att = self.inv_freq(D)
        ang = pos[:, None] * inv[None]
        q, k = self.rope_half(q, ang) * att, self.rope_half(k, ang) * att
        rep = H // KV  # q head h reads kv head h // rep
        k, v = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)
        o = self.attend(q, k, v, D ** -0.5).reshape(T, H * D)
        return self.lin(o, p + ".o_proj", c.get("attention_bias", False))

    def indexer_select(self, x, q_lora, L, ang, att):
        """Lightning Indexer: per query t the top-k keys s <= t (all of them if fewer)."""
        c = self.cfg
        p = f"model.layers.{L}.self_attn.indexer"
        Hi, Di, rope, k_top = c["index_n_heads"], c["index_head_dim"], c["qk_rope_head_dim"], c["index_topk"]
        T = x.shape[0]
        q = self.lin(q_lora, p + ".wq_b").reshape(T, Hi, Di)
        k = self.lin(x, p + ".wk")
        mu, var = k.mean(-1, keepdims=True), k.var(-1, keepdims=True)
        k = (k - mu) / np.sqrt(var + 1e-6) * self.W(p + ".k_norm.weight") + self.W(p + ".k_norm.bias")
        # rope part first; GLM-5 rotates pairs (2i, 2i+1), DeepSeek-V3.2 rotates halves
        rot = self.rope_pairs if self.arch == "GlmMoeDsaForCausalLM" else self.rope_half
        q = np.concatenate([rot(q[..., :rope], ang) * att, q[..., rope:]], -1)
        k = np.concatenate([rot(k[:, None, :rope], ang)[:, 0] * att, k[:, rope:]], -1)
        w = self.lin(x, p + ".weights_proj") * Hi ** -0.5
        scores = np.maximum(np.einsum("thd,sd->ths", q, k) * Di ** -0.5, 0.0)
        index = np.einsum("th,ths->ts", w, scores)
        sel = np.zeros((T, T), dtype=bool)
        for t in range(T):
            row = index[t, : t + 1]
            if t + 1 <= k_top:
                sel[t, : t + 1] = True
                continue
            order = np.argsort(-row, kind="stable")
            sel[t, order[:k_top]] = True
            self.index_gaps.append(float(row[order[k_top - 1]] - row[order[k_top]]))
        return sel

    def mla_attention(self, x, L, pos):
        c = self.cfg
        H, nope, rope, vd = c["num_attention_heads"], c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"]
        r = c["kv_lora_rank"]
        p = f"model.layers.{L}.self_attn"
        T = x.shape[0]
        q_lora = None
        if c.get("q_lora_rank") is None:
            q = self.lin(x, p + ".q_proj")
        else:
            q_lora = self.rms(self.lin(x, p + ".q_a_proj"), self.W(p + ".q_a_layernorm.weight"), 1e-6)
            q = self.lin(q_lora, p + ".q_b_proj")
        q = q.reshape(T, H, nope + rope)
        q_nope, q_pe = q[..., :nope], q[..., nope:]
        kv = self.lin(x, p + ".kv_a_proj_with_mqa")
        latent, k_pe = kv[:, :r], kv[:, r:]
        kvb = self.lin(self.rms(latent, self.W(p + ".kv_a_layernorm.weight"), 1e-6), p + ".kv_b_proj")
        kvb = kvb.reshape(T, H, nope + vd)
        k_nope, v = kvb[..., :nope], kvb[..., nope:]
        inv, att = self.inv_freq(rope)
        ang = pos[:, None] * inv[None]
        q_pe = self.rope_pairs(q_pe, ang) * att
        k_pe = self.rope_pairs(k_pe[:, None, :], ang) * att  # one k_pe shared by all heads
        qf = np.concatenate([q_nope, q_pe], -1)
        kf = np.concatenate([k_nope, np.repeat(k_pe, H, axis=1)], -1)
        scale = (nope + rope) ** -0.5
        rs = self.rope_params()
        if rs["rope_type"] != "default" and rs.get("mscale_all_dim"):
            f = rs["factor"]
            m = 0.1 * rs["mscale_all_dim"] * math.log(f) + 1.0 if f > 1 else 1.0
            scale *= m * m
        if "index_n_heads" in c:
            # sparse attention: full layers select, shared layers reuse the previous selection
            kind = (c.get("indexer_types") or ["full"] * c["num_hidden_layers"])[L]
            if kind == "full":
                self.selection = self.indexer_select(x, q_lora, L, ang, att)
            o = self.attend_masked(qf, kf, v, scale, self.selection)
        else:
            o = self.attend(qf, kf, v, scale)
        return self.lin(o.reshape(T, H * vd), p + ".o_proj")

    @staticmethod
    def attend_masked(q, k, v, scale, allowed):
        s = np.einsum("thd,shd->hts", q, k) * scale
        s = np.where(allowed[None], s, -np.inf)
        p = Ref.softmax(s)
        return np.einsum("hts,shd->thd", p, v)

    # -- MoE ------------------------------------------------------------------
    def note_topk(self, vals, k):
        s = np.sort(vals)[::-1]
        if len(s) > k:
            self.route_gaps.append(float(s[k - 1] - s[k]))

    def moe(self, x, L):
        c = self.cfg
        p = f"model.layers.{L}.mlp"
        E = c.get("n_routed_experts") or c.get("num_experts") or c["num_local_experts"]
        K = c["num_experts_per_tok"]
        logits = x @ self.W(p + ".gate.weight").T
        out = np.zeros_like(x)
        for t in range(x.shape[0]):
            if self.arch in ("DeepseekV2ForCausalLM", "Qwen3MoeForCausalLM"):
                s = self.softmax(logits[t])
                idx = np.argsort(-s, kind="stable")[:K]
                self.note_topk(s, K)
                w = s[idx]
                if self.arch == "Qwen3MoeForCausalLM":
                    if c.get("norm_topk_prob"):
                        w = w / w.sum()
                else:
                    w = w * c["routed_scaling_factor"]  # HF V2 ignores norm_topk_prob
            else:  # sigmoid + correction bias, noaux_tc groups (V3, V3.2, GLM-5)
                s = 1.0 / (1.0 + np.exp(-logits[t]))
                choice = s + self.W(p + ".gate.e_score_correction_bias")
                G, TG = c["n_group"], c["topk_group"]
                if G > 1:
                    grp = np.sort(choice.reshape(G, E // G), axis=1)[:, ::-1][:, :2].sum(1)
                    self.note_topk(grp, TG)
                    groups = np.argsort(-grp, kind="stable")[:TG]
                    allowed = np.concatenate([np.arange(g * (E // G), (g + 1) * (E // G)) for g in groups])
                else:
                    allowed = np.arange(E)
                self.note_topk(choice[allowed], K)
                idx = allowed[np.argsort(-choice[allowed], kind="stable")[:K]]
                self.min_choice_score = min(self.min_choice_score, float(choice[idx].min()))
                w = s[idx]
                if c.get("norm_topk_prob"):
                    w = w / (w.sum() + 1e-20)
                w = w * c["routed_scaling_factor"]
            self.route_sets.add((L, tuple(sorted(int(i) for i in idx))))
            for e, we in zip(idx, w):
                out[t] += we * self.mlp(x[t:t + 1], f"{p}.experts.{e}")[0]
        if c.get("n_shared_experts"):
            out = out + self.mlp(x, p + ".shared_experts")
        return out

    def is_moe_layer(self, L):
        c = self.cfg
        if self.arch == "Qwen3MoeForCausalLM":
            return L not in (c.get("mlp_only_layers") or []) and (L + 1) % c.get("decoder_sparse_step", 1) == 0
        if "n_routed_experts" in c and c["n_routed_experts"]:
            return L >= c["first_k_dense_replace"]
        return False

    # -- model ----------------------------------------------------------------
    def forward(self, ids):
        c = self.cfg
        mla = "kv_lora_rank" in c
        x = self.W("model.embed_tokens.weight")[ids]
        pos = np.arange(len(ids), dtype=np.float64)
        eps = c["rms_norm_eps"]
        self.selection = None
        for L in range(c["num_hidden_layers"]):
            p = f"model.layers.{L}"
            h = self.rms(x, self.W(p + ".input_layernorm.weight"), eps)
            x = x + (self.mla_attention(h, L, pos) if mla else self.gqa_attention(h, L, pos))
            h = self.rms(x, self.W(p + ".post_attention_layernorm.weight"), eps)
            x = x + (self.moe(h, L) if self.is_moe_layer(L) else self.mlp(h, p + ".mlp"))
        x = self.rms(x, self.W("model.norm.weight"), eps)
        head = self.W("model.embed_tokens.weight") if c.get("tie_word_embeddings") else self.W("lm_head.weight")
        return x @ head.T


def check_reference(name, d, golden):
    ref = Ref(d)
    worst = 0.0
    for prompt, want in zip(golden["prompts"], golden["logits"]):
        got = ref.forward(np.array(prompt))
        worst = max(worst, float(np.abs(got - want).max()))
    if worst > REF_TOLERANCE:
        raise SystemExit(f"{name}: numpy reference differs from transformers by {worst:g}")
    for prompt, want in zip(golden["prompts"], golden["greedy"]):
        seq = list(prompt)
        for _ in range(GREEDY_TOKENS):
            seq.append(int(np.argmax(ref.forward(np.array(seq))[-1])))
        if seq[len(prompt):] != want:
            raise SystemExit(f"{name}: numpy greedy {seq[len(prompt):]} != {want}")
    info = dict(reference_max_abs_diff=worst)
    if ref.index_gaps:
        info["indexer_min_topk_gap"] = min(ref.index_gaps)
        if min(ref.index_gaps) < 2e-5:
            raise SystemExit(f"{name}: an indexer top-k is decided by a gap of {min(ref.index_gaps):g}")
    if ref.route_gaps:
        info["moe_min_routing_gap"] = min(ref.route_gaps)
        info["moe_distinct_expert_sets"] = len(ref.route_sets)
        if "e_score_correction_bias" in " ".join(ref.w):
            info["moe_min_selected_choice_score"] = ref.min_choice_score
            if ref.min_choice_score <= 0:
                raise SystemExit(f"{name}: a selected expert has score+bias <= 0; HF masks with 0.0")
    return info


def check_names(name, d, cfg):
    from safetensors import safe_open

    index = d / "model.safetensors.index.json"
    files = sorted(set(json.loads(index.read_text())["weight_map"].values())) if index.exists() \
        else ["model.safetensors"]
    keys = set()
    for f in files:
        with safe_open(str(d / f), framework="pt") as h:
            keys |= set(h.keys())
    ref = Ref.__new__(Ref)
    ref.cfg, ref.arch = cfg, cfg["architectures"][0]
    experts = cfg.get("n_routed_experts") or cfg.get("num_experts") or cfg.get("num_local_experts") or 0
    for L in range(cfg["num_hidden_layers"]):
        if not ref.is_moe_layer(L):
            continue
        for e in range(experts):
            for pr in ("gate_proj", "up_proj", "down_proj"):
                k = f"model.layers.{L}.mlp.experts.{e}.{pr}.weight"
                if k not in keys:
                    raise SystemExit(f"{name}: missing per-expert tensor {k}")
    for L, kind in enumerate(cfg.get("indexer_types") or []):
        has = f"model.layers.{L}.self_attn.indexer.wk.weight" in keys
        if has != (kind == "full"):
            raise SystemExit(f"{name}: layer {L} is '{kind}' but indexer weights present={has}")
    return sorted(keys)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--only", action="append", choices=sorted(SPECS))
    ap.add_argument("--any-version", action="store_true",
                    help="run with torch/transformers versions other than the pinned ones")
    args = ap.parse_args()

    import torch
    import transformers

    found = {"torch": torch.__version__.split("+")[0], "transformers": transformers.__version__}
    pinned = dict(PINNED)
    if any("compressed_tensors" in SPECS[n] for n in args.only or SPECS):
        import compressed_tensors

        found["compressed-tensors"] = compressed_tensors.__version__
        pinned["compressed-tensors"] = PINNED_COMPRESSED_TENSORS
    if found != pinned and not args.any_version:
        raise SystemExit(f"versions {found} differ from the pinned {pinned}: the fixtures would "
                         "change; install tools/requirements-fixtures.txt or pass --any-version")

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    prompts = make_prompts()
    for name in args.only or list(SPECS):
        spec = SPECS[name]
        g = build_one(name, spec, args.out, prompts)
        d = args.out / name
        cfg = json.loads((d / "config.json").read_text())
        keys = check_names(name, d, cfg)
        g["meta"].update(check_reference(name, d, dict(prompts=g["prompts"], logits=g["logits"],
                                                       greedy=g["greedy"])))
        write_golden(d / "golden.json", g["prompts"], g["logits"], g["greedy"], g["meta"])
        size = sum(p.stat().st_size for p in d.iterdir())
        print(f"{name}: {len(keys)} tensors, {size / 1024:.0f} KiB, greedy {g['greedy']}")
        print("   ", json.dumps(g["meta"], sort_keys=True))
    total = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file())
    print(f"total under {args.out}: {total / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
