#include "ctxpar/comm/collective_check.h"

#include "ctxpar/core/error.h"

namespace ctxpar {
namespace {

std::string signature_tensor_str(const CollectiveSignature& s) {
  const Shape shape(s.shape, s.shape + s.ndim);
  return fmt::format("{}{}", dtype_name(s.dtype), shape_str(shape));
}

bool same_tensor(const CollectiveSignature& a, const CollectiveSignature& b) {
  if (a.has_tensor != b.has_tensor) return false;
  if (!a.has_tensor) return true;
  if (a.dtype != b.dtype || a.ndim != b.ndim) return false;
  for (int i = 0; i < a.ndim; ++i) {
    if (a.shape[i] != b.shape[i]) return false;
  }
  return true;
}

bool uses_dim(CollectiveKind k) {
  return k == CollectiveKind::kAllGather || k == CollectiveKind::kAllToAll ||
         k == CollectiveKind::kReduceScatter;
}

bool uses_root(CollectiveKind k) {
  return k == CollectiveKind::kBroadcast || k == CollectiveKind::kBroadcastBytes;
}

int normalize(std::string_view op, int dim, const Tensor& t) {
  const int d = dim < 0 ? dim + t.ndim() : dim;
  CTXPAR_CHECK(d >= 0 && d < t.ndim(), "{}: dim {} is out of range for {} (valid: -{}..{})", op,
               dim, t.describe(), t.ndim(), t.ndim() - 1);
  return d;
}

void check_same_dtype(std::string_view op, const Tensor& input, const Tensor& output) {
  CTXPAR_CHECK(input.dtype() == output.dtype(), "{}: output {} must have the input's dtype ({})",
               op, output.describe(), dtype_name(input.dtype()));
}

}  // namespace

std::string_view collective_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllGather:
      return "all_gather";
    case CollectiveKind::kAllToAll:
      return "all_to_all";
    case CollectiveKind::kReduceScatter:
      return "reduce_scatter";
    case CollectiveKind::kAllReduce:
      return "all_reduce";
    case CollectiveKind::kBroadcast:
      return "broadcast";
    case CollectiveKind::kBroadcastBytes:
      return "broadcast_bytes";
    case CollectiveKind::kBarrier:
      return "barrier";
    case CollectiveKind::kSplit:
      return "split";
  }
  return "unknown collective";
}

CollectiveSignature tensor_signature(CollectiveKind kind, const Tensor& tensor, int dim, int root) {
  CollectiveSignature s;
  s.kind = kind;
  s.dim = dim;
  s.root = root;
  s.has_tensor = true;
  s.dtype = tensor.dtype();
  s.shape = tensor.shape().data();
  s.ndim = tensor.ndim();
  return s;
}

std::string find_signature_mismatch(std::span<const CollectiveSignature> signatures) {
  if (signatures.empty()) return "";
  const CollectiveSignature& ref = signatures[0];
  const std::string_view op = collective_name(ref.kind);
  for (size_t i = 1; i < signatures.size(); ++i) {
    const CollectiveSignature& s = signatures[i];
    if (s.kind != ref.kind) {
      return fmt::format(
          "collective mismatch: rank {} called {}, rank 0 called {} (every rank of a group must "
          "call the same collectives in the same order)",
          i, collective_name(s.kind), op);
    }
    if (!same_tensor(s, ref)) {
      return fmt::format(
          "{}: rank {} sent {}, rank 0 sent {} (every rank must pass the same "
          "dtype and shape)",
          op, i, signature_tensor_str(s), signature_tensor_str(ref));
    }
    if (uses_dim(ref.kind) && s.dim != ref.dim) {
      return fmt::format("{}: rank {} used dim {}, rank 0 used dim {}", op, i, s.dim, ref.dim);
    }
    if (uses_root(ref.kind) && s.root != ref.root) {
      return fmt::format("{}: rank {} used root {}, rank 0 used root {}", op, i, s.root, ref.root);
    }
  }
  return "";
}

int check_all_gather_args(const Tensor& input, const Tensor& output, int dim, int group_size) {
  const int d = normalize("all_gather", dim, input);
  check_same_dtype("all_gather", input, output);
  Shape expected = input.shape();
  expected[d] *= group_size;
  CTXPAR_CHECK(output.shape() == expected,
               "all_gather: output {} must have shape {} (input {} with dim {} times the group "
               "size {})",
               output.describe(), shape_str(expected), input.describe(), d, group_size);
  return d;
}

int check_all_to_all_args(const Tensor& input, const Tensor& output, int dim, int group_size) {
  const int d = normalize("all_to_all", dim, input);
  check_same_dtype("all_to_all", input, output);
  CTXPAR_CHECK(input.size(d) % group_size == 0,
               "all_to_all: dim {} of {} has size {}, which is not divisible by the group size {}",
               d, input.describe(), input.size(d), group_size);
  CTXPAR_CHECK(output.shape() == input.shape(),
               "all_to_all: output {} must have the input's shape {}", output.describe(),
               shape_str(input.shape()));
  return d;
}

int check_reduce_scatter_args(const Tensor& input, const Tensor& output, int dim, int group_size) {
  const int d = normalize("reduce_scatter", dim, input);
  check_same_dtype("reduce_scatter", input, output);
  check_summable("reduce_scatter", input.dtype());
  CTXPAR_CHECK(
      input.size(d) % group_size == 0,
      "reduce_scatter: dim {} of {} has size {}, which is not divisible by the group size {}", d,
      input.describe(), input.size(d), group_size);
  Shape expected = input.shape();
  expected[d] /= group_size;
  CTXPAR_CHECK(output.shape() == expected,
               "reduce_scatter: output {} must have shape {} (input {} with dim {} divided by "
               "the group size {})",
               output.describe(), shape_str(expected), input.describe(), d, group_size);
  return d;
}

void check_summable(std::string_view op, DType dtype) {
  const bool ok = dtype == DType::kF32 || dtype == DType::kBF16 || dtype == DType::kI32 ||
                  dtype == DType::kI64 || dtype == DType::kU8;
  CTXPAR_CHECK(ok,
               "{}: cannot sum {} tensors; valid dtypes: float32, bfloat16, int32, int64, "
               "uint8",
               op, dtype_name(dtype));
}

void check_root(std::string_view op, int root, int group_size) {
  CTXPAR_CHECK(root >= 0 && root < group_size,
               "{}: root {} is not a rank of this group (valid: "
               "0..{})",
               op, root, group_size - 1);
}

Tensor slice_view(const Tensor& tensor, int dim, int64_t begin, int64_t end) {
  Shape shape = tensor.shape();
  shape[dim] = end - begin;
  const int64_t offset =
      begin * tensor.strides()[dim] * static_cast<int64_t>(tensor.element_size());
  auto* base = static_cast<char*>(const_cast<void*>(tensor.raw()));
  return Tensor::wrap(base + offset, shape, tensor.dtype(), tensor.strides());
}

}  // namespace ctxpar
