#include "ctxpar/kv/dcp_layout.h"

#include <limits>

namespace ctxpar::kv {

DcpLayout::DcpLayout(int dcp_size, int block_size, int interleave)
    : dcp_size_(dcp_size), block_size_(block_size), interleave_(interleave) {
  CTXPAR_CHECK_INPUT(dcp_size >= 1, "decode context parallel size {} is invalid; it must be >= 1",
                     dcp_size);
  CTXPAR_CHECK_INPUT(block_size >= 1, "block size {} is invalid; it must be >= 1", block_size);
  CTXPAR_CHECK_INPUT(interleave >= 1 && interleave <= block_size,
                     "cp kv cache interleave size {} is invalid; it must be in [1, block size {}]",
                     interleave, block_size);
  CTXPAR_CHECK_INPUT(
      block_size % interleave == 0,
      "block size {} is not a multiple of the cp kv cache interleave size {}; a block "
      "must hold whole interleave runs (valid interleaves divide the block size)",
      block_size, interleave);
  group_stride_ = int64_t{dcp_size} * interleave;
  tokens_per_vblock_ = int64_t{dcp_size} * block_size;
}

std::vector<int64_t> DcpLayout::local_lens(int64_t seq_len) const {
  std::vector<int64_t> lens(static_cast<size_t>(dcp_size_));
  for (int r = 0; r < dcp_size_; ++r) lens[static_cast<size_t>(r)] = local_len(seq_len, r);
  return lens;
}

Tensor DcpLayout::local_len_matrix(std::span<const int64_t> seq_lens) const {
  const auto num_reqs = static_cast<int64_t>(seq_lens.size());
  Tensor matrix = Tensor::empty({num_reqs, dcp_size_}, DType::kI32);
  int32_t* out = matrix.data<int32_t>();
  for (int64_t i = 0; i < num_reqs; ++i) {
    for (int r = 0; r < dcp_size_; ++r) {
      const int64_t len = local_len(seq_lens[static_cast<size_t>(i)], r);
      CTXPAR_CHECK(len <= std::numeric_limits<int32_t>::max(),
                   "request {} of length {} has local length {} on rank {}, which does not fit "
                   "the int32 length matrix (max {})",
                   i, seq_lens[static_cast<size_t>(i)], len, r,
                   std::numeric_limits<int32_t>::max());
      out[i * dcp_size_ + r] = static_cast<int32_t>(len);
    }
  }
  return matrix;
}

}  // namespace ctxpar::kv
