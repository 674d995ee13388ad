// What a rank's model needs besides its config and weights: its place in the TP and DCP
// groups, the engine's KV-layout and numeric choices, and its thread pool.
#pragma once

#include <cstdint>
#include <string>

#include "ctxpar/attention/context_parallel/dcp_comm_plan.h"
#include "ctxpar/attention/sfa_indexer_mode.h"
#include "ctxpar/comm/parallel_groups.h"
#include "ctxpar/core/dtype.h"
#include "ctxpar/core/thread_pool.h"
#include "ctxpar/model/model_config.h"
#include "ctxpar/model/weight_source.h"

namespace ctxpar::model {

class FullWeightWorkspace;

// How MLA-family models keep o_proj (--additional-config o_proj_quant).
enum class OProjQuant {
  kNone,  // as loaded, in weight_dtype (f32 or bf16)
  kBf16,  // bf16 whatever weight_dtype says
  // int8 W8A8 (SmoothQuant-style), quantized at load: int8 weight with a per-output-channel
  // scale, a per-input-channel activation smoothing, per-token dynamic int8 activations
  // (model/layers/output_projection.h).
  kInt8,
};

struct ModelOptions {
  DType weight_dtype = DType::kF32;    // --dtype: f32 or bf16 weights (activations are f32)
  DType kv_cache_dtype = DType::kF32;  // --kv-cache-dtype
  int block_size = 16;                 // --block-size (tokens per block per rank)
  int interleave = 1;                  // --cp-kv-cache-interleave-size
  attention::DcpCommPlan comm_plan = attention::DcpCommPlan::kAllGatherReduceScatter;
  int64_t max_context_chunk = 8192;  // MLA / SFA-DCP prefill: context rows gathered at once
  // Sparse-attention indexer under DCP (--additional-config sfa_indexer_mode; parse the
  // value with attention::parse_sfa_indexer_mode). Without DCP both modes are the same.
  attention::SfaIndexerMode sfa_indexer_mode = attention::SfaIndexerMode::kReplicated;
  // DSA-CP for sparse-attention models (--additional-config enable_dsa_cp; model/sfa_mode.h).
  bool enable_dsa_cp = false;
  // Sequence-parallel layers ("flashcomm1"): between layers every rank keeps only its slice of
  // the step's tokens (attention::TokenShard); row-parallel layers reduce-scatter over tokens
  // instead of all-reducing, column-parallel ones all-gather their input first.
  bool sequence_parallel = false;
  OProjQuant o_proj_quant = OProjQuant::kNone;
  // Linear weights not stored FP8 are block-quantized to FP8 at load (dummy weights of an FP8
  // config, or --quantization fp8 on a bf16 checkpoint), except the modules the model's
  // QuantizationConfig excludes. Weights stored FP8 stay FP8 whatever this says.
  bool quantize_fp8 = false;
};

// Everything a layer constructor reads. References outlive the model.
struct ModelContext {
  const WeightSource& weights;
  const ParallelGroups& groups;
  const ModelOptions& options;
  ThreadPool& pool;
  // Where DSA-CP gathers full o_proj weights, shared by the model's layers (CausalLM sets it);
  // null: a layer that needs one keeps its own.
  FullWeightWorkspace* full_weights = nullptr;
  // The model's quantization_config (CausalLM sets it); null: none.
  const QuantizationConfig* quantization = nullptr;

  int tp_rank() const { return groups.tp_rank(); }
  int tp_size() const { return groups.tp_size(); }
  int dcp_size() const { return groups.dcp_size(); }
  // Reads this rank's slice of a weight, converted to `dtype`.
  // An FP8 tensor is dequantized.
  Tensor load(const std::string& name, const Shape& full_shape, const Slice& slice,
              DType dtype) const {
    return weights.get(name, full_shape, dtype, slice);
  }
  // Whether linear weight `name` is kept FP8: stored FP8, or quantized at load
  // (options.quantize_fp8, unless the quantization config excludes the module).
  bool keeps_fp8(const std::string& name) const;
  // How its FP8 form is scaled: as stored, or 128×128 blocks when quantized at load.
  kernels::Fp8Scaling fp8_scaling(const std::string& name) const;
  // Its FP8 form (as stored, or quantized from f32 here); block scales need the slice to cut
  // on 128-blocks (check_fp8_slice), so every tensor-parallel layout sees the same blocks.
  kernels::Fp8Weight load_fp8(const std::string& name, const Shape& full_shape,
                              const Slice& slice) const;
};

}  // namespace ctxpar::model
