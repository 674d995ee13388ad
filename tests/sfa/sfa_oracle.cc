#include "sfa_oracle.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <set>

#include "ctxpar/comm/inprocess_communicator.h"
#include "ctxpar/comm/parallel_groups.h"
#include "ctxpar/core/error.h"
#include "ctxpar/kv/block_pool.h"
#include "ctxpar/kv/block_table.h"
#include "ctxpar/model/layers/sfa_attention_layer.h"
#include "ctxpar/model/sfa_mode.h"
#include "ctxpar/model/weight_slice.h"

namespace ctxpar::sfa_test {
namespace {

constexpr double kRopeTheta = 10000.0;
constexpr double kNormEps = 1e-6;  // q_a/kv_a RMSNorm and the indexer's k LayerNorm

std::string name_of(const std::string& leaf) {
  return "model.layers.0.self_attn." + leaf;
}

// Full weights held in memory, served by name and TP slice like a checkpoint.
class TensorMapWeights : public model::WeightSource {
 public:
  explicit TensorMapWeights(const std::map<std::string, Tensor>& tensors) : tensors_(tensors) {}
  bool has(const std::string& name) const override { return tensors_.count(name) > 0; }
  Tensor get(const std::string& name, const Shape& full_shape, DType want,
             const model::Slice& slice) const override {
    const auto it = tensors_.find(name);
    CTXPAR_CHECK(it != tensors_.end(), "test weights have no tensor {}", name);
    CTXPAR_CHECK(it->second.shape() == full_shape, "test weight {} is {}, the layer asked for {}",
                 name, it->second.describe(), shape_str(full_shape));
    return model::copy_slice(it->second.raw(), it->second.dtype(), full_shape, slice, want, name);
  }

 private:
  const std::map<std::string, Tensor>& tensors_;
};

Tensor random_tensor(const Shape& shape, double center, double half_width, std::mt19937& rng) {
  Tensor t = Tensor::empty(shape, DType::kF32);
  std::uniform_real_distribution<double> dist(center - half_width, center + half_width);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(dist(rng));
  return t;
}

// Rotates pairs of x[0, dim) by pos·theta^(-2i/dim): interleaved pairs (2i, 2i+1) (MLA) or
// rotate-half pairs (i, i + dim/2) (the indexer). In double.
void rope_inplace(double* x, int64_t dim, int64_t pos, bool interleaved) {
  for (int64_t i = 0; i < dim / 2; ++i) {
    const double freq =
        std::pow(kRopeTheta, -2.0 * static_cast<double>(i) / static_cast<double>(dim));
    const double c = std::cos(static_cast<double>(pos) * freq);
    const double s = std::sin(static_cast<double>(pos) * freq);
    const int64_t a = interleaved ? 2 * i : i, b = interleaved ? 2 * i + 1 : i + dim / 2;
    const double xa = x[a], xb = x[b];
    x[a] = xa * c - xb * s;
    x[b] = xa * s + xb * c;
  }
}

// y = W·x for W [out, in] f32.
std::vector<double> matvec(const Tensor& w, const std::vector<double>& x) {
  std::vector<double> y(static_cast<size_t>(w.size(0)), 0.0);
  for (int64_t o = 0; o < w.size(0); ++o) {
    const float* row = w.data<float>() + o * w.size(1);
    double acc = 0;
    for (int64_t i = 0; i < w.size(1); ++i)
      acc += static_cast<double>(row[i]) * x[static_cast<size_t>(i)];
    y[static_cast<size_t>(o)] = acc;
  }
  return y;
}

std::vector<double> rms_norm(const std::vector<double>& x, const Tensor& w) {
  double ms = 0;
  for (double v : x) ms += v * v;
  const double inv = 1.0 / std::sqrt(ms / static_cast<double>(x.size()) + kNormEps);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * inv * w.data<float>()[i];
  return y;
}

std::vector<double> layer_norm(const std::vector<double>& x, const Tensor& w, const Tensor& b) {
  double mean = 0, var = 0;
  for (double v : x) mean += v;
  mean /= static_cast<double>(x.size());
  for (double v : x) var += (v - mean) * (v - mean);
  var /= static_cast<double>(x.size());
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    y[i] = (x[i] - mean) / std::sqrt(var + kNormEps) * w.data<float>()[i] + b.data<float>()[i];
  }
  return y;
}

model::ModelConfig config_of(const SfaShape& sh) {
  model::ModelConfig c;
  c.arch = model::ModelArch::kDeepseekV32;
  c.source = "sfa-oracle";
  c.model_type = "deepseek_v32";
  c.vocab_size = 16;
  c.hidden_size = sh.hidden;
  c.intermediate_size = 8;
  c.num_hidden_layers = 1;
  c.num_attention_heads = sh.num_heads;
  c.num_key_value_heads = sh.num_heads;
  c.head_dim = sh.nope + sh.rope;
  c.max_position_embeddings = 512;
  c.rms_norm_eps = kNormEps;
  c.rope.theta = kRopeTheta;
  c.mla = {sh.q_lora, sh.kv_lora, sh.nope, sh.rope, sh.v_dim};
  c.indexer = {sh.index_heads, sh.index_dim, sh.index_topk};
  return c;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.contiguous().raw(), b.contiguous().raw(), a.nbytes()) == 0;
}

}  // namespace

SfaScenario make_sfa_scenario(const SfaShape& shape, std::mt19937& rng, int num_requests,
                              int64_t max_prompt) {
  SfaScenario s;
  s.shape = shape;
  s.config = config_of(shape);
  std::uniform_int_distribution<int64_t> prompt_len(1, max_prompt);
  std::uniform_int_distribution<int64_t> decode_len(1, 5);
  std::uniform_int_distribution<int> join(0, 3);
  std::vector<int64_t> prompt(static_cast<size_t>(num_requests));
  std::vector<int> joins(static_cast<size_t>(num_requests));
  for (int i = 0; i < num_requests; ++i) {
    const auto u = static_cast<size_t>(i);
    prompt[u] = i == 0 ? max_prompt : prompt_len(rng);
    if (i == 1) prompt[u] = 1 + static_cast<int64_t>(rng() % 3);  // shorter than most N
    // Request 0 decodes longest, so the schedule ends with decode-only steps.
    s.total_len.push_back(prompt[u] + (i == 0 ? 7 : decode_len(rng)));
    joins[u] = i == 0 ? 0 : join(rng);
  }
  std::vector<int64_t> computed(static_cast<size_t>(num_requests), 0);
  for (int step = 0;; ++step) {
    Step decodes, prefills;
    bool pending = false;
    for (int i = 0; i < num_requests; ++i) {
      const auto u = static_cast<size_t>(i);
      if (computed[u] == s.total_len[u]) continue;
      pending = true;
      if (joins[u] > step) continue;
      if (computed[u] < prompt[u]) {
        const int64_t left = prompt[u] - computed[u];
        const int64_t chunk = (rng() % 3 == 0) ? left : 1 + static_cast<int64_t>(rng() % left);
        prefills.emplace_back(i, chunk);
      } else {
        decodes.emplace_back(i, 1);
      }
    }
    if (!pending) break;
    if (decodes.empty() && prefills.empty()) continue;
    Step all = decodes;
    all.insert(all.end(), prefills.begin(), prefills.end());
    for (const auto& [id, n] : all) computed[static_cast<size_t>(id)] += n;
    s.steps.push_back(std::move(all));
  }
  for (int64_t len : s.total_len) s.inputs.push_back(random_tensor({len, shape.hidden}, 0, 1, rng));

  const SfaShape& sh = shape;
  const auto inv_sqrt = [](int64_t n) { return 1.0 / std::sqrt(static_cast<double>(n)); };
  const int64_t qk = sh.nope + sh.rope;
  auto& w = s.weights;
  w[name_of("q_a_proj.weight")] =
      random_tensor({sh.q_lora, sh.hidden}, 0, inv_sqrt(sh.hidden), rng);
  w[name_of("q_a_layernorm.weight")] = random_tensor({sh.q_lora}, 1, 0.2, rng);
  w[name_of("q_b_proj.weight")] =
      random_tensor({sh.num_heads * qk, sh.q_lora}, 0, inv_sqrt(sh.q_lora), rng);
  w[name_of("kv_a_proj_with_mqa.weight")] =
      random_tensor({sh.kv_lora + sh.rope, sh.hidden}, 0, inv_sqrt(sh.hidden), rng);
  w[name_of("kv_a_layernorm.weight")] = random_tensor({sh.kv_lora}, 1, 0.2, rng);
  w[name_of("kv_b_proj.weight")] = random_tensor({sh.num_heads * (sh.nope + sh.v_dim), sh.kv_lora},
                                                 0, inv_sqrt(sh.kv_lora), rng);
  w[name_of("o_proj.weight")] = random_tensor({sh.hidden, sh.num_heads * sh.v_dim}, 0,
                                              inv_sqrt(sh.num_heads * sh.v_dim), rng);
  w[name_of("indexer.wq_b.weight")] =
      random_tensor({sh.index_heads * sh.index_dim, sh.q_lora}, 0, inv_sqrt(sh.q_lora), rng);
  w[name_of("indexer.wk.weight")] =
      random_tensor({sh.index_dim, sh.hidden}, 0, inv_sqrt(sh.hidden), rng);
  w[name_of("indexer.k_norm.weight")] = random_tensor({sh.index_dim}, 1, 0.2, rng);
  w[name_of("indexer.k_norm.bias")] = random_tensor({sh.index_dim}, 0, 0.1, rng);
  w[name_of("indexer.weights_proj.weight")] =
      random_tensor({sh.index_heads, sh.hidden}, 0, inv_sqrt(sh.hidden), rng);
  return s;
}

SfaRunResult run_sfa_layer(const SfaScenario& s, const SfaRunConfig& cfg) {
  const kv::DcpLayout layout(cfg.dcp, cfg.block_size, cfg.interleave);
  // A capacity that every N in {1, 2, 3, 4, 6, 8} divides into whole blocks (a multiple of
  // 24·B) holding all requests at once, so KV bytes per rank compare exactly across N.
  const int64_t longest = *std::max_element(s.total_len.begin(), s.total_len.end());
  const auto reqs = static_cast<int64_t>(s.total_len.size());
  const int64_t per_request_blocks = (longest + cfg.block_size - 1) / cfg.block_size;
  const int64_t capacity =
      24 * int64_t{cfg.block_size} * ((reqs * per_request_blocks + 23) / 24 + reqs);
  const auto num_blocks = static_cast<int32_t>(capacity / (int64_t{cfg.block_size} * cfg.dcp));
  const std::vector<test_support::PlannedStep> plan = test_support::plan_block_tables(
      s.total_len, s.steps, layout, num_blocks, static_cast<uint32_t>(capacity));

  model::ModelOptions options;
  options.kv_cache_dtype = cfg.cache_dtype;
  options.block_size = cfg.block_size;
  options.interleave = cfg.interleave;
  options.comm_plan = cfg.plan;
  options.max_context_chunk = cfg.max_context_chunk;
  options.sfa_indexer_mode = cfg.indexer_mode;
  options.enable_dsa_cp = cfg.dsa_cp;
  options.sequence_parallel = cfg.sequence_parallel;
  options.o_proj_quant = cfg.o_proj_quant;
  options.weight_dtype = cfg.weight_dtype;
  const TensorMapWeights weights(s.weights);

  std::vector<SfaRunResult> per_rank(static_cast<size_t>(cfg.tp));
  run_inprocess_ranks(cfg.tp, [&](Communicator& world) {
    ParallelGroups groups(world, cfg.tp, cfg.dcp);
    ThreadPool pool(cfg.threads_per_rank);
    const model::ModelContext ctx{weights, groups, options, pool};
    const auto rope = model::make_rope_cache(s.config);
    std::unique_ptr<model::AttentionLayer> layer;
    model::SfaAttentionLayer* sfa = nullptr;
    if (cfg.dense) {
      layer = std::make_unique<model::MlaAttentionLayer>(ctx, s.config, 0, rope);
    } else {
      auto owned = std::make_unique<model::SfaAttentionLayer>(ctx, s.config, 0, rope);
      sfa = owned.get();
      layer = std::move(owned);
    }
    SfaRunResult& mine = per_rank[static_cast<size_t>(world.rank())];
    std::vector<Tensor> caches;
    for (const kv::KvCacheSpec& spec : layer->kv_cache_specs()) {
      caches.push_back(
          Tensor::empty({num_blocks, spec.rows_per_block(layout), spec.head_dim}, spec.dtype));
      (spec.kind == kv::KvCacheKind::kIndexer ? mine.indexer_bytes_per_rank
                                              : mine.latent_bytes_per_rank) +=
          static_cast<int64_t>(caches.back().nbytes());
    }
    layer->bind_caches(caches);

    const std::unique_ptr<attention::AttentionMetadataBuilder> builder =
        model::make_metadata_builder(s.config, ctx);
    for (const test_support::PlannedStep& step : plan) {
      const attention::AttentionMetadata md = builder->build(step.requests);
      Tensor x = Tensor::empty({md.common.num_tokens, s.shape.hidden}, DType::kF32);
      int64_t t = 0;
      for (size_t i = 0; i < step.requests.size(); ++i) {
        const auto& r = step.requests[i];
        for (int64_t j = 0; j < r.num_scheduled; ++j, ++t) {
          x.select(0, t).copy_from(
              s.inputs[static_cast<size_t>(step.request_ids[i])].select(0, r.num_computed + j));
        }
      }
      const attention::TokenShard shard =
          attention::make_token_shard(md.common.num_tokens, groups.tp_rank(), cfg.tp);
      if (cfg.sequence_parallel) {
        const model::SequenceShard sp(shard, groups.tp());
        mine.outputs.push_back(sp.gather(layer->forward_sharded(md, sp, sp.local_rows(x))).clone());
      } else {
        mine.outputs.push_back(layer->forward(md, x));
      }
      mine.decode_only.push_back(md.common.num_decode_tokens() == md.common.num_tokens);
      if (sfa != nullptr && md.dsa_cp) {
        // Each rank selected for its own slice: gather the slices, [S, k] each.
        const Tensor& own = sfa->last_selection();
        Tensor padded = Tensor::empty({shard.per_rank, s.shape.index_topk}, DType::kI32);
        padded.fill(-1);
        if (shard.num_local() > 0) padded.slice(0, 0, shard.num_local()).copy_from(own);
        mine.selections.push_back(
            groups.tp().all_gather(padded, 0).slice(0, 0, md.common.num_tokens).clone());
      } else if (sfa != nullptr) {
        mine.selections.push_back(sfa->last_selection().clone());
      }
    }
  });
  for (int r = 1; r < cfg.tp; ++r) {
    const SfaRunResult& other = per_rank[static_cast<size_t>(r)];
    for (size_t i = 0; i < per_rank[0].outputs.size(); ++i) {
      CTXPAR_CHECK(same_bits(other.outputs[i], per_rank[0].outputs[i]),
                   "rank {} output of step {} differs from rank 0", r, i);
    }
    for (size_t i = 0; i < per_rank[0].selections.size(); ++i) {
      CTXPAR_CHECK(same_bits(other.selections[i], per_rank[0].selections[i]),
                   "rank {} selection of step {} differs from rank 0", r, i);
    }
  }
  return per_rank[0];
}

SfaReference::SfaReference(const SfaScenario& s) : s_(s) {
  const SfaShape& sh = s.shape;
  const auto& w = s.weights;
  const auto W = [&](const std::string& leaf) -> const Tensor& { return w.at(name_of(leaf)); };
  const int64_t qk = sh.nope + sh.rope;
  scale_ = 1.0 / std::sqrt(static_cast<double>(qk));
  const double weights_scale = 1.0 / std::sqrt(static_cast<double>(sh.index_heads * sh.index_dim));
  for (size_t r = 0; r < s.total_len.size(); ++r) {
    tokens_.emplace_back();
    for (int64_t p = 0; p < s.total_len[r]; ++p) {
      std::vector<double> x(static_cast<size_t>(sh.hidden));
      for (int64_t e = 0; e < sh.hidden; ++e)
        x[static_cast<size_t>(e)] = s.inputs[r].item_as_double({p, e});
      Token tok;
      const std::vector<double> q_lora =
          rms_norm(matvec(W("q_a_proj.weight"), x), W("q_a_layernorm.weight"));
      tok.q = matvec(W("q_b_proj.weight"), q_lora);
      for (int64_t h = 0; h < sh.num_heads; ++h)
        rope_inplace(&tok.q[h * qk + sh.nope], sh.rope, p, true);
      std::vector<double> kv_a = matvec(W("kv_a_proj_with_mqa.weight"), x);
      rope_inplace(&kv_a[static_cast<size_t>(sh.kv_lora)], sh.rope, p, true);
      const std::vector<double> c = rms_norm(
          std::vector<double>(kv_a.begin(), kv_a.begin() + sh.kv_lora), W("kv_a_layernorm.weight"));
      const std::vector<double> kv = matvec(W("kv_b_proj.weight"), c);  // [H·(nope + v)]
      tok.k.assign(static_cast<size_t>(sh.num_heads * qk), 0.0);
      tok.v.assign(static_cast<size_t>(sh.num_heads * sh.v_dim), 0.0);
      for (int64_t h = 0; h < sh.num_heads; ++h) {
        for (int64_t e = 0; e < sh.nope; ++e) tok.k[h * qk + e] = kv[h * (sh.nope + sh.v_dim) + e];
        for (int64_t e = 0; e < sh.rope; ++e) tok.k[h * qk + sh.nope + e] = kv_a[sh.kv_lora + e];
        for (int64_t e = 0; e < sh.v_dim; ++e)
          tok.v[h * sh.v_dim + e] = kv[h * (sh.nope + sh.v_dim) + sh.nope + e];
      }
      // Indexer: rope part first, rotate-half.
      tok.iq = matvec(W("indexer.wq_b.weight"), q_lora);
      for (int64_t h = 0; h < sh.index_heads; ++h)
        rope_inplace(&tok.iq[h * sh.index_dim], sh.rope, p, false);
      tok.ik = layer_norm(matvec(W("indexer.wk.weight"), x), W("indexer.k_norm.weight"),
                          W("indexer.k_norm.bias"));
      rope_inplace(tok.ik.data(), sh.rope, p, false);
      tok.iw = matvec(W("indexer.weights_proj.weight"), x);
      for (double& v : tok.iw) v *= weights_scale;
      tokens_.back().push_back(std::move(tok));
    }
  }
}

double SfaReference::index_score(int req, int64_t p, int64_t s, double* magnitude) const {
  const SfaShape& sh = s_.shape;
  const Token& q = tokens_[static_cast<size_t>(req)][static_cast<size_t>(p)];
  const Token& k = tokens_[static_cast<size_t>(req)][static_cast<size_t>(s)];
  double score = 0, mag = 0;
  for (int64_t h = 0; h < sh.index_heads; ++h) {
    double dot = 0, abs_dot = 0;
    for (int64_t e = 0; e < sh.index_dim; ++e) {
      dot += q.iq[h * sh.index_dim + e] * k.ik[e];
      abs_dot += std::abs(q.iq[h * sh.index_dim + e] * k.ik[e]);
    }
    score += q.iw[h] * std::max(dot, 0.0);
    mag += std::abs(q.iw[h]) * abs_dot;
  }
  if (magnitude != nullptr) *magnitude = mag;
  return score;
}

std::vector<Tensor> SfaReference::outputs(const std::vector<Tensor>& selections) const {
  const SfaShape& sh = s_.shape;
  const int64_t h_all = sh.num_heads, qk = sh.nope + sh.rope, vd = sh.v_dim;
  const Tensor& wo = s_.weights.at(name_of("o_proj.weight"));
  std::vector<Tensor> out;
  std::vector<int64_t> computed(s_.total_len.size(), 0);
  for (size_t step = 0; step < s_.steps.size(); ++step) {
    int64_t tokens = 0;
    for (const auto& item : s_.steps[step]) tokens += item.second;
    Tensor y = Tensor::empty({tokens, sh.hidden}, DType::kF32);
    int64_t t = 0;
    for (const auto& [id, n] : s_.steps[step]) {
      const auto& toks = tokens_[static_cast<size_t>(id)];
      for (int64_t j = 0; j < n; ++j, ++t) {
        const int64_t p = computed[static_cast<size_t>(id)] + j;
        std::vector<int64_t> keys;
        if (selections.empty()) {
          keys.resize(static_cast<size_t>(p + 1));
          std::iota(keys.begin(), keys.end(), 0);
        } else {
          const Tensor& sel = selections[step];
          for (int64_t c = 0; c < sel.size(1); ++c) {
            const int32_t pos = sel.data<int32_t>()[t * sel.size(1) + c];
            if (pos >= 0) keys.push_back(pos);
          }
        }
        std::vector<double> attn(static_cast<size_t>(h_all * vd), 0.0);
        for (int64_t h = 0; h < h_all; ++h) {
          std::vector<double> scores;
          double mx = -INFINITY;
          for (int64_t key : keys) {
            double dot = 0;
            for (int64_t e = 0; e < qk; ++e)
              dot += toks[static_cast<size_t>(p)].q[h * qk + e] *
                     toks[static_cast<size_t>(key)].k[h * qk + e];
            scores.push_back(dot * scale_);
            mx = std::max(mx, scores.back());
          }
          double denom = 0;
          for (double& sc : scores) denom += (sc = std::exp(sc - mx));
          for (size_t i = 0; i < keys.size(); ++i)
            for (int64_t e = 0; e < vd; ++e)
              attn[h * vd + e] +=
                  scores[i] / denom * toks[static_cast<size_t>(keys[i])].v[h * vd + e];
        }
        const std::vector<double> o = matvec(wo, attn);
        for (int64_t e = 0; e < sh.hidden; ++e)
          y.data<float>()[t * sh.hidden + e] = static_cast<float>(o[e]);
      }
      computed[static_cast<size_t>(id)] += n;
    }
    out.push_back(std::move(y));
  }
  return out;
}

std::string SfaReference::check_selections(const std::vector<Tensor>& selections) const {
  const int64_t k = s_.shape.index_topk;
  std::vector<int64_t> computed(s_.total_len.size(), 0);
  for (size_t step = 0; step < s_.steps.size(); ++step) {
    const Tensor& sel = selections[step];
    int64_t t = 0;
    for (const auto& [id, n] : s_.steps[step]) {
      for (int64_t j = 0; j < n; ++j, ++t) {
        const int64_t p = computed[static_cast<size_t>(id)] + j;
        const int64_t want = std::min(k, p + 1);
        std::set<int64_t> chosen;
        for (int64_t c = 0; c < k; ++c) {
          const int32_t pos = sel.data<int32_t>()[t * k + c];
          if (c >= want) {
            if (pos != -1)
              return fmt::format("step {} token {}: slot {} is {}, not -1", step, t, c, pos);
            continue;
          }
          if (pos < 0 || pos > p || !chosen.insert(pos).second) {
            return fmt::format("step {} token {} (position {}): slot {} holds {}", step, t, p, c,
                               pos);
          }
        }
        for (int64_t a : chosen) {
          double mag_a = 0;
          const double score_a = index_score(id, p, a, &mag_a);
          for (int64_t b = 0; b <= p; ++b) {
            if (chosen.count(b)) continue;
            double mag_b = 0;
            const double score_b = index_score(id, p, b, &mag_b);
            if (score_a + 1e-4 * (mag_a + mag_b) < score_b) {
              return fmt::format("step {} token {} (position {}): chose {} (score {}) over {} ({})",
                                 step, t, p, a, score_a, b, score_b);
            }
          }
        }
      }
      computed[static_cast<size_t>(id)] += n;
    }
  }
  return "";
}

}  // namespace ctxpar::sfa_test
