// builtin:tiny-deepseek-v32 under mpirun (registered with ctest as 4 processes): the greedy
// tokens of T = 4 ranks as processes in the two DSA-CP modes — N = 1 and N = T, with the
// sequence-parallel layers and the int8 o_proj on some — equal the in-process native run of
// rank 0 (T = N = 1, the same o_proj; int8: the logits within kRoundedTolerance with the
// reference's tokens forced). Exit status 0 when every configuration agrees.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <random>

#include "ctxpar/comm/mpi_communicator.h"
#include "ctxpar/comm/mpi_session.h"
#include "ctxpar/core/error.h"
#include "greedy_generation.h"
#include "same_tokens.h"
#include "shared_seed.h"

namespace ctxpar::sfa_test {
namespace {

// Rank 0's continuations (kDecodeSteps tokens per prompt) on every rank.
ForcedTokens broadcast_tokens(Communicator& world, const ForcedTokens& mine, size_t prompts) {
  Tensor t = Tensor::zeros({static_cast<int64_t>(prompts), kDecodeSteps}, DType::kI32);
  if (world.rank() == 0) {
    for (size_t i = 0; i < prompts; ++i)
      std::copy(mine[i].begin(), mine[i].end(), t.data<int32_t>() + i * kDecodeSteps);
  }
  world.broadcast(t, 0);
  ForcedTokens all(prompts);
  for (size_t i = 0; i < prompts; ++i) {
    const int32_t* row = t.data<int32_t>() + i * kDecodeSteps;
    all[i].assign(row, row + kDecodeSteps);
  }
  return all;
}

int run() {
  auto world = MpiCommunicator::world();
  const int t = world->size();
  const uint32_t seed = test_support::shared_seed(*world);
  std::mt19937 rng(seed);
  const model::ModelConfig config = model::resolve_model_config("builtin:tiny-deepseek-v32");
  const PromptSet prompts = make_prompts(rng);

  using Mode = attention::SfaIndexerMode;
  using Plan = attention::DcpCommPlan;
  RunSpec specs[] = {
      {t, 1, 16, 1, Plan::kAllGatherReduceScatter, Mode::kReplicated},
      {t, t, 16, 16, Plan::kAllToAll, Mode::kReplicated},
      {t, t, 16, 1, Plan::kAllGatherReduceScatter, Mode::kSharded},
      {t, t, 16, 16, Plan::kAllGatherReduceScatter, Mode::kReplicated},
  };
  for (RunSpec& s : specs) s.dsa_cp = true;
  specs[1].sequence_parallel = specs[2].sequence_parallel = true;
  specs[3].o_proj_quant = model::OProjQuant::kInt8;

  int failures = 0;
  for (const RunSpec& spec : specs) {
    Generation want;
    if (world->rank() == 0) {
      RunSpec native;
      native.o_proj_quant = spec.o_proj_quant;
      want = generate_inprocess(config, native, prompts);
    }
    // An int8 o_proj runs with the reference's tokens forced and is compared by its logits
    // (same_tokens.h). Only rank 0 holds the reference: the tokens go to every rank.
    const bool rounded = spec.o_proj_quant != model::OProjQuant::kNone;
    ForcedTokens forced;
    if (rounded) forced = broadcast_tokens(*world, want.tokens, prompts.prompts.size());
    const Generation got = generate_on(*world, config, spec, prompts, rounded ? &forced : nullptr);
    if (world->rank() != 0) continue;
    const std::string mismatch = !got.finite ? "non-finite logits"
                                 : rounded   ? logits_mismatch(got, want, kRoundedTolerance)
                                             : token_mismatch(got, want);
    failures += mismatch.empty() ? 0 : 1;
    std::fprintf(stderr, "%s %s (seed %lld) %s\n", mismatch.empty() ? "[ OK ]" : "[FAIL]",
                 spec.describe().c_str(), static_cast<long long>(seed), mismatch.c_str());
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
