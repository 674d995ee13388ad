// A tiny greedy generation loop over builtin:tiny-deepseek-v32 with dummy weights, shared by
// the in-process test and the mpirun program: prompts prefilled in chunks (decodes first in
// every batch, so batches mix decodes and prefills), then decoded greedily.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ctxpar/attention/context_parallel/dcp_comm_plan.h"
#include "ctxpar/attention/sfa_indexer_mode.h"
#include "ctxpar/comm/communicator.h"
#include "ctxpar/model/layers/model_context.h"
#include "ctxpar/model/model_config.h"

namespace ctxpar::sfa_test {

struct RunSpec {
  int tp = 1;
  int dcp = 1;
  int block_size = 16;
  int interleave = 1;
  attention::DcpCommPlan plan = attention::DcpCommPlan::kAllGatherReduceScatter;
  attention::SfaIndexerMode mode = attention::SfaIndexerMode::kReplicated;
  // DSA-CP, sequence-parallel layers and the o_proj / weight numerics (tests/dsa_cp).
  bool dsa_cp = false;
  bool sequence_parallel = false;
  model::OProjQuant o_proj_quant = model::OProjQuant::kNone;
  DType weight_dtype = DType::kF32;
  DType kv_cache_dtype = DType::kF32;  // kF8E4M3: --kv-cache-dtype fp8 (index keys in bf16)

  std::string describe() const;
};

struct PromptSet {
  std::vector<std::vector<int32_t>> prompts;  // byte tokens
  std::vector<std::vector<int64_t>> chunks;   // per prompt, prefill chunk sizes summing to it
};

// Three prompts: two longer than index_topk (16), so the indexer drops keys, one of 5 tokens.
PromptSet make_prompts(std::mt19937& rng);

struct Generation {
  std::vector<std::vector<int32_t>> tokens;             // per prompt, the greedy continuation
  std::vector<std::vector<std::vector<float>>> logits;  // per prompt and token: its logits row
  double logit_spread = 0;                              // smallest max - min over the sampled rows
  bool finite = true;                                   // every sampled logit finite
};

inline constexpr size_t kDecodeSteps = 6;

// Per prompt, a continuation to feed instead of the argmax (teacher forcing): the logits rows
// are those of the forced tokens' positions, so a rounding step taken differently at one
// position cannot change the inputs of the next ones.
using ForcedTokens = std::vector<std::vector<int32_t>>;

// Every rank of `world` (world.size() == spec.tp) calls this; the result is rank 0's. With
// `forced` (kDecodeSteps tokens per prompt) the continuation is forced's, else greedy.
Generation generate_on(Communicator& world, const model::ModelConfig& config, const RunSpec& spec,
                       const PromptSet& prompts, const ForcedTokens* forced = nullptr);

// The same on spec.tp in-process ranks.
Generation generate_inprocess(const model::ModelConfig& config, const RunSpec& spec,
                              const PromptSet& prompts, const ForcedTokens* forced = nullptr);

}  // namespace ctxpar::sfa_test
