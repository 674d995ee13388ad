#include "ctxpar/kernels/topk_merge.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "ctxpar/core/error.h"
#include "ctxpar/core/half.h"

namespace ctxpar::kernels {
namespace {

void check_merge_args(const char* op, const Tensor& scores, const Tensor& positions, int64_t k,
                      const Tensor& indices, const Tensor* values) {
  CTXPAR_CHECK(scores.defined() && scores.ndim() == 2 && scores.dtype() == DType::kF32 &&
                   (scores.stride(1) == 1 || scores.size(1) <= 1),
               "{}: candidate scores must be float32 [rows, m] with a contiguous last dim, got {}",
               op, scores.defined() ? scores.describe() : "an undefined tensor");
  CTXPAR_CHECK(positions.defined() && positions.dtype() == DType::kI32 &&
                   positions.shape() == scores.shape() &&
                   (positions.stride(1) == 1 || positions.size(1) <= 1),
               "{}: candidate positions must be int32 {} like the scores, got {}", op,
               shape_str(scores.shape()),
               positions.defined() ? positions.describe() : "an undefined tensor");
  CTXPAR_CHECK(k >= 0, "{}: k = {} must be >= 0", op, k);
  const int64_t rows = scores.size(0);
  CTXPAR_CHECK(indices.defined() && indices.ndim() == 2 && indices.dtype() == DType::kI32 &&
                   indices.size(0) == rows && indices.size(1) == k,
               "{}: indices must be int32 [{}, {}], got {}", op, rows, k,
               indices.defined() ? indices.describe() : "an undefined tensor");
  CTXPAR_CHECK(values == nullptr ||
                   (values->defined() && values->ndim() == 2 && values->dtype() == DType::kF32 &&
                    values->size(0) == rows && values->size(1) == k),
               "{}: values must be float32 [{}, {}], got {}", op, rows, k,
               values && values->defined() ? values->describe() : "an undefined tensor");
}

int32_t position_at(const Tensor& positions, int64_t r, int64_t c) {
  const int32_t p = positions.data<int32_t>()[r * positions.stride(0) + c];
  CTXPAR_CHECK(p >= -1, "topk_merge: candidate position [{}, {}] = {}; valid: -1 or >= 0", r, c, p);
  return p;
}

// topk.h's order as an unsigned key: NaN lowest, −0 == +0, larger floats larger keys.
uint32_t order_key(float v) {
  if (v != v) return 0;
  if (v == 0) v = 0;
  const uint32_t bits = f32_bits(v);
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

// Larger is better: the score key above, then the inverted position (lower wins ties).
uint64_t candidate(float score, int32_t position) {
  return (static_cast<uint64_t>(order_key(score)) << 32) |
         (0xffffffffu - static_cast<uint32_t>(position));
}

int32_t candidate_position(uint64_t c) {
  return static_cast<int32_t>(0xffffffffu - static_cast<uint32_t>(c & 0xffffffffu));
}

void write_row(Tensor& indices, Tensor* values, int64_t r, int64_t k, int64_t used,
               const std::function<std::pair<int32_t, float>(int64_t)>& pick) {
  for (int64_t j = 0; j < k; ++j) {
    const auto [pos, score] =
        j < used ? pick(j) : std::pair{int32_t{-1}, -std::numeric_limits<float>::infinity()};
    indices.data<int32_t>()[r * indices.stride(0) + j * indices.stride(1)] = pos;
    if (values != nullptr) {
      values->data<float>()[r * values->stride(0) + j * values->stride(1)] = score;
    }
  }
}

}  // namespace

void topk_merge(const Tensor& scores, const Tensor& positions, int64_t k, Tensor& indices,
                Tensor* values) {
  check_merge_args("topk_merge", scores, positions, k, indices, values);
  struct Candidate {
    uint64_t key;  // order: larger is better
    int64_t column;
    bool operator>(const Candidate& o) const { return key > o.key; }
  };
  thread_local std::vector<Candidate> candidates;
  for (int64_t r = 0; r < scores.size(0); ++r) {
    const float* row = scores.data<float>() + r * scores.stride(0);
    candidates.clear();
    for (int64_t c = 0; c < scores.size(1); ++c) {
      const int32_t p = position_at(positions, r, c);
      if (p >= 0) candidates.push_back({candidate(row[c], p), c});
    }
    const int64_t used = std::min<int64_t>(k, static_cast<int64_t>(candidates.size()));
    const auto middle = candidates.begin() + used;
    if (middle != candidates.end()) {
      std::nth_element(candidates.begin(), middle, candidates.end(), std::greater<>());
    }
    std::sort(candidates.begin(), middle, std::greater<>());
    write_row(indices, values, r, k, used, [&](int64_t j) {
      const Candidate& c = candidates[static_cast<size_t>(j)];
      return std::pair{candidate_position(c.key), row[c.column]};
    });
  }
}

void topk_merge_reference(const Tensor& scores, const Tensor& positions, int64_t k, Tensor& indices,
                          Tensor* values) {
  check_merge_args("topk_merge_reference", scores, positions, k, indices, values);
  for (int64_t r = 0; r < scores.size(0); ++r) {
    std::vector<std::pair<double, int32_t>> cands;
    for (int64_t c = 0; c < scores.size(1); ++c) {
      const int32_t p = position_at(positions, r, c);
      if (p >= 0) cands.emplace_back(scores.item_as_double({r, c}), p);
    }
    std::sort(cands.begin(), cands.end(), [](const auto& a, const auto& b) {
      const bool na = std::isnan(a.first), nb = std::isnan(b.first);
      if (na != nb) return nb;  // numbers before NaN
      if (!na && a.first != b.first) return a.first > b.first;
      return a.second < b.second;
    });
    const int64_t used = std::min<int64_t>(k, static_cast<int64_t>(cands.size()));
    write_row(indices, values, r, k, used, [&](int64_t j) {
      const auto& c = cands[static_cast<size_t>(j)];
      return std::pair{c.second, static_cast<float>(c.first)};
    });
  }
}

}  // namespace ctxpar::kernels
