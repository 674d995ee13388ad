#include "fixture_cases.h"

#include <fmt/format.h>
#include <algorithm>

#include "ctxpar/core/error.h"
#include "ctxpar/model/parallel_validation.h"

namespace ctxpar::testing_support {

std::vector<FixtureCase> fixture_cases(
    const std::string& fixtures_dir, const std::vector<std::string>& fixtures,
    const std::vector<std::pair<int, int>>& shapes,
    const std::function<bool(const model::ModelConfig&, int tp)>& keep) {
  std::vector<FixtureCase> out;
  for (const std::string& f : fixtures) {
    const model::ModelConfig config =
        model::load_model_config(fixtures_dir + "/" + f + "/config.json");
    for (const auto& [tp, dcp] : shapes) {
      if (keep && !keep(config, tp)) continue;
      try {
        model::validate_for_parallel(config, tp, dcp);
      } catch (const Error&) {
        continue;  // a shape the model cannot take; the others cover the path
      }
      out.push_back({f, tp, dcp});
    }
  }
  return out;
}

std::string fixture_case_name(const FixtureCase& c) {
  std::string name = fmt::format("{}_T{}_N{}", c.fixture, c.tp, c.dcp);
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

}  // namespace ctxpar::testing_support
