#include "collective_checks.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "ctxpar/comm/parallel_groups.h"
#include "ctxpar/core/error.h"

namespace ctxpar::testing {
namespace {

// Stream ids so each collective draws its own inputs.
enum Salt : uint64_t { kGather = 1, kToAll, kScatter, kReduce, kBcast, kBytes, kStress };

uint64_t stream(int rank, Salt salt) {
  return static_cast<uint64_t>(rank) * 64 + salt;
}

bool is_float(DType d) {
  return d == DType::kF32 || d == DType::kBF16;
}

Shape times(const Shape& s, int dim, int64_t factor) {
  Shape r = s;
  r[dim] *= factor;
  return r;
}

// Compares every element of actual with expected(index) (value, allowed error); reports
// the first mismatch and how many there were.
template <typename Expected>
void expect_elements(const std::string& what, const Tensor& actual, Expected&& expected) {
  int64_t bad = 0;
  std::string first;
  for_each_index(actual.shape(), [&](const std::vector<int64_t>& idx) {
    double tolerance = 0;
    const double want = expected(idx, tolerance);
    const double got = actual.item_as_double(idx);
    if (!(std::abs(got - want) <= tolerance)) {
      if (bad++ == 0) {
        first = fmt::format("at {}: got {}, want {} (tolerance {})", index_str(idx), got, want,
                            tolerance);
      }
    }
  });
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << actual.numel() << " elements wrong; first "
                    << first;
}

void expect_input_intact(const std::string& what, const Buffer& input, const Tensor& original) {
  expect_elements(
      what + " (input must be unchanged)", input.view,
      [&](const std::vector<int64_t>& idx, double&) { return original.item_as_double(idx); });
}

void expect_padding_intact(const std::string& what, const Buffer& buffer) {
  EXPECT_EQ(count_padding_writes(buffer), 0)
      << what << ": bytes outside the output view were written";
}

// The sum of xs as the collective must produce it for dtype; sets tolerance.
double expected_sum(const std::vector<double>& xs, DType dtype, Values values,
                    const CheckOptions& options, double& tolerance) {
  tolerance = 0;
  switch (dtype) {
    case DType::kI32: {
      int64_t s = 0;
      for (double x : xs) s += static_cast<int64_t>(x);
      return static_cast<int32_t>(static_cast<uint32_t>(s));
    }
    case DType::kI64: {
      int64_t s = 0;
      for (double x : xs) s += static_cast<int64_t>(x);
      return static_cast<double>(s);
    }
    case DType::kU8: {
      int64_t s = 0;
      for (double x : xs) s += static_cast<int64_t>(x);
      return static_cast<double>(s % 256);
    }
    default:
      break;
  }
  double exact = 0, magnitude = 0;
  for (double x : xs) {
    exact += x;
    magnitude += std::abs(x);
  }
  auto round_to_dtype = [&](float f) {
    return dtype == DType::kBF16 ? static_cast<double>(to_float(bf16(f))) : f;
  };
  if (values == Values::kExact) return round_to_dtype(static_cast<float>(exact));
  if (options.rank_order_sums) {
    float s = static_cast<float>(xs[0]);
    for (size_t i = 1; i < xs.size(); ++i) s += static_cast<float>(xs[i]);
    return round_to_dtype(s);
  }
  // f32 accumulation error, plus one bf16 rounding (half an ulp: 2^-9 relative).
  tolerance = static_cast<double>(xs.size()) * 0x1p-23 * magnitude +
              (dtype == DType::kBF16 ? 0x1p-8 * std::abs(exact) : 0.0) + 1e-30;
  return exact;
}

std::vector<Tensor> all_inputs(int size, const Shape& shape, const CollectiveCase& c, Salt salt) {
  std::vector<Tensor> inputs;
  for (int r = 0; r < size; ++r) {
    inputs.push_back(random_tensor(shape, c.dtype, c.seed, stream(r, salt), c.values));
  }
  return inputs;
}

Buffer input_buffer(const Tensor& values, Layout layout) {
  Buffer b = make_buffer(values.shape(), values.dtype(), layout, 0x3c);
  b.view.copy_from(values);
  return b;
}

std::string label(const Communicator& comm, const char* op, const CollectiveCase& c) {
  return fmt::format("{} on rank {}/{} ({})", op, comm.rank(), comm.size(), c.describe());
}

}  // namespace

std::string CollectiveCase::describe() const {
  return fmt::format("{}{} dim {} input {} output {} {} seed {}", dtype_name(dtype),
                     shape_str(chunk), dim, layout_name(input_layout), layout_name(output_layout),
                     values == Values::kExact ? "exact values" : "normal values", seed);
}

std::vector<CollectiveCase> make_cases(uint64_t seed, int count) {
  std::mt19937_64 rng(mix_seed(seed, 12345));
  const DType dtypes[] = {DType::kF32, DType::kBF16, DType::kI32, DType::kI64, DType::kU8};
  const int64_t sizes[] = {1, 2, 3, 4, 5, 7};
  std::vector<CollectiveCase> cases;
  for (int i = 0; i < count; ++i) {
    CollectiveCase c;
    c.dtype = dtypes[i < 15 ? i / 3 : rng() % 5];
    const int ndim = 1 + static_cast<int>(rng() % 3);
    for (int d = 0; d < ndim; ++d) c.chunk.push_back(sizes[rng() % 6]);
    const int dim_kind = i < 15 ? i % 3 : static_cast<int>(rng() % 3);  // first, middle, last
    c.dim = dim_kind == 0 ? 0 : dim_kind == 1 ? ndim / 2 : ndim - 1;
    if (rng() % 10 == 0) c.chunk[rng() % ndim] = 0;  // empty tensors
    c.input_layout = static_cast<Layout>(rng() % 3);
    c.output_layout = static_cast<Layout>(rng() % 3);
    c.values = is_float(c.dtype) && rng() % 2 ? Values::kExact : Values::kNormal;
    c.seed = mix_seed(seed, 1000 + i);
    cases.push_back(c);
  }
  return cases;
}

void check_all_gather(Communicator& comm, const CollectiveCase& c, uint8_t poison) {
  const int n = comm.size(), d = c.dim;
  const auto inputs = all_inputs(n, c.chunk, c, kGather);
  const Buffer in = input_buffer(inputs[comm.rank()], c.input_layout);
  Buffer out = make_buffer(times(c.chunk, d, n), c.dtype, c.output_layout, poison);
  comm.all_gather(in.view, out.view, d);
  const std::string what = label(comm, "all_gather", c);
  expect_elements(what, out.view, [&](const std::vector<int64_t>& idx, double&) {
    std::vector<int64_t> src = idx;
    const int64_t from = idx[d] / c.chunk[d];
    src[d] -= from * c.chunk[d];
    return inputs[from].item_as_double(src);
  });
  expect_padding_intact(what, out);
  expect_input_intact(what, in, inputs[comm.rank()]);
}

void check_all_to_all(Communicator& comm, const CollectiveCase& c, uint8_t poison) {
  const int n = comm.size(), d = c.dim, r = comm.rank();
  const Shape shape = times(c.chunk, d, n);
  const auto inputs = all_inputs(n, shape, c, kToAll);
  const Buffer in = input_buffer(inputs[r], c.input_layout);
  Buffer out = make_buffer(shape, c.dtype, c.output_layout, poison);
  comm.all_to_all(in.view, out.view, d);
  const std::string what = label(comm, "all_to_all", c);
  // Our chunk i is chunk r of rank i's input.
  expect_elements(what, out.view, [&](const std::vector<int64_t>& idx, double&) {
    std::vector<int64_t> src = idx;
    const int64_t from = idx[d] / c.chunk[d];
    src[d] = idx[d] - from * c.chunk[d] + r * c.chunk[d];
    return inputs[from].item_as_double(src);
  });
  expect_padding_intact(what, out);
  expect_input_intact(what, in, inputs[r]);
}

void check_reduce_scatter(Communicator& comm, const CollectiveCase& c, uint8_t poison,
                          const CheckOptions& options) {
  const int n = comm.size(), d = c.dim, r = comm.rank();
  const auto inputs = all_inputs(n, times(c.chunk, d, n), c, kScatter);
  const Buffer in = input_buffer(inputs[r], c.input_layout);
  Buffer out = make_buffer(c.chunk, c.dtype, c.output_layout, poison);
  comm.reduce_scatter(in.view, out.view, d);
  const std::string what = label(comm, "reduce_scatter", c);
  std::vector<double> xs(n);
  expect_elements(what, out.view, [&](const std::vector<int64_t>& idx, double& tolerance) {
    std::vector<int64_t> src = idx;
    src[d] += r * c.chunk[d];
    for (int i = 0; i < n; ++i) xs[i] = inputs[i].item_as_double(src);
    return expected_sum(xs, c.dtype, c.values, options, tolerance);
  });
  expect_padding_intact(what, out);
  expect_input_intact(what, in, inputs[r]);
}

void check_all_reduce(Communicator& comm, const CollectiveCase& c, const CheckOptions& options) {
  const int n = comm.size();
  const auto inputs = all_inputs(n, c.chunk, c, kReduce);
  Buffer tensor = input_buffer(inputs[comm.rank()], c.input_layout);
  comm.all_reduce(tensor.view);
  const std::string what = label(comm, "all_reduce", c);
  std::vector<double> xs(n);
  expect_elements(what, tensor.view, [&](const std::vector<int64_t>& idx, double& tolerance) {
    for (int i = 0; i < n; ++i) xs[i] = inputs[i].item_as_double(idx);
    return expected_sum(xs, c.dtype, c.values, options, tolerance);
  });
  EXPECT_EQ(count_padding_writes(tensor), 0) << what << ": wrote outside the tensor";
}

void check_broadcast(Communicator& comm, const CollectiveCase& c, uint8_t poison) {
  const int root = static_cast<int>(mix_seed(c.seed, 77) % comm.size());
  const Tensor values = random_tensor(c.chunk, c.dtype, c.seed, stream(root, kBcast), c.values);
  Buffer tensor = comm.rank() == root ? input_buffer(values, c.input_layout)
                                      : make_buffer(c.chunk, c.dtype, c.output_layout, poison);
  comm.broadcast(tensor.view, root);
  const std::string what = label(comm, "broadcast", c) + fmt::format(" root {}", root);
  expect_elements(what, tensor.view, [&](const std::vector<int64_t>& idx, double&) {
    return values.item_as_double(idx);
  });
  if (comm.rank() != root) expect_padding_intact(what, tensor);
}

void check_broadcast_bytes(Communicator& comm, uint64_t seed) {
  std::mt19937_64 rng(mix_seed(seed, kBytes));
  const int root = static_cast<int>(rng() % comm.size());
  const size_t length = rng() % 3 == 0 ? 0 : rng() % 5000;
  std::vector<uint8_t> expected(length);
  for (auto& b : expected) b = static_cast<uint8_t>(rng());
  // Non-root ranks start with junk of a different length, which must be replaced.
  std::vector<uint8_t> bytes =
      comm.rank() == root ? expected : std::vector<uint8_t>(comm.rank() * 7, 0xee);
  comm.broadcast_bytes(bytes, root);
  EXPECT_EQ(bytes, expected) << "broadcast_bytes on rank " << comm.rank() << " root " << root
                             << " length " << length << " seed " << seed;
}

void check_every_collective(Communicator& comm, const CollectiveCase& c,
                            const CheckOptions& options) {
  for (const uint8_t poison : {uint8_t{0xa5}, uint8_t{0x5a}}) {
    check_all_gather(comm, c, poison);
    check_all_to_all(comm, c, poison);
    check_reduce_scatter(comm, c, poison, options);
    check_broadcast(comm, c, poison);
  }
  check_all_reduce(comm, c, options);
  check_broadcast_bytes(comm, c.seed);
}

namespace {

// World ranks of comm's members in group order, learned through comm itself.
std::vector<int64_t> gathered_world_ranks(Communicator& comm, int world_rank) {
  Tensor mine = Tensor::empty({1}, DType::kI64);
  mine.data<int64_t>()[0] = world_rank;
  Tensor all = comm.all_gather(mine, 0);
  return std::vector<int64_t>(all.data<int64_t>(), all.data<int64_t>() + all.numel());
}

}  // namespace

void check_split_groups(Communicator& comm, uint64_t seed, const CheckOptions& options) {
  const int n = comm.size(), r = comm.rank();
  const auto cases = make_cases(seed, 6);
  // Every divisor N of n: consecutive groups, as DCP uses them.
  for (int g = 1; g <= n; ++g) {
    if (n % g != 0) continue;
    auto sub = comm.split(r / g, r);
    EXPECT_EQ(sub->size(), g);
    EXPECT_EQ(sub->rank(), r % g);
    std::vector<int64_t> want(g);
    std::iota(want.begin(), want.end(), r / g * g);
    EXPECT_EQ(gathered_world_ranks(*sub, r), want) << "consecutive groups of " << g;
    for (const auto& c : cases) check_every_collective(*sub, c, options);
  }
  // Odd/even ranks with reversed keys: ordered by key, so the highest rank comes first.
  auto parity = comm.split(r % 2, -r);
  std::vector<int64_t> want;
  for (int i = n - 1; i >= 0; --i) {
    if (i % 2 == r % 2) want.push_back(i);
  }
  EXPECT_EQ(gathered_world_ranks(*parity, r), want) << "odd/even split with key -rank";
  // Equal keys fall back to the parent's order.
  auto same_key = comm.split(0, 7);
  EXPECT_EQ(same_key->rank(), r);
  // A split of a split.
  auto nested = parity->split(parity->rank() / 2, 0);
  EXPECT_EQ(nested->rank(), parity->rank() % 2);
  for (const auto& c : cases) check_every_collective(*nested, c, options);
}

void run_interleaved_collectives(Communicator& world, int dcp_size, int iterations, uint64_t seed,
                                 const CheckOptions& options) {
  ParallelGroups groups(world, world.size(), dcp_size);
  auto parity = world.split(world.rank() % 2, world.rank());
  Communicator* comms[] = {&groups.world(), &groups.tp(), &groups.dcp(), parity.get()};
  const DType dtypes[] = {DType::kF32, DType::kBF16, DType::kI32, DType::kI64, DType::kU8};
  std::mt19937_64 shared(mix_seed(seed, kStress));  // the same draws on every rank
  for (int it = 0; it < iterations; ++it) {
    CollectiveCase c;
    c.dtype = dtypes[shared() % 5];
    c.chunk = {static_cast<int64_t>(1 + shared() % 3), static_cast<int64_t>(1 + shared() % 4)};
    c.dim = static_cast<int>(shared() % 2);
    c.input_layout = static_cast<Layout>(shared() % 3);
    c.output_layout = static_cast<Layout>(shared() % 3);
    c.values = Values::kExact;
    c.seed = mix_seed(seed, 5000 + it);
    Communicator& comm = *comms[shared() % 4];
    switch (shared() % 6) {
      case 0:
        check_all_gather(comm, c, 0xa5);
        break;
      case 1:
        check_all_to_all(comm, c, 0xa5);
        break;
      case 2:
        check_reduce_scatter(comm, c, 0xa5, options);
        break;
      case 3:
        check_all_reduce(comm, c, options);
        break;
      case 4:
        check_broadcast(comm, c, 0xa5);
        break;
      default:
        comm.barrier();
        break;
    }
    // DCP groups run different numbers of their own collectives before the next round.
    const int extra = (it + groups.dcp_group()) % 3;
    for (int e = 0; e < extra; ++e) {
      c.seed = mix_seed(c.seed, e);
      check_all_reduce(groups.dcp(), c, options);
    }
  }
}

}  // namespace ctxpar::testing
