// In-process failure model: mismatched collectives fail on every rank with a message naming
// the ranks; a failing rank aborts the world and all its groups; collectives that can never
// complete throw. Each case runs under a deadline, so a regression fails instead of hanging.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <mutex>
#include <random>
#include <thread>

#include "comm_test_util.h"
#include "ctxpar/comm/inprocess_communicator.h"
#include "ctxpar/core/error.h"

namespace ctxpar::testing {
namespace {

constexpr double kDeadline = 30;

// Per-rank record of the error each rank saw, filled from the rank threads.
class ErrorLog {
 public:
  explicit ErrorLog(int size) : messages_(size) {}
  void record(int rank, const std::string& message) {
    std::lock_guard lock(mu_);
    messages_[rank] = message;
  }
  std::string at(int rank) const {
    std::lock_guard lock(mu_);
    return messages_[rank];
  }
  std::vector<std::string> all() const {
    std::lock_guard lock(mu_);
    return messages_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> messages_;
};

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// Runs fn on world_size ranks; every rank's ctxpar::Error is caught and logged (so the
// launcher sees no failure). Returns each rank's message ("" if none).
std::vector<std::string> run_catching(int world_size,
                                      const std::function<void(Communicator&)>& fn) {
  ErrorLog log(world_size);
  run_with_deadline(kDeadline, "fault test", [&] {
    run_inprocess_ranks(world_size, [&](Communicator& world) {
      try {
        fn(world);
      } catch (const Error& e) {
        log.record(world.rank(), e.what());
      }
    });
  });
  return log.all();
}

// Runs fn expecting the launcher to throw; returns the launcher's error message.
std::string launcher_error(int world_size, const std::function<void(Communicator&)>& fn) {
  std::string message;
  run_with_deadline(kDeadline, "fault test", [&] {
    try {
      run_inprocess_ranks(world_size, fn);
    } catch (const std::exception& e) {
      message = e.what();
    }
  });
  return message;
}

TEST(InProcessMismatch, DtypeMismatchFailsOnEveryRankNamingBoth) {
  const int n = 4;
  const auto log = run_catching(n, [](Communicator& world) {
    const DType dtype = world.rank() == 2 ? DType::kBF16 : DType::kF32;
    Tensor in = Tensor::zeros({4, 8}, dtype);
    Tensor out = Tensor::empty({16, 8}, dtype);
    world.all_gather(in, out, 0);
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_TRUE(contains(log[r],
                         "all_gather: rank 2 sent bfloat16[4, 8], rank 0 sent "
                         "float32[4, 8]"))
        << "rank " << r << ": " << log[r];
  }
}

TEST(InProcessMismatch, ShapeDimRootAndKindMismatches) {
  struct Case {
    const char* name;
    std::function<void(Communicator&)> body;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"shape",
       [](Communicator& w) {
         const int64_t rows = w.rank() == 1 ? 5 : 3;
         Tensor in = Tensor::zeros({rows * w.size(), 2}, DType::kI32);
         Tensor out = Tensor::empty({rows, 2}, DType::kI32);
         w.reduce_scatter(in, out, 0);
       },
       "reduce_scatter: rank 1 sent int32[15, 2], rank 0 sent int32[9, 2]"},
      {"dim",
       [](Communicator& w) {
         Tensor in = Tensor::zeros({3, 3}, DType::kF32);
         Tensor out = Tensor::empty({3, 3}, DType::kF32);
         w.all_to_all(in, out, w.rank() == 2 ? 1 : 0);
       },
       "all_to_all: rank 2 used dim 1, rank 0 used dim 0"},
      {"root",
       [](Communicator& w) {
         Tensor t = Tensor::zeros({2}, DType::kI64);
         w.broadcast(t, w.rank() == 1 ? 2 : 0);
       },
       "broadcast: rank 1 used root 2, rank 0 used root 0"},
      {"kind",
       [](Communicator& w) {
         if (w.rank() == 1) {
           w.barrier();
         } else {
           Tensor t = Tensor::zeros({2}, DType::kF32);
           w.all_reduce(t);
         }
       },
       "collective mismatch: rank 1 called barrier, rank 0 called all_reduce"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto log = run_catching(3, c.body);
    for (int r = 0; r < 3; ++r) {
      EXPECT_TRUE(contains(log[r], c.expected)) << "rank " << r << ": " << log[r];
    }
  }
}

TEST(InProcessMismatch, GroupStaysUsableAfterACaughtMismatch) {
  run_with_deadline(kDeadline, "mismatch recovery", [] {
    run_inprocess_ranks(4, [](Communicator& world) {
      Tensor bad = Tensor::zeros({world.rank() == 3 ? 2 : 1}, DType::kF32);
      EXPECT_THROW(world.all_reduce(bad), Error);
      Tensor good = Tensor::empty({1}, DType::kF32);
      good.fill(1.0);
      world.all_reduce(good);
      EXPECT_EQ(good.data<float>()[0], 4.0f);
    });
  });
}

TEST(InProcessAbort, RankThrowingOutsideACollectiveAbortsTheOthers) {
  const int n = 5;
  ErrorLog log(n);
  const std::string error = launcher_error(n, [&](Communicator& world) {
    if (world.rank() == 3) throw Error("deliberate failure on rank 3");
    Tensor t = Tensor::zeros({8}, DType::kF32);
    try {
      world.all_reduce(t);
    } catch (const Error& e) {
      log.record(world.rank(), e.what());
      throw;
    }
  });
  EXPECT_EQ(error, "deliberate failure on rank 3");  // the original, not an "aborted" error
  for (int r = 0; r < n; ++r) {
    if (r == 3) continue;
    EXPECT_TRUE(contains(log.at(r),
                         "all_reduce: group aborted because rank 3 failed: "
                         "deliberate failure on rank 3"))
        << "rank " << r << ": " << log.at(r);
  }
}

TEST(InProcessAbort, FailureInsideASubGroupAbortsEveryGroupNowAndLater) {
  // World of 6 split into DCP groups {0,1,2} and {3,4,5}. Rank 4 fails with a bad argument
  // inside its group's collective; ranks of the other group wait in their own group, the
  // world, and later calls fail too.
  const int n = 6;
  ErrorLog first(n), later(n);
  const std::string error = launcher_error(n, [&](Communicator& world) {
    auto dcp = world.split(world.rank() / 3, world.rank());
    Tensor in = Tensor::zeros({6, 2}, DType::kF32);
    Tensor out = Tensor::empty({world.rank() == 4 ? 3 : 2, 2}, DType::kF32);  // wrong on 4
    try {
      dcp->reduce_scatter(in, out, 0);
      if (world.rank() < 3) dcp->barrier();  // the healthy group goes on, then waits
      world.barrier();
    } catch (const Error& e) {
      if (world.rank() == 4) throw;  // the failing rank's error must reach the launcher
      first.record(world.rank(), e.what());
    }
    try {
      dcp->barrier();
    } catch (const Error& e) {
      later.record(world.rank(), e.what());
    }
  });
  EXPECT_TRUE(contains(error, "reduce_scatter: output float32[3, 2] must have shape [2, 2]"))
      << error;
  for (int r = 0; r < n; ++r) {
    if (r == 4) continue;
    EXPECT_TRUE(contains(first.at(r), "group aborted because rank 4 failed"))
        << "rank " << r << ": " << first.at(r);
    EXPECT_TRUE(contains(later.at(r), "barrier: group aborted because rank 4 failed"))
        << "rank " << r << ": " << later.at(r);
  }
}

TEST(InProcessAbort, FirstOfSeveralFailuresIsRethrown) {
  // Rank 1 fails first; rank 2 fails after seeing the abort. The launcher reports rank 1's.
  const std::string error = launcher_error(3, [](Communicator& world) {
    if (world.rank() == 1) throw std::runtime_error("rank 1 broke");
    try {
      world.barrier();
    } catch (const Error&) {
      if (world.rank() == 2) throw std::logic_error("rank 2 broke later");
      throw;
    }
  });
  EXPECT_EQ(error, "rank 1 broke");
}

TEST(InProcessAbort, RankReturningEarlyFailsTheCollectiveItSkipped) {
  const std::string error = launcher_error(4, [](Communicator& world) {
    if (world.rank() == 2) return;  // skips the barrier
    world.barrier();
  });
  EXPECT_TRUE(contains(error, "rank 2 returned from its rank function without joining")) << error;
}

TEST(InProcessAbort, CrossedCollectiveOrderIsADeadlockError) {
  // Ranks 0 and 1 enter their pair's barrier and the world barrier in opposite orders;
  // ranks 2 and 3 wait in the world barrier. Nobody can proceed.
  const std::string error = launcher_error(4, [](Communicator& world) {
    auto pair = world.split(world.rank() / 2, world.rank());
    if (world.rank() == 0) {
      pair->barrier();
      world.barrier();
    } else {
      world.barrier();
      pair->barrier();
    }
  });
  EXPECT_TRUE(contains(error, "deadlock")) << error;
  EXPECT_TRUE(contains(error, "rank 0 waits in barrier")) << error;
}

TEST(InProcessAbort, NoHangWithMoreRanksThanCores) {
  // 12 ranks on few cores, all asleep in a collective when one fails.
  const std::string error = launcher_error(12, [](Communicator& world) {
    if (world.rank() == 11) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      throw Error("late failure");
    }
    Tensor t = Tensor::zeros({1000}, DType::kBF16);
    for (;;) world.all_reduce(t);
  });
  EXPECT_EQ(error, "late failure");
}

TEST(InProcessAbort, FailureAtARandomPointOfBusyTrafficNeverHangs) {
  // Ranks stream collectives on the world and on DCP pairs; one rank throws at a random
  // point, possibly while peers are mid-copy from its tensors. Every run must end with the
  // launcher rethrowing that rank's error. (Run under ASan/TSan this also checks that no
  // rank unwinds while another still reads its memory.)
  std::mt19937_64 rng(std::random_device{}());
  for (int round = 0; round < 20; ++round) {
    const int n = 2 + static_cast<int>(rng() % 5);
    const int victim = static_cast<int>(rng() % n);
    const int fail_at = static_cast<int>(rng() % 40);
    SCOPED_TRACE(fmt::format("n {} victim {} fail_at {}", n, victim, fail_at));
    const std::string error = launcher_error(n, [&](Communicator& world) {
      auto pair = world.split(world.rank() / 2, world.rank());
      for (int i = 0;; ++i) {
        if (world.rank() == victim && i == fail_at) throw Error("victim gives up");
        Tensor in = Tensor::empty({4096 * pair->size()}, DType::kF32);
        in.fill(1.0);
        Tensor out = Tensor::empty({4096}, DType::kF32);
        pair->reduce_scatter(in, out, 0);
        Tensor all = world.all_gather(out, 0);
        EXPECT_EQ(all.data<float>()[0], 2.0f);  // rank 0 sums over the pair {0, 1}
      }
    });
    EXPECT_EQ(error, "victim gives up");
  }
}

TEST(InProcessArguments, BadArgumentsNameTheValues) {
  run_with_deadline(kDeadline, "argument checks", [] {
    run_inprocess_ranks(3, [](Communicator& world) {
      Tensor in = Tensor::zeros({4, 5}, DType::kF32);
      Tensor wrong = Tensor::empty({4, 5}, DType::kF32);
      auto expect_error = [](const std::function<void()>& f, const std::string& text) {
        try {
          f();
          ADD_FAILURE() << "expected an error containing: " << text;
        } catch (const Error& e) {
          EXPECT_TRUE(contains(e.what(), text)) << e.what();
        }
      };
      expect_error([&] { world.all_gather(in, wrong, 0); },
                   "all_gather: output float32[4, 5] must have shape [12, 5]");
      expect_error([&] { world.all_gather(in, wrong, 2); }, "dim 2 is out of range");
      expect_error([&] { world.all_to_all(in, wrong, 1); },
                   "dim 1 of float32[4, 5] has size 5, which is not divisible by the group "
                   "size 3");
      expect_error([&] { world.reduce_scatter(in, wrong, 0); }, "not divisible");
      Tensor half = Tensor::zeros({3}, DType::kF16);
      expect_error([&] { world.all_reduce(half); }, "cannot sum float16");
      expect_error([&] { world.broadcast(in, 3); }, "root 3 is not a rank of this group");
      expect_error([&] { world.split(-1, 0); }, "color -1 is negative");
      Tensor other = Tensor::empty({12, 5}, DType::kI32);
      expect_error([&] { world.all_gather(in, other, 0); }, "must have the input's dtype");
      world.barrier();  // local argument errors left the group in step
    });
  });
  EXPECT_THROW(run_inprocess_ranks(0, [](Communicator&) {}), Error);
}

}  // namespace
}  // namespace ctxpar::testing
