// Internal to the linear kernels: oneDNN matmul primitives for C = A · Wᵀ, built once per
// shape and reused. Keeps dnnl.hpp out of every other header.
#pragma once

#include <cstdint>
#include <memory>

#include "ctxpar/core/dtype.h"

namespace ctxpar::kernels::detail {

// One matmul: A [m, k] (row stride lda), W [n, k] (row stride ldw) read in place as the
// [k, n] operand, C [m, n] f32 (row stride ldc). All last dims contiguous.
struct MatmulShape {
  int64_t m = 0, k = 0, n = 0;
  int64_t lda = 0, ldw = 0, ldc = 0;
  DType a_type = DType::kF32;      // f32, bf16 or i8
  DType w_type = DType::kF32;      // f32, bf16 or i8
  bool has_bias = false;           // bias [n] f32 added to C
  bool has_column_scales = false;  // C[:, j] *= scales[j] (f32); not together with a bias

  bool operator==(const MatmulShape&) const = default;
};

// oneDNN here runs on the OpenMP runtime and sizes its team from the calling thread's
// omp_get_max_threads(), both when a primitive is built and when it runs. Every oneDNN call
// of the kernels runs inside one of these, so oneDNN works single-threaded in whatever pool
// task called it and no OpenMP team competes with the rank's pool for its cores.
class SingleThreadedOneDnn {
 public:
  SingleThreadedOneDnn();
  ~SingleThreadedOneDnn();
  SingleThreadedOneDnn(const SingleThreadedOneDnn&) = delete;
  SingleThreadedOneDnn& operator=(const SingleThreadedOneDnn&) = delete;

 private:
  int saved_;
};

// Whether oneDNN can build an A-type × W-type matmul on this CPU with an optimized (non-
// reference) implementation. bf16 needs AVX-512 in oneDNN 2.x.
bool onednn_matmul_supported(DType a_type, DType w_type);

// Whether bf16 matmuls should run as oneDNN bf16 matmuls: the CPU has bf16 dot products
// (AVX-512 BF16; CTXPAR_ISA allows AVX-512), oneDNN builds one, and they are fast: AMX tiles,
// or vdpbf16ps doing at least kFastBf16DotRatio times the multiply-adds per second of the f32
// FMA (bf16_dot_to_fma_mac_ratio, measured once). Otherwise callers convert to f32 and run
// the sgemm: without bf16 dot products oneDNN 2.x emulates them at ~1/4 of its sgemm rate,
// and where vdpbf16ps issues at a quarter of the FMA rate (an Intel Xeon VM without AMX:
// ratio 0.50) its bf16 matmul ran at 82 GFLOP/s against the sgemm path's 138
// (kernels_linear_bench PrefillLinears, 1 thread).
bool onednn_native_bf16();
inline constexpr double kFastBf16DotRatio = 1.25;
// Whether the CPU has AVX-512 BF16 and vdpbf16ps does at least kFastBf16DotRatio times the
// multiply-adds per second of the f32 FMA (measured once; false without AVX-512 BF16).
bool bf16_dot_fast();

// Multiply-adds per second of vdpbf16ps (zmm) over vfmadd231ps (zmm) on the calling core, from
// register-only loops (~3 ms). Call only where the CPU has AVX-512 BF16.
double bf16_dot_to_fma_mac_ratio();

// Whether oneDNN's s8 × s8 matmul is exact on this CPU for full-range operands. Without VNNI
// it multiplies with vpmaddubsw, whose 16-bit pair sums saturate (checked once by running a
// worst-case product).
bool onednn_int8_matmul_exact();

// A small LRU cache of primitives keyed by MatmulShape. Thread-safe: lookups hold a mutex;
// execution runs outside it with per-thread scratchpad and stream. Every primitive is built
// and run single-threaded on the calling thread (callers split work over their pool).
class MatmulCache {
 public:
  explicit MatmulCache(int capacity = 32);
  ~MatmulCache();
  MatmulCache(const MatmulCache&) = delete;
  MatmulCache& operator=(const MatmulCache&) = delete;

  // Runs the matmul described by `shape`. bias / column_scales must be non-null exactly when
  // the shape says so (never both: oneDNN 2.x would scale the bias too). Throws Error if
  // oneDNN rejects the shape.
  void run(const MatmulShape& shape, const void* a, const void* w, const float* bias,
           const float* column_scales, float* c) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace ctxpar::kernels::detail
