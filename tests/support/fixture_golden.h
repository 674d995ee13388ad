// The golden.json of a transformers model fixture (tests/fixtures/NOTES.md): its prompts and
// the float32 logits transformers computed at every position of each.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ctxpar::testing_support {

struct FixtureGolden {
  std::vector<std::vector<int32_t>> prompts;
  std::vector<std::vector<std::vector<float>>> logits;  // [prompt][position][vocab]
};

// Reads dir/golden.json; throws (std::exception) when it is missing or malformed, or when it
// does not store every position of every prompt.
FixtureGolden load_fixture_golden(const std::string& dir);

}  // namespace ctxpar::testing_support
