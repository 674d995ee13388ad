// Comparing greedy continuations across parallel configurations (tests/sfa's Generation).
#pragma once

#include <string>

#include "greedy_generation.h"

namespace ctxpar::sfa_test {

// "" when got's tokens equal want's. With tie_tolerance > 0 (rounded numerics: an int8 or
// bf16 o_proj, where an f32 rounding difference can become one rounding step) a prompt may
// also leave the reference where the reference saw a near tie: its tokens equal up to the
// first difference, and there the reference's logits of the two tokens lie within
// tie_tolerance · max |logit| of each other (the prompt's comparison ends there). Otherwise
// a description of the first prompt that differs.
std::string token_mismatch(const Generation& got, const Generation& want, double tie_tolerance = 0);

}  // namespace ctxpar::sfa_test
