// builtin:tiny-deepseek-v32 under mpirun (registered with ctest as 4 processes): the greedy
// tokens of T = 4 ranks as processes — without DCP, and with N = T in both indexer modes — equal
// the in-process T = N = 1 run of rank 0. Exit status 0 when every configuration agrees.
#include <fmt/format.h>

#include <cstdio>
#include <random>

#include "ctxpar/comm/mpi_communicator.h"
#include "ctxpar/comm/mpi_session.h"
#include "ctxpar/core/error.h"
#include "greedy_generation.h"
#include "shared_seed.h"

namespace ctxpar::sfa_test {
namespace {

int run() {
  auto world = MpiCommunicator::world();
  const int t = world->size();
  const uint32_t seed = test_support::shared_seed(*world);
  std::mt19937 rng(seed);
  const model::ModelConfig config = model::resolve_model_config("builtin:tiny-deepseek-v32");
  const PromptSet prompts = make_prompts(rng);

  Generation want;
  if (world->rank() == 0) want = generate_inprocess(config, RunSpec{}, prompts);
  using Mode = attention::SfaIndexerMode;
  const RunSpec specs[] = {
      {t, 1, 16, 1, attention::DcpCommPlan::kAllGatherReduceScatter, Mode::kReplicated},
      {t, t, 16, 1, attention::DcpCommPlan::kAllToAll, Mode::kReplicated},
      {t, t, 16, 2, attention::DcpCommPlan::kAllGatherReduceScatter, Mode::kSharded},
      {t, t, 4, 4, attention::DcpCommPlan::kAllToAll, Mode::kSharded},
  };
  int failures = 0;
  for (const RunSpec& spec : specs) {
    const Generation got = generate_on(*world, config, spec, prompts);
    if (world->rank() != 0) continue;
    const bool same = got.finite && got.tokens == want.tokens;
    failures += same ? 0 : 1;
    std::fprintf(stderr, "%s %s (seed %lld)\n", same ? "[ OK ]" : "[FAIL]", spec.describe().c_str(),
                 static_cast<long long>(seed));
  }
  Tensor failed = Tensor::empty({1}, DType::kI32);
  failed.data<int32_t>()[0] = failures;
  world->broadcast(failed, 0);
  return failed.data<int32_t>()[0] == 0 ? 0 : 1;
}

}  // namespace
}  // namespace ctxpar::sfa_test

int main(int argc, char** argv) {
  ctxpar::MpiSession session(&argc, &argv);
  return ctxpar::run_or_abort_mpi([] { return ctxpar::sfa_test::run(); });
}
