// Comparing continuations across parallel configurations (tests/sfa's Generation).
#pragma once

#include <string>

#include "greedy_generation.h"

namespace ctxpar::sfa_test {

// "" when got's greedy tokens equal want's, else a description of the first prompt that
// differs. For numerics that round the same way on every configuration (f32).
std::string token_mismatch(const Generation& got, const Generation& want);

// For rounded numerics (an int8 or bf16 o_proj), where an f32 rounding difference between
// configurations can become one rounding step: got ran with want's tokens forced (generate_on's
// `forced`), so each logits row compares the same position. "" when at every position each
// run's argmax lies among the other's top kTopLogits (vLLM's check_logprobs_close rule for
// quantized models, at 5 logprobs) and the median row deviation, max |got - want| / max |want|,
// is at most `tolerance`; else a description of the first violation. A greedy comparison
// cannot hold: a rounding step at an indexer near tie swaps one selected key and moves that
// one row by up to ~0.45 of max |logit| (measured: 21 of 4800 forced runs change an argmax,
// never past the other's third logit; median deviations up to 1.5e-3). A wrong weight, shard
// or exchange moves every row.
std::string logits_mismatch(const Generation& got, const Generation& want, double tolerance);

// The median over positions of max |got - want| / max |want| in a logits row (the rows of both
// at the same positions: got ran with want's tokens forced). Throws if the shapes differ.
double median_row_deviation(const Generation& got, const Generation& want);

inline constexpr int kTopLogits = 5;

// logits_mismatch's tolerance for an int8 or bf16 o_proj.
inline constexpr double kRoundedTolerance = 1e-2;

}  // namespace ctxpar::sfa_test
