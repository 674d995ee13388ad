#include "ctxpar/comm/tensor_sum.h"

#include <algorithm>
#include <vector>

#include "ctxpar/comm/collective_check.h"
#include "ctxpar/comm/strided_walk.h"
#include "ctxpar/core/error.h"

namespace ctxpar {
namespace {

// How each dtype is loaded into its accumulator and stored back. Integers add as unsigned
// so wrap-around is defined behaviour.
template <typename T>
struct SumTraits;
template <>
struct SumTraits<float> {
  using Acc = float;
  static Acc load(float x) { return x; }
  static float store(Acc a) { return a; }
};
template <>
struct SumTraits<bf16> {
  using Acc = float;
  static Acc load(bf16 x) { return bf16::to_f32(x.bits); }
  static bf16 store(Acc a) { return bf16(a); }
};
template <>
struct SumTraits<int32_t> {
  using Acc = uint32_t;
  static Acc load(int32_t x) { return static_cast<uint32_t>(x); }
  static int32_t store(Acc a) { return static_cast<int32_t>(a); }
};
template <>
struct SumTraits<int64_t> {
  using Acc = uint64_t;
  static Acc load(int64_t x) { return static_cast<uint64_t>(x); }
  static int64_t store(Acc a) { return static_cast<int64_t>(a); }
};
template <>
struct SumTraits<uint8_t> {
  using Acc = uint8_t;
  static Acc load(uint8_t x) { return x; }
  static uint8_t store(Acc a) { return a; }
};

// One run: ptrs[0..n_in) are inputs, ptrs[n_in..n_in+n_out) outputs. kContiguous means every
// stride is sizeof(T), which lets the compiler vectorize the inner loops.
template <typename T, bool kContiguous>
void sum_run(char* const* ptrs, const int64_t* strides, int n_in, int n_out, int64_t count) {
  using Traits = SumTraits<T>;
  using Acc = typename Traits::Acc;
  constexpr int64_t kBlock = 512;  // accumulator stays in L1
  Acc acc[kBlock];
  auto element = [&](int k, int64_t i) -> T* {
    if constexpr (kContiguous) {
      return reinterpret_cast<T*>(ptrs[k]) + i;
    } else {
      return reinterpret_cast<T*>(ptrs[k] + i * strides[k]);
    }
  };
  for (int64_t b = 0; b < count; b += kBlock) {
    const int64_t len = std::min(kBlock, count - b);
    {
      const T* in = element(0, b);
      for (int64_t i = 0; i < len; ++i)
        acc[i] = Traits::load(kContiguous ? in[i] : *element(0, b + i));
    }
    for (int r = 1; r < n_in; ++r) {
      const T* in = element(r, b);
      for (int64_t i = 0; i < len; ++i) {
        acc[i] = static_cast<Acc>(acc[i] + Traits::load(kContiguous ? in[i] : *element(r, b + i)));
      }
    }
    for (int o = 0; o < n_out; ++o) {
      T* out = element(n_in + o, b);
      for (int64_t i = 0; i < len; ++i) {
        (kContiguous ? out[i] : *element(n_in + o, b + i)) = Traits::store(acc[i]);
      }
    }
  }
}

template <typename T>
void sum_typed(const StridedWalk& walk, int n_in, int n_out, int64_t begin, int64_t end) {
  walk.for_each_run(begin, end, [&](char* const* ptrs, const int64_t* strides, int64_t count) {
    bool contiguous = true;
    for (int k = 0; k < n_in + n_out; ++k)
      contiguous &= strides[k] == static_cast<int64_t>(sizeof(T));
    if (contiguous) {
      sum_run<T, true>(ptrs, strides, n_in, n_out, count);
    } else {
      sum_run<T, false>(ptrs, strides, n_in, n_out, count);
    }
  });
}

}  // namespace

void sum_tensors(std::span<const Tensor* const> inputs, std::span<const Tensor* const> outputs,
                 int64_t begin, int64_t end) {
  CTXPAR_CHECK(!inputs.empty(), "sum_tensors: needs at least one input");
  const Tensor& first = *inputs[0];
  check_summable("sum", first.dtype());
  std::vector<const Tensor*> operands(inputs.begin(), inputs.end());
  operands.insert(operands.end(), outputs.begin(), outputs.end());
  for (const Tensor* t : operands) {
    CTXPAR_CHECK(t->dtype() == first.dtype(), "sum_tensors: {} and {} differ in dtype",
                 t->describe(), first.describe());
  }
  const StridedWalk walk(first.shape(), operands);
  const int n_in = static_cast<int>(inputs.size());
  const int n_out = static_cast<int>(outputs.size());
  switch (first.dtype()) {
    case DType::kF32:
      sum_typed<float>(walk, n_in, n_out, begin, end);
      break;
    case DType::kBF16:
      sum_typed<bf16>(walk, n_in, n_out, begin, end);
      break;
    case DType::kI32:
      sum_typed<int32_t>(walk, n_in, n_out, begin, end);
      break;
    case DType::kI64:
      sum_typed<int64_t>(walk, n_in, n_out, begin, end);
      break;
    case DType::kU8:
      sum_typed<uint8_t>(walk, n_in, n_out, begin, end);
      break;
    default:
      CTXPAR_FAIL("sum_tensors: unreachable dtype {}", dtype_name(first.dtype()));
  }
}

}  // namespace ctxpar
