#include "ctxpar/kernels/linear_matmul_cache.h"

#include <omp.h>
#include <dnnl.hpp>

#include <algorithm>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ctxpar/core/cpu_features.h"
#include "ctxpar/core/error.h"

namespace ctxpar::kernels::detail {
namespace {

using dnnl::memory;

const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// One stream per thread: streams are cheap, and sharing one across threads is not allowed.
dnnl::stream& thread_stream() {
  thread_local dnnl::stream stream(cpu_engine());
  return stream;
}

memory::data_type to_dnnl(DType t) {
  switch (t) {
    case DType::kF32:
      return memory::data_type::f32;
    case DType::kBF16:
      return memory::data_type::bf16;
    case DType::kI8:
      return memory::data_type::s8;
    default:
      CTXPAR_FAIL(
          "oneDNN matmul operand dtype {} is not supported (valid: float32, bfloat16, int8)",
          dtype_name(t));
  }
}

dnnl::matmul::primitive_desc make_primitive_desc(const MatmulShape& s) {
  const memory::desc a_md({s.m, s.k}, to_dnnl(s.a_type), {s.lda, 1});
  // W [n, k] row-major is the [k, n] operand with strides (1, ldw): no copy, no reorder.
  const memory::desc w_md({s.k, s.n}, to_dnnl(s.w_type), {1, s.ldw});
  const memory::desc c_md({s.m, s.n}, memory::data_type::f32, {s.ldc, 1});
  const memory::desc bias_md =
      s.has_bias ? memory::desc({1, s.n}, memory::data_type::f32, {s.n, 1}) : memory::desc();
  dnnl::primitive_attr attr;
  // User scratchpad: each call brings its own, so concurrent calls never share one.
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (s.has_column_scales) attr.set_output_scales(1 << 1, {DNNL_RUNTIME_F32_VAL});
  const dnnl::matmul::desc desc = s.has_bias ? dnnl::matmul::desc(a_md, w_md, bias_md, c_md)
                                             : dnnl::matmul::desc(a_md, w_md, c_md);
  return dnnl::matmul::primitive_desc(desc, attr, cpu_engine());
}

std::string shape_text(const MatmulShape& s) {
  return fmt::format("A {}[{}, {}] (row stride {}) x W {}[{}, {}] (row stride {}) -> C [{}, {}]",
                     dtype_name(s.a_type), s.m, s.k, s.lda, dtype_name(s.w_type), s.n, s.k, s.ldw,
                     s.m, s.n);
}

}  // namespace

SingleThreadedOneDnn::SingleThreadedOneDnn() : saved_(omp_get_max_threads()) {
  omp_set_num_threads(1);
}
SingleThreadedOneDnn::~SingleThreadedOneDnn() {
  omp_set_num_threads(saved_);
}

bool onednn_matmul_supported(DType a_type, DType w_type) {
  const SingleThreadedOneDnn single;
  MatmulShape probe;
  probe.m = 4;
  probe.k = 64;
  probe.n = 32;
  probe.lda = 64;
  probe.ldw = 64;
  probe.ldc = 32;
  probe.a_type = a_type;
  probe.w_type = w_type;
  try {
    const auto pd = make_primitive_desc(probe);
    // Reference implementations are correct but orders of magnitude slower than ours.
    return std::string(pd.impl_info_str()).find("ref") == std::string::npos;
  } catch (const dnnl::error&) {
    return false;
  }
}

bool bf16_dot_fast() {
  static const bool fast =
      cpu_features().avx512_bf16 && bf16_dot_to_fma_mac_ratio() >= kFastBf16DotRatio;
  return fast;
}

bool onednn_native_bf16() {
  static const bool native = cpu_features().avx512_bf16 && active_isa() >= Isa::kAvx512 &&
                             onednn_matmul_supported(DType::kBF16, DType::kBF16) &&
                             (cpu_features().amx_bf16 || bf16_dot_fast());
  return native;
}

bool onednn_int8_matmul_exact() {
  static const bool exact = [] {
    if (!onednn_matmul_supported(DType::kI8, DType::kI8)) return false;
    // 127·127 everywhere maximizes every pair sum; alternate signs in the second column.
    constexpr int64_t k = 64, n = 2;
    std::vector<int8_t> a(k, 127), w(n * k);
    for (int64_t i = 0; i < k; ++i) {
      w[i] = 127;
      w[k + i] = i % 2 ? 127 : -127;
    }
    std::vector<float> c(n, 0.0f);
    MatmulShape s;
    s.m = 1;
    s.k = k;
    s.n = n;
    s.lda = k;
    s.ldw = k;
    s.ldc = n;
    s.a_type = DType::kI8;
    s.w_type = DType::kI8;
    MatmulCache cache(1);
    try {
      cache.run(s, a.data(), w.data(), nullptr, nullptr, c.data());
    } catch (const Error&) {
      return false;
    }
    return c[0] == static_cast<float>(k * 127 * 127) && c[1] == 0.0f;
  }();
  return exact;
}

struct MatmulCache::State {
  struct Entry {
    MatmulShape shape;
    std::shared_ptr<const dnnl::matmul> primitive;
    size_t scratchpad_bytes;
  };
  int capacity;
  std::mutex mu;
  std::list<Entry> entries;  // most recently used first
};

MatmulCache::MatmulCache(int capacity) : state_(std::make_unique<State>()) {
  state_->capacity = capacity;
}
MatmulCache::~MatmulCache() = default;

void MatmulCache::run(const MatmulShape& shape, const void* a, const void* w, const float* bias,
                      const float* column_scales, float* c) const {
  CTXPAR_CHECK(shape.has_bias == (bias != nullptr) &&
                   shape.has_column_scales == (column_scales != nullptr) &&
                   !(shape.has_bias && shape.has_column_scales),
               "matmul {}: bias/scales pointers do not match the shape's flags, or both are set",
               shape_text(shape));
  const SingleThreadedOneDnn single;
  std::shared_ptr<const dnnl::matmul> primitive;
  size_t scratchpad_bytes = 0;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    auto& entries = state_->entries;
    for (auto it = entries.begin(); it != entries.end(); ++it) {
      if (it->shape == shape) {
        entries.splice(entries.begin(), entries, it);
        primitive = it->primitive;
        scratchpad_bytes = it->scratchpad_bytes;
        break;
      }
    }
    if (!primitive) {
      try {
        const auto pd = make_primitive_desc(shape);
        primitive = std::make_shared<const dnnl::matmul>(pd);
        scratchpad_bytes = pd.scratchpad_desc().get_size();
      } catch (const dnnl::error& e) {
        CTXPAR_FAIL("oneDNN cannot build matmul {}: {}", shape_text(shape), e.what());
      }
      entries.push_front({shape, primitive, scratchpad_bytes});
      if (static_cast<int>(entries.size()) > state_->capacity) entries.pop_back();
    }
  }

  // Never empty, so the scratchpad memory object always wraps a real pointer.
  scratchpad_bytes = std::max<size_t>(scratchpad_bytes, 64);
  thread_local std::vector<uint8_t> scratchpad;
  if (scratchpad.size() < scratchpad_bytes) scratchpad.resize(scratchpad_bytes);

  const auto& engine = cpu_engine();
  // Memory objects only wrap the caller's pointers; the descs must match the primitive's.
  const memory::desc a_md({shape.m, shape.k}, to_dnnl(shape.a_type), {shape.lda, 1});
  const memory::desc w_md({shape.k, shape.n}, to_dnnl(shape.w_type), {1, shape.ldw});
  const memory::desc c_md({shape.m, shape.n}, memory::data_type::f32, {shape.ldc, 1});
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, memory(a_md, engine, const_cast<void*>(a))},
      {DNNL_ARG_WEIGHTS, memory(w_md, engine, const_cast<void*>(w))},
      {DNNL_ARG_DST, memory(c_md, engine, c)},
      {DNNL_ARG_SCRATCHPAD, memory(memory::desc({static_cast<memory::dim>(scratchpad_bytes)},
                                                memory::data_type::u8, memory::format_tag::a),
                                   engine, scratchpad.data())},
  };
  if (bias != nullptr) {
    args.emplace(DNNL_ARG_BIAS,
                 memory(memory::desc({1, shape.n}, memory::data_type::f32, {shape.n, 1}), engine,
                        const_cast<float*>(bias)));
  }
  if (column_scales != nullptr) {
    args.emplace(DNNL_ARG_ATTR_OUTPUT_SCALES,
                 memory(memory::desc({shape.n}, memory::data_type::f32, memory::format_tag::a),
                        engine, const_cast<float*>(column_scales)));
  }
  try {
    auto& stream = thread_stream();
    primitive->execute(stream, args);
    stream.wait();
  } catch (const dnnl::error& e) {
    CTXPAR_FAIL("oneDNN matmul {} failed: {}", shape_text(shape), e.what());
  }
}

}  // namespace ctxpar::kernels::detail
