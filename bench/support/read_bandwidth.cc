#include "read_bandwidth.h"

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <compare>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "ctxpar/core/cpu_features.h"
#include "ctxpar/core/error.h"
#include "pinning.h"
#include "read_loop.h"

namespace ctxpar::bench {
namespace detail {

uint64_t read_sum_scalar(const char* p, int64_t bytes, int streams, int64_t prefetch_bytes) {
  // Two chains per stream, so even the portable loop is not bound by one add's latency.
  const int64_t part = stream_part_bytes(bytes, streams) / 8;
  const auto* q = reinterpret_cast<const uint64_t*>(p);
  uint64_t sum = 0;
  for (int64_t i = streams * part; i < bytes / 8; ++i) sum += q[i];
  uint64_t a[kMaxReadStreams][2] = {};
  for (int64_t i = 0; i < part; i += 2) {
    for (int s = 0; s < streams; ++s) {
      if (prefetch_bytes > 0 && i % 8 == 0)
        __builtin_prefetch(p + (s * part + i) * 8 + prefetch_bytes);
      a[s][0] += q[s * part + i];
      a[s][1] += q[s * part + i + 1];
    }
  }
  for (int s = 0; s < streams; ++s) sum += a[s][0] + a[s][1];
  return sum;
}

}  // namespace detail

namespace {

constexpr int64_t kHugePage = int64_t{2} << 20;
constexpr int64_t kMinBuffer = int64_t{1} << 30;

int64_t buffer_bytes(int threads) {
  const int64_t want = beyond_llc_bytes();
  const int64_t unit = kHugePage * threads;  // every thread's part starts on a huge page
  return (want + unit - 1) / unit * unit;
}

// Anonymous memory aligned to a huge page, with THP requested; unmapped on destruction.
class HugeBuffer {
 public:
  explicit HugeBuffer(int64_t bytes) : bytes_(bytes), mapped_(bytes + kHugePage) {
    void* p = mmap(nullptr, static_cast<size_t>(mapped_), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CTXPAR_CHECK(p != MAP_FAILED, "read ceiling: cannot map {} bytes", mapped_);
    base_ = static_cast<char*>(p);
    const auto addr = reinterpret_cast<uintptr_t>(base_);
    data_ = base_ + (kHugePage - static_cast<int64_t>(addr % kHugePage)) % kHugePage;
    madvise(data_, static_cast<size_t>(bytes_), MADV_HUGEPAGE);  // advisory: fine if refused
  }
  ~HugeBuffer() { munmap(base_, static_cast<size_t>(mapped_)); }
  HugeBuffer(const HugeBuffer&) = delete;
  HugeBuffer& operator=(const HugeBuffer&) = delete;
  char* data() const { return data_; }
  int64_t bytes() const { return bytes_; }

 private:
  int64_t bytes_, mapped_;
  char* base_ = nullptr;
  char* data_ = nullptr;
};

using ReadFn = uint64_t (*)(const char*, int64_t, int, int64_t);

// The loops tried per thread (read_loop.h): stream count and software prefetch distance
// (0: none). The ceiling is the best of them.
struct LoopShape {
  int streams;
  int64_t prefetch_bytes;
  auto operator<=>(const LoopShape&) const = default;
};
constexpr LoopShape kLoopShapes[] = {{1, 0}, {2, 0},   {3, 0},   {4, 0},
                                     {6, 0}, {1, 512}, {2, 512}, {4, 512}};

// The widest loop the CPU runs, whatever CTXPAR_ISA allows the kernels: the ceiling is the
// machine's, and a kernel held to AVX2 on an AVX-512 CPU read 1.01-1.05 of the AVX2 loop.
ReadFn read_fn(std::string& name) {
  switch (cpu_isa()) {
    case Isa::kAmx:
    case Isa::kAvx512:
      name = "avx512";
      return detail::read_sum_avx512;
    case Isa::kAvx2:
      name = "avx2";
      return detail::read_sum_avx2;
    case Isa::kScalar:
      break;
  }
  name = "scalar";
  return detail::read_sum_scalar;
}

}  // namespace

int64_t beyond_llc_bytes() {
  const long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
  return std::max<int64_t>(kMinBuffer, 4 * static_cast<int64_t>(std::max(0L, llc)));
}

int64_t copies_beyond_llc(int64_t bytes) {
  return (beyond_llc_bytes() + bytes - 1) / std::max<int64_t>(bytes, 1);
}

ReadCeiling measure_read_ceiling(int threads, int passes) {
  CTXPAR_CHECK(threads >= 1 && passes >= 1, "read ceiling: threads {} and passes {} must be >= 1",
               threads, passes);
  ReadCeiling c;
  c.threads = threads;
  c.passes = passes;
  const ReadFn fn = read_fn(c.loop_isa);
  const HugeBuffer buf(buffer_bytes(threads));
  c.buffer_bytes = buf.bytes();
  const int64_t part = buf.bytes() / threads;
  const std::vector<int> cpus = detail::allowed_cpus();
  const bool pin = static_cast<int>(cpus.size()) >= threads;

  // Workers: pin, first-touch their own part, then per pass one read of it with each loop
  // shape, between barriers.
  std::barrier sync(threads + 1);
  std::vector<uint64_t> sums(static_cast<size_t>(threads) * 8);  // a cache line apart
  std::vector<char> pinned(static_cast<size_t>(threads), 0);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      pinned[static_cast<size_t>(t)] = pin && detail::pin_to(cpus[static_cast<size_t>(t)]);
      char* mine = buf.data() + t * part;
      std::memset(mine, t + 1, static_cast<size_t>(part));
      sync.arrive_and_wait();  // touched
      for (int p = 0; p < passes; ++p) {
        for (const LoopShape& shape : kLoopShapes) {
          sync.arrive_and_wait();  // start
          sums[static_cast<size_t>(t) * 8] += fn(mine, part, shape.streams, shape.prefetch_bytes);
          sync.arrive_and_wait();  // done
        }
      }
    });
  }
  sync.arrive_and_wait();
  // Best and worst pass per loop shape; the ceiling is the shape with the best pass.
  std::map<LoopShape, std::pair<double, double>> by_shape;
  for (int p = 0; p < passes; ++p) {
    for (const LoopShape& shape : kLoopShapes) {
      const auto t0 = std::chrono::steady_clock::now();
      sync.arrive_and_wait();
      sync.arrive_and_wait();
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double gbps = static_cast<double>(buf.bytes()) / s / 1e9;
      auto& [best, worst] = by_shape.try_emplace(shape, gbps, gbps).first->second;
      best = std::max(best, gbps);
      worst = std::min(worst, gbps);
    }
  }
  for (const auto& [shape, best_worst] : by_shape) {
    if (best_worst.first > c.gb_per_s) {
      c.gb_per_s = best_worst.first;
      c.worst_gb_per_s = best_worst.second;
      c.streams = shape.streams;
      c.prefetch_bytes = shape.prefetch_bytes;
    }
    if (shape == LoopShape{1, 0}) c.one_stream_gb_per_s = best_worst.first;
  }
  for (auto& w : workers) w.join();
  c.pinned = std::all_of(pinned.begin(), pinned.end(), [](char x) { return x != 0; });
  // The sums are data-dependent results the loops must produce; keep them observable.
  volatile uint64_t sink = 0;
  for (uint64_t s : sums) sink = sink + s;
  return c;
}

const ReadCeiling& read_ceiling(int threads) {
  static std::mutex mu;
  static std::map<int, ReadCeiling> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(threads);
  if (it == cache.end()) it = cache.emplace(threads, measure_read_ceiling(threads)).first;
  return it->second;
}

std::string describe(const ReadCeiling& c) {
  return fmt::format(
      "read {:.1f} GB/s ({} thread{}{}, {}, {} stream{} per thread{}, best of {} passes over "
      "{:.1f} GiB; worst {:.1f}; 1 stream {:.1f})",
      c.gb_per_s, c.threads, c.threads == 1 ? "" : "s", c.pinned ? " pinned" : " unpinned",
      c.loop_isa, c.streams, c.streams == 1 ? "" : "s",
      c.prefetch_bytes > 0 ? fmt::format(" prefetching {} B ahead", c.prefetch_bytes) : "",
      c.passes, static_cast<double>(c.buffer_bytes) / (1 << 30), c.worst_gb_per_s,
      c.one_stream_gb_per_s);
}

}  // namespace ctxpar::bench
