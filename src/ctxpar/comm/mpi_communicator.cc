#include "ctxpar/comm/mpi_communicator.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>

#include "ctxpar/comm/chunk_packing.h"
#include "ctxpar/comm/collective_check.h"
#include "ctxpar/comm/strided_walk.h"
#include "ctxpar/core/error.h"

namespace ctxpar {
namespace {

void check_mpi(int rc, std::string_view what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  CTXPAR_FAIL("{} failed: {}", what, std::string_view(text, static_cast<size_t>(length)));
}

// The MPI type that moves a dtype's elements. Sums use unsigned integer types so that
// overflow wraps (defined) instead of being signed overflow in the reduction code.
MPI_Datatype mpi_type(DType dtype, bool for_sum) {
  switch (dtype) {
    case DType::kF32:
      return MPI_FLOAT;
    case DType::kBF16:
      return MPI_UINT16_T;  // moved as bits; sums go through f32
    case DType::kF16:
      return MPI_UINT16_T;
    case DType::kI32:
      return for_sum ? MPI_UINT32_T : MPI_INT32_T;
    case DType::kI64:
      return for_sum ? MPI_UINT64_T : MPI_INT64_T;
    case DType::kU8:
      return MPI_UINT8_T;
    case DType::kI8:
      return MPI_INT8_T;
    case DType::kF8E4M3:
      return MPI_UINT8_T;  // moved as bits; never summed
  }
  CTXPAR_FAIL("no MPI type for dtype code {}", static_cast<int>(dtype));
}

int mpi_count(int64_t count, std::string_view op) {
  CTXPAR_CHECK(count <= INT_MAX,
               "{}: {} elements per rank exceed MPI's int count limit ({}); split the tensor", op,
               count, INT_MAX);
  return static_cast<int>(count);
}

// Open MPI 4.1's AVX reduction kernels add 8-bit integers with saturation (open-mpi/ompi
// issue 8045, closed as won't fix), so uint8 sums use this wrapping op instead of MPI_SUM.
void wrapping_byte_sum(void* in, void* inout, int* length, MPI_Datatype* /*type*/) {
  const auto* a = static_cast<const uint8_t*>(in);
  auto* b = static_cast<uint8_t*>(inout);
  for (int i = 0; i < *length; ++i) b[i] = static_cast<uint8_t>(b[i] + a[i]);
}

MPI_Op sum_op(DType dtype) {
  if (dtype != DType::kU8) return MPI_SUM;
  static const MPI_Op byte_sum = [] {
    MPI_Op op = MPI_OP_NULL;
    check_mpi(MPI_Op_create(&wrapping_byte_sum, /*commute=*/1, &op), "MPI_Op_create");
    return op;
  }();
  return byte_sum;
}

// bf16 sums are reduced in f32 and rounded once at the end.
DType sum_dtype(DType dtype) {
  return dtype == DType::kBF16 ? DType::kF32 : dtype;
}

bool verify_from_environment() {
  const char* v = std::getenv("CTXPAR_MPI_VERIFY");
  return v != nullptr && std::string_view(v) != "0" && std::string_view(v) != "";
}

// Fixed-size wire form of a CollectiveSignature for the verification all-gather.
constexpr int kMaxVerifiedDims = 8;
constexpr int kWireWords = 6 + kMaxVerifiedDims;

}  // namespace

std::unique_ptr<MpiCommunicator> MpiCommunicator::world() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  CTXPAR_CHECK(initialized,
               "MpiCommunicator::world: MPI is not initialized (create an "
               "MpiSession first)");
  MPI_Comm dup = MPI_COMM_NULL;
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &dup), "MPI_Comm_dup");
  return std::make_unique<MpiCommunicator>(dup);
}

MpiCommunicator::MpiCommunicator(MPI_Comm comm) : comm_(comm), verify_(verify_from_environment()) {
  CTXPAR_CHECK(comm != MPI_COMM_NULL, "MpiCommunicator: communicator is MPI_COMM_NULL");
  // Errors come back as codes we turn into ctxpar::Error instead of aborting the job.
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void MpiCommunicator::verify(const CollectiveSignature& signature) {
  ++seq_;
  if (!verify_) return;
  const std::string_view op = collective_name(signature.kind);
  CTXPAR_CHECK(signature.ndim <= kMaxVerifiedDims,
               "{}: verification supports tensors of up to {} dims, got {}", op, kMaxVerifiedDims,
               signature.ndim);
  int64_t mine[kWireWords] = {
      static_cast<int64_t>(signature.kind),  signature.dim, signature.root, signature.has_tensor,
      static_cast<int64_t>(signature.dtype), signature.ndim};
  for (int i = 0; i < signature.ndim; ++i) mine[6 + i] = signature.shape[i];
  std::vector<int64_t> all(static_cast<size_t>(kWireWords) * size_);
  check_mpi(
      MPI_Allgather(mine, kWireWords, MPI_INT64_T, all.data(), kWireWords, MPI_INT64_T, comm_),
      "MPI_Allgather (collective verification)");
  std::vector<CollectiveSignature> signatures(size_);
  for (int r = 0; r < size_; ++r) {
    const int64_t* w = &all[static_cast<size_t>(r) * kWireWords];
    CollectiveSignature& s = signatures[r];
    s.kind = static_cast<CollectiveKind>(w[0]);
    s.dim = static_cast<int>(w[1]);
    s.root = static_cast<int>(w[2]);
    s.has_tensor = w[3] != 0;
    s.dtype = static_cast<DType>(w[4]);
    s.ndim = static_cast<int>(w[5]);
    s.shape = w + 6;
  }
  const std::string mismatch = find_signature_mismatch(signatures);
  CTXPAR_CHECK(mismatch.empty(), "{} (collective #{} of an MPI group of {} ranks)", mismatch, seq_,
               size_);
}

void MpiCommunicator::all_gather(const Tensor& input, Tensor& output, int dim) {
  const int d = check_all_gather_args(input, output, dim, size_);
  verify(tensor_signature(CollectiveKind::kAllGather, input, d));
  if (input.numel() == 0) return;
  const MPI_Datatype type = mpi_type(input.dtype(), false);
  const int count = mpi_count(input.numel(), "all_gather");
  const Tensor send = input.contiguous();
  if (chunks_are_rank_major(output, d)) {
    check_mpi(MPI_Allgather(send.raw(), count, type, output.raw(), count, type, comm_),
              "MPI_Allgather");
    return;
  }
  Shape packed = input.shape();
  packed.insert(packed.begin(), size_);
  const Tensor gathered = Tensor::empty(packed, input.dtype());
  check_mpi(
      MPI_Allgather(send.raw(), count, type, const_cast<void*>(gathered.raw()), count, type, comm_),
      "MPI_Allgather");
  unpack_chunks(gathered, d, size_, output);
}

void MpiCommunicator::all_to_all(const Tensor& input, Tensor& output, int dim) {
  const int d = check_all_to_all_args(input, output, dim, size_);
  verify(tensor_signature(CollectiveKind::kAllToAll, input, d));
  if (input.numel() == 0) return;
  const MPI_Datatype type = mpi_type(input.dtype(), false);
  const int count = mpi_count(input.numel() / size_, "all_to_all");
  Tensor send = input;
  if (!chunks_are_rank_major(input, d)) {
    send = Tensor::empty(packed_shape(input, d, size_), input.dtype());
    pack_chunks(input, d, size_, send);
  }
  if (chunks_are_rank_major(output, d)) {
    check_mpi(MPI_Alltoall(send.raw(), count, type, output.raw(), count, type, comm_),
              "MPI_Alltoall");
    return;
  }
  Tensor received = Tensor::empty(packed_shape(output, d, size_), output.dtype());
  check_mpi(MPI_Alltoall(send.raw(), count, type, received.raw(), count, type, comm_),
            "MPI_Alltoall");
  unpack_chunks(received, d, size_, output);
}

void MpiCommunicator::reduce_scatter(const Tensor& input, Tensor& output, int dim) {
  const int d = check_reduce_scatter_args(input, output, dim, size_);
  verify(tensor_signature(CollectiveKind::kReduceScatter, input, d));
  if (input.numel() == 0) return;
  const DType acc = sum_dtype(input.dtype());
  const MPI_Datatype type = mpi_type(acc, true);
  const int count = mpi_count(output.numel(), "reduce_scatter");
  Tensor send = input;
  if (acc != input.dtype() || !chunks_are_rank_major(input, d)) {
    send = Tensor::empty(packed_shape(input, d, size_), acc);
    pack_chunks(input, d, size_, send);
  }
  const bool direct = acc == output.dtype() && output.is_contiguous();
  Tensor received = direct ? output : Tensor::empty(output.shape(), acc);
  // MPI_Reduce_scatter with equal counts rather than MPI_Reduce_scatter_block: the latter
  // measured several times slower in Open MPI 4.1.
  const std::vector<int> counts(size_, count);
  check_mpi(MPI_Reduce_scatter(send.raw(), received.raw(), counts.data(), type, sum_op(acc), comm_),
            "MPI_Reduce_scatter");
  if (!direct) output.copy_from(received);
}

void MpiCommunicator::all_reduce(Tensor& tensor) {
  check_summable("all_reduce", tensor.dtype());
  verify(tensor_signature(CollectiveKind::kAllReduce, tensor));
  if (tensor.numel() == 0) return;
  const DType acc = sum_dtype(tensor.dtype());
  const MPI_Datatype type = mpi_type(acc, true);
  const int count = mpi_count(tensor.numel(), "all_reduce");
  const bool direct = acc == tensor.dtype() && tensor.is_contiguous();
  Tensor buffer = direct ? tensor : tensor.to(acc);
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, buffer.raw(), count, type, sum_op(acc), comm_),
            "MPI_Allreduce");
  if (!direct) tensor.copy_from(buffer);
}

void MpiCommunicator::broadcast(Tensor& tensor, int root) {
  check_root("broadcast", root, size_);
  verify(tensor_signature(CollectiveKind::kBroadcast, tensor, 0, root));
  if (tensor.numel() == 0) return;
  const MPI_Datatype type = mpi_type(tensor.dtype(), false);
  const int count = mpi_count(tensor.numel(), "broadcast");
  Tensor buffer = tensor.is_contiguous() ? tensor : tensor.clone();
  check_mpi(MPI_Bcast(buffer.raw(), count, type, root, comm_), "MPI_Bcast");
  if (rank_ != root && buffer.raw() != tensor.raw()) strided_copy(buffer, tensor);
}

void MpiCommunicator::broadcast_bytes(std::vector<uint8_t>& bytes, int root) {
  check_root("broadcast_bytes", root, size_);
  CollectiveSignature signature;
  signature.kind = CollectiveKind::kBroadcastBytes;
  signature.root = root;
  verify(signature);
  uint64_t length = bytes.size();
  // A rank may wait here for a long time (the online engine's workers wait for the next step
  // plan while the server is idle), and MPI_Bcast busy-polls: wait on a non-blocking
  // broadcast instead, polling for 2 ms, then sleeping between polls (up to 1 ms) like the
  // in-process backend's waiters.
  MPI_Request request;
  check_mpi(MPI_Ibcast(&length, 1, MPI_UINT64_T, root, comm_, &request), "MPI_Ibcast (length)");
  const auto start = std::chrono::steady_clock::now();
  auto nap = std::chrono::microseconds(50);
  for (int done = 0;;) {
    check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test (length)");
    if (done) break;
    if (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(2)) continue;
    std::this_thread::sleep_for(nap);
    nap = std::min(2 * nap, std::chrono::microseconds(1000));
  }
  if (rank_ != root) bytes.resize(length);
  // Counts are ints: send in pieces of at most 1 GiB.
  constexpr uint64_t kPiece = uint64_t{1} << 30;
  for (uint64_t offset = 0; offset < length; offset += kPiece) {
    const int n = static_cast<int>(std::min(kPiece, length - offset));
    check_mpi(MPI_Bcast(bytes.data() + offset, n, MPI_UINT8_T, root, comm_), "MPI_Bcast");
  }
}

void MpiCommunicator::barrier() {
  CollectiveSignature signature;
  signature.kind = CollectiveKind::kBarrier;
  verify(signature);
  check_mpi(MPI_Barrier(comm_), "MPI_Barrier");
}

std::unique_ptr<Communicator> MpiCommunicator::split(int color, int key) {
  CTXPAR_CHECK(color >= 0, "split: color {} is negative; colors must be >= 0", color);
  CollectiveSignature signature;
  signature.kind = CollectiveKind::kSplit;
  verify(signature);
  MPI_Comm child = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split(comm_, color, key, &child), "MPI_Comm_split");
  auto result = std::make_unique<MpiCommunicator>(child);
  result->verify_ = verify_;
  return result;
}

}  // namespace ctxpar
