#include "shared_seed.h"

#include "seeded_rng.h"

namespace ctxpar::test_support {

uint32_t shared_seed(Communicator& world) {
  Tensor seed = Tensor::empty({1}, DType::kI64);
  seed.data<int64_t>()[0] = world.rank() == 0 ? test_seed() : 0;
  world.broadcast(seed, 0);
  return static_cast<uint32_t>(seed.data<int64_t>()[0]);
}

}  // namespace ctxpar::test_support
