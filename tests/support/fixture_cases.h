// The (fixture, T, N) cases that parameterized tests run the transformers fixtures at
// (tests/fixtures): every requested shape the model's (T, N) rule takes.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "ctxpar/model/model_config.h"

namespace ctxpar::testing_support {

struct FixtureCase {
  std::string fixture;  // a folder of fixtures_dir
  int tp = 1;
  int dcp = 1;
};

// fixtures × shapes ((T, N) pairs), keeping those model::validate_for_parallel takes and, when
// given, `keep` accepts (it sees the fixture's config and T). Throws what reading a
// config.json throws.
std::vector<FixtureCase> fixture_cases(
    const std::string& fixtures_dir, const std::vector<std::string>& fixtures,
    const std::vector<std::pair<int, int>>& shapes,
    const std::function<bool(const model::ModelConfig&, int tp)>& keep = {});

// A case's test name: "tiny_llama_fixture_T2_N2".
std::string fixture_case_name(const FixtureCase& c);

}  // namespace ctxpar::testing_support
