// Oracle harness for the attention backends: one attention layer with random TP-sharded
// projection weights, driven through a multi-step schedule (chunked prefill, decode, requests
// joining and finishing in mixed batches) on T in-process ranks, for any (T, N, I, B, plan,
// cache dtype). Its outputs are compared with the same run at T = N = 1 and with a plain
// double-precision reference.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "block_plan.h"
#include "ctxpar/attention/context_parallel/dcp_comm_plan.h"
#include "ctxpar/comm/communicator.h"
#include "ctxpar/core/tensor.h"
#include "numerics.h"

namespace ctxpar::testing {

enum class AttnType { kGqa, kMla };

struct LayerShape {
  AttnType type = AttnType::kGqa;
  int64_t hidden = 32;
  int64_t num_heads = 8;
  // GQA
  int64_t num_kv_heads = 1;
  int64_t head_dim = 16;
  // MLA
  int64_t kv_lora = 24;
  int64_t nope = 8;
  int64_t rope = 8;
  int64_t v_dim = 12;
};

struct RunConfig {
  int tp = 1;
  int dcp = 1;
  int interleave = 1;
  int block_size = 16;
  attention::DcpCommPlan plan = attention::DcpCommPlan::kAllGatherReduceScatter;
  DType cache_dtype = DType::kF32;
  float k_scale = 1.0f;  // GQA, e4m3 cache: the checkpoint's per-tensor KV cache scales
  float v_scale = 1.0f;
  int64_t max_context_chunk = 8192;  // MLA prefill context window bound
  int threads_per_rank = 1;
};

// One step: (request id, new tokens) in batch order (decodes first).
using ScheduledStep = test_support::ScheduleStep;

struct Scenario {
  LayerShape shape;
  std::vector<int64_t> total_len;  // per request: every token it will ever have
  std::vector<ScheduledStep> steps;
  std::vector<Tensor> inputs;  // per request [total_len, hidden] f32 hidden states
  // Full (unsharded) weights, f32, [out, in].
  Tensor wq, wk, wv, wo;  // GQA
  Tensor wkv_a, wkv_b;    // MLA (wq, wo shared names)
  float scale = 1.0f;
};

// Requests with random prompt lengths (some shorter than 8, one long enough to span several
// blocks), prefilled in random chunks, decoded a few steps, joining at random steps.
Scenario make_scenario(const LayerShape& shape, std::mt19937& rng, int num_requests,
                       int64_t max_prompt);

struct RunResult {
  std::vector<Tensor> outputs;  // per step [tokens, hidden] f32 (rank 0; all ranks checked equal)
  int64_t kv_bytes_per_rank = 0;
};

// Runs the scenario on cfg.tp in-process ranks. Throws ctxpar::Error on invalid configs.
RunResult run_layer(const Scenario& scenario, const RunConfig& cfg);

// This rank's part of the same run on an existing world of cfg.tp ranks (in-process or MPI);
// every rank of the world must call it. Returns this rank's outputs.
RunResult run_layer_rank(Communicator& world, const Scenario& scenario, const RunConfig& cfg);

// Double-precision reference outputs, per step [tokens, hidden]. GQA with kv_dtype bf16: the
// keys (after RoPE) and values rounded to bf16 first, as a bf16 cache holds them, and the
// queries too, as the kernels round q for a bf16 cache.
// kv_dtype bf16 or e4m3: GQA's k and v as the cache rounds them (e4m3: k_scale · e4m3(k /
// k_scale), likewise v). round_weights: the softmax weights of P·V rounded to bf16 as a kernel
// that rounds them does (kernels::attention_rounds_weights): 2^M·bf16(2^(s·log2 e − M)) over
// the unrounded weights' sum, M the whole number at or above the largest score (base 2).
std::vector<Tensor> reference_outputs(const Scenario& scenario, DType kv_dtype = DType::kF32,
                                      float k_scale = 1.0f, float v_scale = 1.0f,
                                      bool round_weights = false);

using test_support::relative_error;

}  // namespace ctxpar::testing
