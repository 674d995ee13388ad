#include "ctxpar/kernels/merge_check.h"

#include "ctxpar/core/error.h"

namespace ctxpar::kernels::detail {
namespace {

void check_f32(const Tensor& t, const char* name, int ndim, const char* layout) {
  CTXPAR_CHECK(t.defined(), "{} is undefined; expected float32 {}", name, layout);
  CTXPAR_CHECK(t.dtype() == DType::kF32 && t.ndim() == ndim, "{} is {}; expected float32 {}", name,
               t.describe(), layout);
}

void check_rows(const Tensor& t, const char* name) {
  CTXPAR_CHECK(t.size(-1) <= 1 || t.stride(-1) == 1,
               "{} {} needs a contiguous last dimension (stride {})", name, t.describe(),
               t.stride(-1));
}

}  // namespace

MergeShape check_merge_attn_states(const Tensor& out, const Tensor& lse, const Tensor& out_b,
                                   const Tensor& lse_b) {
  check_f32(out, "out", 3, "[tokens, H, d]");
  check_f32(lse, "lse", 2, "[tokens, H]");
  check_f32(out_b, "out_b", 3, "[tokens, H, d]");
  check_f32(lse_b, "lse_b", 2, "[tokens, H]");
  check_rows(out, "out");
  check_rows(out_b, "out_b");
  CTXPAR_CHECK(out_b.shape() == out.shape(), "out_b {} must have the shape of out {}",
               out_b.describe(), out.describe());
  const Shape rows{out.size(0), out.size(1)};
  CTXPAR_CHECK(lse.shape() == rows && lse_b.shape() == rows,
               "lse {} and lse_b {} must be {} to match out {}", lse.describe(), lse_b.describe(),
               shape_str(rows), out.describe());
  return {2, out.size(0), out.size(1), out.size(2)};
}

MergeShape check_merge_partials(const Tensor& outs, const Tensor& lses, const Tensor& out,
                                const Tensor& lse) {
  check_f32(outs, "outs", 4, "[N, tokens, H, d]");
  check_f32(lses, "lses", 3, "[N, tokens, H]");
  check_f32(out, "out", 3, "[tokens, H, d]");
  check_f32(lse, "lse", 2, "[tokens, H]");
  check_rows(outs, "outs");
  check_rows(out, "out");
  const Shape o{outs.size(1), outs.size(2), outs.size(3)};
  CTXPAR_CHECK(out.shape() == o, "out {} must be {} to match outs {}", out.describe(), shape_str(o),
               outs.describe());
  const Shape l{outs.size(0), outs.size(1), outs.size(2)};
  CTXPAR_CHECK(lses.shape() == l, "lses {} must be {} to match outs {}", lses.describe(),
               shape_str(l), outs.describe());
  const Shape rows{outs.size(1), outs.size(2)};
  CTXPAR_CHECK(lse.shape() == rows, "lse {} must be {} to match outs {}", lse.describe(),
               shape_str(rows), outs.describe());
  return {outs.size(0), outs.size(1), outs.size(2), outs.size(3)};
}

MergeShape check_rescale_partial(const Tensor& out, const Tensor& lse_local, const Tensor& all_lses,
                                 const Tensor& lse_merged) {
  check_f32(out, "out", 3, "[tokens, H, d]");
  check_f32(lse_local, "lse_local", 2, "[tokens, H]");
  check_f32(all_lses, "all_lses", 3, "[N, tokens, H]");
  check_f32(lse_merged, "lse_merged", 2, "[tokens, H]");
  check_rows(out, "out");
  const Shape rows{out.size(0), out.size(1)};
  CTXPAR_CHECK(lse_local.shape() == rows && lse_merged.shape() == rows,
               "lse_local {} and lse_merged {} must be {} to match out {}", lse_local.describe(),
               lse_merged.describe(), shape_str(rows), out.describe());
  CTXPAR_CHECK(all_lses.size(1) == out.size(0) && all_lses.size(2) == out.size(1),
               "all_lses {} must be [N, {}, {}] to match out {}", all_lses.describe(), out.size(0),
               out.size(1), out.describe());
  return {all_lses.size(0), out.size(0), out.size(1), out.size(2)};
}

}  // namespace ctxpar::kernels::detail
