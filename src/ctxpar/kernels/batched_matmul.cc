#include "ctxpar/kernels/batched_matmul.h"

#include <map>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#include <vector>

#include "ctxpar/core/cpu_features.h"
#include "ctxpar/core/error.h"
#include "ctxpar/core/half.h"
#include "ctxpar/kernels/linear_gemv.h"
#include "ctxpar/kernels/linear_matmul_cache.h"

namespace ctxpar::kernels {
namespace {

void check_shapes(const Tensor& a, const Tensor& w, const Tensor& c) {
  CTXPAR_CHECK(a.ndim() == 3 && w.ndim() == 3 && c.ndim() == 3,
               "batched_matmul needs 3-D a, w, c; got {}, {}, {}", a.describe(), w.describe(),
               c.describe());
  CTXPAR_CHECK(a.size(0) == w.size(0) && a.size(0) == c.size(0) && a.size(2) == w.size(1) &&
                   a.size(1) == c.size(1) && w.size(2) == c.size(2),
               "batched_matmul shapes do not chain: a {} · w {} → c {}", a.describe(), w.describe(),
               c.describe());
  CTXPAR_CHECK(a.dtype() == DType::kF32 && c.dtype() == DType::kF32,
               "batched_matmul: a and c must be float32, got {} and {}", a.describe(),
               c.describe());
  CTXPAR_CHECK(w.dtype() == DType::kF32 || w.dtype() == DType::kBF16,
               "batched_matmul: w must be float32 or bfloat16, got {}", w.describe());
}

dnnl::memory::desc md(const Tensor& t, dnnl::memory::data_type dt) {
  return dnnl::memory::desc({t.size(0), t.size(1), t.size(2)}, dt,
                            {t.stride(0), t.stride(1), t.stride(2)});
}

dnnl::memory::data_type dnnl_type(DType d) {
  return d == DType::kBF16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
}

using Key = std::tuple<std::vector<int64_t>, int>;

Key make_key(const Tensor& a, const Tensor& w, const Tensor& c) {
  std::vector<int64_t> k;
  for (const Tensor* t : {&a, &w, &c}) {
    k.insert(k.end(), t->shape().begin(), t->shape().end());
    k.insert(k.end(), t->strides().begin(), t->strides().end());
  }
  return {k, static_cast<int>(w.dtype())};
}

struct Context {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::map<Key, dnnl::matmul> primitives;
};

// One per thread: ranks are threads and each issues its own matmuls.
Context& context() {
  thread_local Context ctx;
  return ctx;
}

// a and w as oneDNN runs them: with bf16 w, a rounded to bf16; where the CPU has no bf16 dot
// products (detail::onednn_native_bf16) the same math in f32 — products of bf16 values are
// exact in f32, and the sums accumulate in f32 either way.
std::pair<Tensor, Tensor> operands(const Tensor& a, const Tensor& w) {
  if (w.dtype() != DType::kBF16) return {a, w};
  Tensor a_in = a.to(DType::kBF16);  // oneDNN wants matching src/weights
  if (detail::onednn_native_bf16()) return {a_in, w};
  return {a_in.to(DType::kF32), w.to(DType::kF32)};
}

// One oneDNN matmul on the calling thread (operands already converted).
void run_matmul(const Tensor& a_in, const Tensor& w_in, Tensor& c) {
  Context& ctx = context();
  const Key key = make_key(a_in, w_in, c);
  auto it = ctx.primitives.find(key);
  if (it == ctx.primitives.end()) {
    const auto a_md = md(a_in, dnnl_type(a_in.dtype()));
    const auto w_md = md(w_in, dnnl_type(w_in.dtype()));
    const auto c_md = md(c, dnnl::memory::data_type::f32);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, w_md, c_md), ctx.engine);
    it = ctx.primitives.emplace(key, dnnl::matmul(pd)).first;
  }
  const auto a_md = md(a_in, dnnl_type(a_in.dtype()));
  const auto w_md = md(w_in, dnnl_type(w_in.dtype()));
  const auto c_md = md(c, dnnl::memory::data_type::f32);
  dnnl::memory a_mem(a_md, ctx.engine, const_cast<void*>(a_in.raw()));
  dnnl::memory w_mem(w_md, ctx.engine, const_cast<void*>(w_in.raw()));
  dnnl::memory c_mem(c_md, ctx.engine, c.raw());
  it->second.execute(ctx.stream,
                     {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, w_mem}, {DNNL_ARG_DST, c_mem}});
  ctx.stream.wait();
}

// Decode-sized products over a bf16 weight go to the GEMVs (linear_gemv.h), which stream w at
// near the read bandwidth: oneDNN reads it far slower at M = 1 and, on CPUs without bf16 dot
// products, converts all of w to f32 on every call. w must have one unit-stride dimension:
// stride(1) == 1 is the GEMV's [n, k] rows (W_UV), stride(2) == 1 the transposed GEMV's [k, n]
// rows (W_UK).
bool takes_gemv(const Tensor& a, const Tensor& w, const Tensor& c) {
  return w.dtype() == DType::kBF16 && a.size(1) <= detail::kGemvMaxTokens &&
         (a.stride(2) == 1 || a.size(2) == 1) && (c.stride(2) == 1 || c.size(2) == 1) &&
         (w.stride(1) == 1 || w.stride(2) == 1);
}

// c[b, :, c0:c1] for b in [b0, b1) on the calling thread.
void run_gemv(const Tensor& a, const Tensor& w, Tensor& c, int64_t b0, int64_t b1, int64_t c0,
              int64_t c1) {
  const Isa isa = active_isa();
  const int64_t m = a.size(1), k = a.size(2);
  const bool rows_of_k = w.stride(1) == 1;
  thread_local std::vector<float> x;  // [m, k]: a[b] as the kernel reads it
  x.resize(static_cast<size_t>(m * k));
  for (int64_t b = b0; b < b1; ++b) {
    const float* ab = a.data<float>() + b * a.stride(0);
    const auto* wb = static_cast<const uint16_t*>(w.raw()) + b * w.stride(0);
    float* cb = c.data<float>() + b * c.stride(0);
    if (rows_of_k) {
      const detail::GemvKernel kernel = detail::gemv_kernel(isa, DType::kBF16, m);
      detail::gemv_prepare_x(kernel, DType::kBF16, ab, a.stride(1), m, k, x.data());
      detail::gemv(kernel, DType::kBF16, x.data(), m, k, wb, w.stride(2), c0, c1, nullptr, cb,
                   c.stride(1));
    } else {
      for (int64_t t = 0; t < m; ++t) {
        for (int64_t i = 0; i < k; ++i) {
          x[static_cast<size_t>(t * k + i)] = bf16::to_f32(bf16::from_f32(ab[t * a.stride(1) + i]));
        }
      }
      detail::gemv_t_bf16(isa,
                          {x.data(), m, k, wb + c0, w.stride(1), c1 - c0, cb + c0, c.stride(1)});
    }
  }
}

// c = 0 for k = 0 (empty sums), which neither the GEMVs nor oneDNN write.
bool zero_if_empty_sum(const Tensor& a, Tensor& c) {
  if (a.size(2) != 0) return false;
  for (int64_t b = 0; b < c.size(0); ++b)
    for (int64_t m = 0; m < c.size(1); ++m)
      for (int64_t n = 0; n < c.size(2); ++n)
        c.data<float>()[b * c.stride(0) + m * c.stride(1) + n * c.stride(2)] = 0.0f;
  return true;
}

}  // namespace

void batched_matmul(const Tensor& a, const Tensor& w, Tensor& c) {
  check_shapes(a, w, c);
  if (c.numel() == 0 || zero_if_empty_sum(a, c)) return;
  if (takes_gemv(a, w, c)) return run_gemv(a, w, c, 0, c.size(0), 0, c.size(2));
  const auto [a_in, w_in] = operands(a, w);
  const detail::SingleThreadedOneDnn single;
  run_matmul(a_in, w_in, c);
}

void batched_matmul(const Tensor& a, const Tensor& w, Tensor& c, ThreadPool& pool) {
  check_shapes(a, w, c);
  if (c.numel() == 0 || zero_if_empty_sum(a, c)) return;
  const int threads = pool.num_threads();
  const int64_t batch = c.size(0), n = c.size(2);
  if (takes_gemv(a, w, c)) {
    if (batch >= threads) {
      pool.parallel_for(batch, 1,
                        [&](int64_t b0, int64_t b1, int) { run_gemv(a, w, c, b0, b1, 0, n); });
    } else {
      // Columns in whole 64-column tiles, so every task streams whole cache lines of w.
      const int64_t tiles = (n + 63) / 64;
      pool.parallel_for(tiles, 1, [&](int64_t t0, int64_t t1, int) {
        run_gemv(a, w, c, 0, batch, t0 * 64, std::min(n, t1 * 64));
      });
    }
    return;
  }
  const auto [a_in, w_in] = operands(a, w);
  if (threads == 1 || (batch == 1 && n < 128)) {
    const detail::SingleThreadedOneDnn single;
    run_matmul(a_in, w_in, c);
    return;
  }
  // Batches split evenly, or the N columns of a small batch (MLA's kv_b expansion is one).
  const bool by_batch = batch >= threads;
  const int64_t extent = by_batch ? batch : n;
  const int64_t tasks = std::min<int64_t>(threads, extent);
  pool.run(tasks, [&](int64_t task, int) {
    const int64_t b = extent * task / tasks, e = extent * (task + 1) / tasks;
    const detail::SingleThreadedOneDnn single;
    Tensor c_part = by_batch ? c.slice(0, b, e) : c.slice(2, b, e);
    run_matmul(by_batch ? a_in.slice(0, b, e) : a_in,
               by_batch ? w_in.slice(0, b, e) : w_in.slice(2, b, e), c_part);
  });
}

void batched_matmul_reference(const Tensor& a, const Tensor& w, Tensor& c) {
  check_shapes(a, w, c);
  const bool round_a = w.dtype() == DType::kBF16;
  for (int64_t b = 0; b < a.size(0); ++b)
    for (int64_t m = 0; m < a.size(1); ++m)
      for (int64_t n = 0; n < w.size(2); ++n) {
        double acc = 0;
        for (int64_t k = 0; k < a.size(2); ++k) {
          double x = a.item_as_double({b, m, k});
          if (round_a) x = to_float(bf16(static_cast<float>(x)));
          acc += x * w.item_as_double({b, k, n});
        }
        c.data<float>()[b * c.stride(0) + m * c.stride(1) + n * c.stride(2)] =
            static_cast<float>(acc);
      }
}

}  // namespace ctxpar::kernels
