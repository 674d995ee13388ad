#include "attention_oracle.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numbers>
#include <numeric>

#include "ctxpar/attention/attention_config.h"
#include "ctxpar/attention/context_parallel/dcp_metadata_builder.h"
#include "ctxpar/attention/context_parallel/gqa_dcp_attention.h"
#include "ctxpar/attention/context_parallel/mla_dcp_attention.h"
#include "ctxpar/comm/inprocess_communicator.h"
#include "ctxpar/core/error.h"
#include "ctxpar/core/fp8.h"
#include "ctxpar/core/half.h"
#include "ctxpar/kernels/linear.h"

namespace ctxpar::testing {
namespace {

constexpr double kRopeTheta = 10000.0;

Tensor random_tensor(const Shape& shape, double scale, std::mt19937& rng) {
  Tensor t = Tensor::empty(shape, DType::kF32);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<float>()[i] = static_cast<float>(scale) * dist(rng);
  return t;
}

// Rotates pairs of x[t, h, offset:offset+dim] by position·θ_i. Rotate-half pairs (i, i+dim/2)
// (Llama), interleaved pairs (2i, 2i+1) (DeepSeek MLA). Computed in double.
void rope_inplace(double* x, int64_t dim, int64_t pos, bool interleaved) {
  const int64_t half = dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    const double freq =
        std::pow(kRopeTheta, -2.0 * static_cast<double>(i) / static_cast<double>(dim));
    const double c = std::cos(static_cast<double>(pos) * freq),
                 s = std::sin(static_cast<double>(pos) * freq);
    const int64_t a = interleaved ? 2 * i : i, b = interleaved ? 2 * i + 1 : i + half;
    const double xa = x[a], xb = x[b];
    x[a] = xa * c - xb * s;
    x[b] = xa * s + xb * c;
  }
}

// f32 tensor [tokens, heads, >= offset + dim], rope on [offset, offset + dim) of each head.
void rope_tensor(Tensor& x, const std::vector<int64_t>& positions, int64_t offset, int64_t dim,
                 bool interleaved) {
  std::vector<double> buf(static_cast<size_t>(dim));
  for (int64_t t = 0; t < x.size(0); ++t)
    for (int64_t h = 0; h < x.size(1); ++h) {
      float* p = x.data<float>() + t * x.stride(0) + h * x.stride(1) + offset;
      for (int64_t i = 0; i < dim; ++i) buf[static_cast<size_t>(i)] = p[i];
      rope_inplace(buf.data(), dim, positions[static_cast<size_t>(t)], interleaved);
      for (int64_t i = 0; i < dim; ++i) p[i] = static_cast<float>(buf[static_cast<size_t>(i)]);
    }
}

// Rows [begin, end) of w (a view).
Tensor rows(const Tensor& w, int64_t begin, int64_t end) {
  return w.slice(0, begin, end).contiguous();
}
Tensor cols(const Tensor& w, int64_t begin, int64_t end) {
  return w.slice(1, begin, end).contiguous();
}

int64_t capacity_tokens(const Scenario& s, const RunConfig& cfg) {
  // A capacity that every N in {1, 2, 3, 4, 6, 8} divides into whole blocks (a multiple of
  // 24·B) and that holds all requests at once at any of those N, so the KV bytes per rank
  // compare exactly across N.
  const int64_t longest = *std::max_element(s.total_len.begin(), s.total_len.end());
  const int64_t per_request_blocks = (longest + cfg.block_size - 1) / cfg.block_size;
  const auto reqs = static_cast<int64_t>(s.total_len.size());
  return 24 * int64_t{cfg.block_size} * ((reqs * per_request_blocks + 23) / 24 + reqs);
}

// The layer on one rank: projections (column-parallel in, row-parallel out with the TP
// all-reduce), RoPE, and the attention impl under test.
class RankLayer {
 public:
  RankLayer(const Scenario& s, const RunConfig& cfg, int tp_rank, Communicator& tp,
            Communicator& dcp, int64_t num_blocks)
      : s_(s), tp_(tp), pool_(cfg.threads_per_rank) {
    const LayerShape& sh = s.shape;
    const int64_t hl = sh.num_heads / cfg.tp;
    const bool use_dcp = cfg.dcp > 1;
    if (sh.type == AttnType::kGqa) {
      const int64_t d = sh.head_dim;
      const int64_t kv_l = sh.num_kv_heads >= cfg.tp ? sh.num_kv_heads / cfg.tp : 1;
      const int64_t kv_first =
          sh.num_kv_heads >= cfg.tp ? tp_rank * kv_l : tp_rank / (cfg.tp / sh.num_kv_heads);
      q_ = std::make_unique<kernels::Linear>(rows(s.wq, tp_rank * hl * d, (tp_rank + 1) * hl * d));
      k_ = std::make_unique<kernels::Linear>(rows(s.wk, kv_first * d, (kv_first + kv_l) * d));
      v_ = std::make_unique<kernels::Linear>(rows(s.wv, kv_first * d, (kv_first + kv_l) * d));
      o_ = std::make_unique<kernels::Linear>(cols(s.wo, tp_rank * hl * d, (tp_rank + 1) * hl * d));
      Tensor kc = Tensor::empty({num_blocks, cfg.block_size, kv_l, d}, cfg.cache_dtype);
      Tensor vc = Tensor::empty({num_blocks, cfg.block_size, kv_l, d}, cfg.cache_dtype);
      kv_bytes_ = static_cast<int64_t>(kc.nbytes() + vc.nbytes());
      const attention::GqaDims dims{hl, kv_l, d, s.scale, cfg.k_scale, cfg.v_scale};
      if (use_dcp) {
        gqa_ = std::make_unique<attention::GqaDcpAttention>(dims, kc, vc, pool_, dcp, cfg.plan);
      } else {
        gqa_ = std::make_unique<attention::GqaAttention>(dims, kc, vc, pool_);
      }
    } else {
      const int64_t qk = sh.nope + sh.rope;
      q_ =
          std::make_unique<kernels::Linear>(rows(s.wq, tp_rank * hl * qk, (tp_rank + 1) * hl * qk));
      k_ = std::make_unique<kernels::Linear>(s.wkv_a);  // replicated
      o_ = std::make_unique<kernels::Linear>(
          cols(s.wo, tp_rank * hl * sh.v_dim, (tp_rank + 1) * hl * sh.v_dim));
      Tensor kv_b = rows(s.wkv_b, tp_rank * hl * (sh.nope + sh.v_dim),
                         (tp_rank + 1) * hl * (sh.nope + sh.v_dim));
      Tensor cache =
          Tensor::empty({num_blocks, cfg.block_size, sh.kv_lora + sh.rope}, cfg.cache_dtype);
      kv_bytes_ = static_cast<int64_t>(cache.nbytes());
      attention::MlaDims dims;
      dims.num_heads = hl;
      dims.kv_lora_rank = sh.kv_lora;
      dims.qk_nope_head_dim = sh.nope;
      dims.qk_rope_head_dim = sh.rope;
      dims.v_head_dim = sh.v_dim;
      dims.scale = s.scale;
      dims.max_context_chunk = cfg.max_context_chunk;
      if (use_dcp) {
        mla_ =
            std::make_unique<attention::MlaDcpAttention>(dims, cache, kv_b, pool_, dcp, cfg.plan);
      } else {
        mla_ = std::make_unique<attention::MlaAttention>(dims, cache, kv_b, pool_);
      }
    }
  }

  int64_t kv_bytes() const { return kv_bytes_; }

  // x [tokens, hidden] → [tokens, hidden], identical on every TP rank.
  Tensor forward(const attention::AttentionMetadata& md, const Tensor& x,
                 const std::vector<int64_t>& positions) {
    const LayerShape& sh = s_.shape;
    const int64_t tokens = x.size(0);
    Tensor attn;
    if (gqa_) {
      const int64_t hl = gqa_->dims().num_heads, kvl = gqa_->dims().num_kv_heads, d = sh.head_dim;
      Tensor q = q_->forward(x).view({tokens, hl, d});
      Tensor k = k_->forward(x).view({tokens, kvl, d});
      Tensor v = v_->forward(x).view({tokens, kvl, d});
      rope_tensor(q, positions, 0, d, false);
      rope_tensor(k, positions, 0, d, false);
      attn = Tensor::empty({tokens, hl, d}, DType::kF32);
      attn.fill_bytes(0xff);  // poison: every element must be written
      gqa_->forward(md, q, k, v, attn);
    } else {
      const int64_t hl = mla_->dims().num_heads, qk = sh.nope + sh.rope;
      Tensor q = q_->forward(x).view({tokens, hl, qk});
      Tensor kv_a = k_->forward(x);  // [tokens, kv_lora + rope]
      rope_tensor(q, positions, sh.nope, sh.rope, true);
      Tensor k_pe =
          kv_a.slice(1, sh.kv_lora, sh.kv_lora + sh.rope).contiguous().view({tokens, 1, sh.rope});
      rope_tensor(k_pe, positions, 0, sh.rope, true);
      attn = Tensor::empty({tokens, hl, sh.v_dim}, DType::kF32);
      attn.fill_bytes(0xff);
      mla_->forward(md, q, kv_a.slice(1, 0, sh.kv_lora).contiguous(), k_pe.view({tokens, sh.rope}),
                    attn);
    }
    Tensor out = o_->forward(attn.view({tokens, -1}));
    tp_.all_reduce(out);
    return out;
  }

 private:
  const Scenario& s_;
  Communicator& tp_;
  ThreadPool pool_;
  std::unique_ptr<kernels::Linear> q_, k_, v_, o_;
  std::unique_ptr<attention::GqaAttention> gqa_;
  std::unique_ptr<attention::MlaAttention> mla_;
  int64_t kv_bytes_ = 0;
};

}  // namespace

Scenario make_scenario(const LayerShape& shape, std::mt19937& rng, int num_requests,
                       int64_t max_prompt) {
  Scenario s;
  s.shape = shape;
  std::uniform_int_distribution<int64_t> prompt_len(1, max_prompt);
  std::uniform_int_distribution<int64_t> decode_len(1, 6);
  std::uniform_int_distribution<int> join(0, 3);
  std::vector<int64_t> prompt(static_cast<size_t>(num_requests));
  std::vector<int> joins(static_cast<size_t>(num_requests));
  for (int i = 0; i < num_requests; ++i) {
    prompt[static_cast<size_t>(i)] = i == 0 ? max_prompt : prompt_len(rng);
    if (i == 1) prompt[1] = 1 + static_cast<int64_t>(rng() % 3);  // shorter than most N
    s.total_len.push_back(prompt[static_cast<size_t>(i)] + decode_len(rng));
    joins[static_cast<size_t>(i)] = i == 0 ? 0 : join(rng);
  }
  std::vector<int64_t> computed(static_cast<size_t>(num_requests), 0);
  for (int step = 0;; ++step) {
    ScheduledStep decodes, prefills;
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
    ScheduledStep all = decodes;
    all.insert(all.end(), prefills.begin(), prefills.end());
    for (const auto& [id, n] : all) computed[static_cast<size_t>(id)] += n;
    s.steps.push_back(std::move(all));
  }
  for (int64_t len : s.total_len) s.inputs.push_back(random_tensor({len, shape.hidden}, 1.0, rng));
  const double in_scale = 1.0 / std::sqrt(static_cast<double>(shape.hidden));
  if (shape.type == AttnType::kGqa) {
    const int64_t d = shape.head_dim;
    s.wq = random_tensor({shape.num_heads * d, shape.hidden}, in_scale, rng);
    s.wk = random_tensor({shape.num_kv_heads * d, shape.hidden}, in_scale, rng);
    s.wv = random_tensor({shape.num_kv_heads * d, shape.hidden}, in_scale, rng);
    s.wo = random_tensor({shape.hidden, shape.num_heads * d},
                         1.0 / std::sqrt(double(shape.num_heads * d)), rng);
    s.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  } else {
    const int64_t qk = shape.nope + shape.rope;
    s.wq = random_tensor({shape.num_heads * qk, shape.hidden}, in_scale, rng);
    s.wkv_a = random_tensor({shape.kv_lora + shape.rope, shape.hidden}, in_scale, rng);
    s.wkv_b = random_tensor({shape.num_heads * (shape.nope + shape.v_dim), shape.kv_lora},
                            1.0 / std::sqrt(static_cast<double>(shape.kv_lora)), rng);
    s.wo = random_tensor({shape.hidden, shape.num_heads * shape.v_dim},
                         1.0 / std::sqrt(double(shape.num_heads * shape.v_dim)), rng);
    s.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(qk)));
  }
  return s;
}

RunResult run_layer_rank(Communicator& world, const Scenario& s, const RunConfig& cfg) {
  const LayerShape& sh = s.shape;
  if (sh.type == AttnType::kGqa) {
    attention::validate_gqa_parallel(sh.num_heads, sh.num_kv_heads, cfg.tp, cfg.dcp);
  } else {
    attention::validate_mla_parallel(sh.num_heads, cfg.tp, cfg.dcp);
  }
  CTXPAR_CHECK(world.size() == cfg.tp, "oracle run for T={} on a world of {}", cfg.tp,
               world.size());
  const kv::DcpLayout layout(cfg.dcp, cfg.block_size, cfg.interleave);
  const int64_t capacity = capacity_tokens(s, cfg);
  const int64_t num_blocks = capacity / (int64_t{cfg.block_size} * cfg.dcp);
  const std::vector<test_support::PlannedStep> plan = test_support::plan_block_tables(
      s.total_len, s.steps, layout, static_cast<int32_t>(num_blocks),
      static_cast<uint32_t>(capacity));

  const int rank = world.rank();
  std::unique_ptr<Communicator> dcp = world.split(rank / cfg.dcp, rank);
  RankLayer layer(s, cfg, rank, world, *dcp, num_blocks);
  std::unique_ptr<attention::AttentionMetadataBuilder> builder;
  if (cfg.dcp > 1) {
    builder = std::make_unique<attention::DcpMetadataBuilder>(layout, dcp->rank());
  } else {
    builder = std::make_unique<attention::AttentionMetadataBuilder>(cfg.block_size);
  }
  RunResult mine;
  mine.kv_bytes_per_rank = layer.kv_bytes();
  for (const test_support::PlannedStep& step : plan) {
    const attention::AttentionMetadata md = builder->build(step.requests);
    Tensor x = Tensor::empty({md.common.num_tokens, sh.hidden}, DType::kF32);
    std::vector<int64_t> positions;
    int64_t t = 0;
    for (size_t i = 0; i < step.requests.size(); ++i) {
      const auto& r = step.requests[i];
      for (int64_t j = 0; j < r.num_scheduled; ++j, ++t) {
        const int64_t p = r.num_computed + j;
        positions.push_back(p);
        x.select(0, t).copy_from(s.inputs[static_cast<size_t>(step.request_ids[i])].select(0, p));
      }
    }
    mine.outputs.push_back(layer.forward(md, x, positions));
  }
  return mine;
}

RunResult run_layer(const Scenario& s, const RunConfig& cfg) {
  std::vector<RunResult> per_rank(static_cast<size_t>(cfg.tp));
  run_inprocess_ranks(cfg.tp, [&](Communicator& world) {
    per_rank[static_cast<size_t>(world.rank())] = run_layer_rank(world, s, cfg);
  });
  for (int r = 1; r < cfg.tp; ++r) {
    for (size_t i = 0; i < per_rank[0].outputs.size(); ++i) {
      CTXPAR_CHECK(relative_error(per_rank[static_cast<size_t>(r)].outputs[i],
                                  per_rank[0].outputs[i]) == 0.0,
                   "rank {} output of step {} differs from rank 0", r, i);
    }
  }
  return per_rank[0];
}

std::vector<Tensor> reference_outputs(const Scenario& s, DType kv_dtype, float k_scale,
                                      float v_scale, bool round_weights) {
  const LayerShape& sh = s.shape;
  auto mat = [](const Tensor& w, const double* x, int64_t row) {  // (w · x)[row]
    double acc = 0;
    const float* wr = w.data<float>() + row * w.size(1);
    for (int64_t i = 0; i < w.size(1); ++i) acc += static_cast<double>(wr[i]) * x[i];
    return acc;
  };
  // Per request and position: per-head query, key and value vectors in double.
  struct Proj {
    std::vector<std::vector<double>> q, k, v;  // [pos][head * dim]
  };
  const int64_t h = sh.num_heads;
  const bool gqa = sh.type == AttnType::kGqa;
  const int64_t qk = gqa ? sh.head_dim : sh.nope + sh.rope;
  const int64_t vd = gqa ? sh.head_dim : sh.v_dim;
  const int64_t kv_heads = gqa ? sh.num_kv_heads : h;
  std::vector<Proj> proj(s.total_len.size());
  for (size_t i = 0; i < s.total_len.size(); ++i) {
    for (int64_t p = 0; p < s.total_len[i]; ++p) {
      std::vector<double> x(static_cast<size_t>(sh.hidden));
      for (int64_t e = 0; e < sh.hidden; ++e)
        x[static_cast<size_t>(e)] = s.inputs[i].item_as_double({p, e});
      std::vector<double> q(static_cast<size_t>(h * qk)), k(static_cast<size_t>(kv_heads * qk)),
          v(static_cast<size_t>(kv_heads * vd));
      for (int64_t r = 0; r < h * qk; ++r) q[static_cast<size_t>(r)] = mat(s.wq, x.data(), r);
      if (gqa) {
        for (int64_t r = 0; r < kv_heads * qk; ++r)
          k[static_cast<size_t>(r)] = mat(s.wk, x.data(), r);
        for (int64_t r = 0; r < kv_heads * vd; ++r)
          v[static_cast<size_t>(r)] = mat(s.wv, x.data(), r);
        for (int64_t hh = 0; hh < h; ++hh)
          rope_inplace(&q[static_cast<size_t>(hh * qk)], qk, p, false);
        for (int64_t hh = 0; hh < kv_heads; ++hh)
          rope_inplace(&k[static_cast<size_t>(hh * qk)], qk, p, false);
        if (kv_dtype == DType::kBF16) {
          for (std::vector<double>* kv : {&q, &k, &v}) {
            for (double& e : *kv) e = bf16::to_f32(bf16::from_f32(static_cast<float>(e)));
          }
        } else if (kv_dtype == DType::kF8E4M3) {
          for (auto [kv, scale] : {std::pair{&k, k_scale}, std::pair{&v, v_scale}}) {
            for (double& e : *kv)
              e = fp8_e4m3::to_f32(fp8_e4m3::from_f32(static_cast<float>(e) / scale)) *
                  double{scale};
          }
        }
      } else {
        std::vector<double> kv_a(static_cast<size_t>(sh.kv_lora + sh.rope));
        for (int64_t r = 0; r < sh.kv_lora + sh.rope; ++r)
          kv_a[static_cast<size_t>(r)] = mat(s.wkv_a, x.data(), r);
        rope_inplace(&kv_a[static_cast<size_t>(sh.kv_lora)], sh.rope, p, true);
        for (int64_t hh = 0; hh < h; ++hh) {
          rope_inplace(&q[static_cast<size_t>(hh * qk + sh.nope)], sh.rope, p, true);
          for (int64_t n = 0; n < sh.nope + sh.v_dim; ++n) {
            const double val = mat(s.wkv_b, kv_a.data(), hh * (sh.nope + sh.v_dim) + n);
            if (n < sh.nope) {
              k[static_cast<size_t>(hh * qk + n)] = val;
            } else {
              v[static_cast<size_t>(hh * vd + n - sh.nope)] = val;
            }
          }
          for (int64_t n = 0; n < sh.rope; ++n) {
            k[static_cast<size_t>(hh * qk + sh.nope + n)] =
                kv_a[static_cast<size_t>(sh.kv_lora + n)];
          }
        }
      }
      proj[i].q.push_back(std::move(q));
      proj[i].k.push_back(std::move(k));
      proj[i].v.push_back(std::move(v));
    }
  }
  std::vector<Tensor> outputs;
  std::vector<int64_t> computed(s.total_len.size(), 0);
  for (const ScheduledStep& step : s.steps) {
    int64_t tokens = 0;
    for (const auto& item : step) tokens += item.second;
    Tensor out = Tensor::empty({tokens, sh.hidden}, DType::kF32);
    int64_t t = 0;
    for (const auto& [id, n] : step) {
      const Proj& pr = proj[static_cast<size_t>(id)];
      for (int64_t j = 0; j < n; ++j, ++t) {
        const int64_t p = computed[static_cast<size_t>(id)] + j;
        std::vector<double> attn(static_cast<size_t>(h * vd), 0.0);
        for (int64_t hh = 0; hh < h; ++hh) {
          const int64_t g = gqa ? hh / (h / kv_heads) : hh;
          std::vector<double> scores(static_cast<size_t>(p + 1));
          double mx = -INFINITY;
          for (int64_t sidx = 0; sidx <= p; ++sidx) {
            double dot = 0;
            for (int64_t e = 0; e < qk; ++e) {
              dot += pr.q[static_cast<size_t>(p)][static_cast<size_t>(hh * qk + e)] *
                     pr.k[static_cast<size_t>(sidx)][static_cast<size_t>(g * qk + e)];
            }
            scores[static_cast<size_t>(sidx)] = dot * s.scale;
            mx = std::max(mx, scores[static_cast<size_t>(sidx)]);
          }
          double denom = 0;
          for (double& sc : scores) denom += (sc = std::exp(sc - mx));
          if (round_weights) {  // the weights of P·V in base 2 from a whole-number max
            const double m2 = std::ceil(mx * std::numbers::log2e);
            const double shift = std::exp2(mx * std::numbers::log2e - m2);
            for (double& sc : scores) {
              sc = bf16::to_f32(bf16::from_f32(static_cast<float>(sc * shift))) / shift;
            }
          }
          for (int64_t sidx = 0; sidx <= p; ++sidx) {
            for (int64_t e = 0; e < vd; ++e) {
              attn[static_cast<size_t>(hh * vd + e)] +=
                  scores[static_cast<size_t>(sidx)] / denom *
                  pr.v[static_cast<size_t>(sidx)][static_cast<size_t>(g * vd + e)];
            }
          }
        }
        for (int64_t e = 0; e < sh.hidden; ++e) {
          out.data<float>()[t * sh.hidden + e] = static_cast<float>(mat(s.wo, attn.data(), e));
        }
      }
      computed[static_cast<size_t>(id)] += n;
    }
    outputs.push_back(std::move(out));
  }
  return outputs;
}

}  // namespace ctxpar::testing
