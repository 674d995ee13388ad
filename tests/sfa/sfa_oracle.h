// Oracle harness for the sparse-attention layer (model/layers/sfa_attention_layer.h): one
// DeepSeek-V3.2 attention layer — q LoRA, MLA latent, Lightning Indexer, sparse MLA, o_proj —
// with random full weights served by name, driven through a multi-step schedule (chunked
// prefill, decode-only steps, requests joining and finishing in mixed batches) on T in-process
// ranks for any (T, N, I, B, plan, cache dtype, indexer mode). Its outputs and selections are
// compared with the same run at T = N = 1, with the dense MLA layer on the same weights, and
// with a double-precision reference of the whole layer.
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "block_plan.h"
#include "ctxpar/attention/context_parallel/dcp_comm_plan.h"
#include "ctxpar/attention/sfa_indexer_mode.h"
#include "ctxpar/core/tensor.h"
#include "ctxpar/model/layers/model_context.h"
#include "ctxpar/model/model_config.h"
#include "numerics.h"

namespace ctxpar::sfa_test {

struct SfaShape {
  int64_t hidden = 32;
  int64_t num_heads = 8;
  int64_t q_lora = 20;
  int64_t kv_lora = 24;
  int64_t nope = 8;
  int64_t rope = 8;
  int64_t v_dim = 12;
  int64_t index_heads = 3;  // not a multiple of 4: the kernel pads head quads
  int64_t index_dim = 16;   // rope part first: index_dim >= rope
  int64_t index_topk = 8;
};

// One step: (request id, new tokens) in batch order (decodes first).
using Step = test_support::ScheduleStep;

struct SfaScenario {
  SfaShape shape;
  model::ModelConfig config;  // a DeepseekV32 config of the shape (one layer)
  std::vector<int64_t> total_len;
  std::vector<Step> steps;
  std::vector<Tensor> inputs;             // per request [total_len, hidden] f32 layer inputs
  std::map<std::string, Tensor> weights;  // full f32 weights of layer 0 by HF name
};

// Requests with random prompt lengths (one of max_prompt, one shorter than most N), prefilled
// in random chunks, then decoded; they join at random steps, so batches mix decodes and
// prefills, and the schedule ends with decode-only steps.
SfaScenario make_sfa_scenario(const SfaShape& shape, std::mt19937& rng, int num_requests,
                              int64_t max_prompt);

struct SfaRunConfig {
  int tp = 1;
  int dcp = 1;
  int interleave = 1;
  int block_size = 16;
  attention::DcpCommPlan plan = attention::DcpCommPlan::kAllGatherReduceScatter;
  DType cache_dtype = DType::kF32;
  int64_t max_context_chunk = 8192;
  attention::SfaIndexerMode indexer_mode = attention::SfaIndexerMode::kReplicated;
  bool dense = false;  // run the dense MLA layer (MlaAttentionLayer) on the same weights
  int threads_per_rank = 1;
  // DSA-CP and sequence-parallel runs (tests/dsa_cp): the token-slice metadata, the layer's
  // forward_sharded on each rank's rows (then gathered), and the o_proj / weight numerics.
  bool dsa_cp = false;
  bool sequence_parallel = false;
  model::OProjQuant o_proj_quant = model::OProjQuant::kNone;
  DType weight_dtype = DType::kF32;
};

struct SfaRunResult {
  std::vector<Tensor> outputs;     // per step [tokens, hidden] f32 (rank 0; all ranks equal)
  std::vector<Tensor> selections;  // per step [tokens, topk] i32 (SFA only; all ranks equal;
                                   // under DSA-CP the ranks' slices gathered)
  std::vector<bool> decode_only;   // per step
  int64_t latent_bytes_per_rank = 0;
  int64_t indexer_bytes_per_rank = 0;
};

// Runs the scenario on cfg.tp in-process ranks; checks that every rank's outputs and
// selections are identical. Throws ctxpar::Error on invalid configs.
SfaRunResult run_sfa_layer(const SfaScenario& scenario, const SfaRunConfig& cfg);

// The layer in double precision, from the definition.
class SfaReference {
 public:
  explicit SfaReference(const SfaScenario& scenario);

  // Per step [tokens, hidden]: attention over the given selections (global positions,
  // -1 = none), or over all keys up to each token when selections is empty.
  std::vector<Tensor> outputs(const std::vector<Tensor>& selections) const;

  // "" if every token's selection is a top-min(k, p+1) set of the double indexer scores, up
  // to the f32 rounding of the scores; else a description of the first violation.
  std::string check_selections(const std::vector<Tensor>& selections) const;

 private:
  struct Token {
    std::vector<double> q, k, v;  // [H·qk], [H·qk], [H·v]
    std::vector<double> iq, ik;   // [H_i·D], [D]
    std::vector<double> iw;       // [H_i], scaled
  };
  double index_score(int req, int64_t p, int64_t s, double* magnitude) const;

  const SfaScenario& s_;
  std::vector<std::vector<Token>> tokens_;  // [request][position]
  double scale_;
};

using test_support::relative_error;

}  // namespace ctxpar::sfa_test
