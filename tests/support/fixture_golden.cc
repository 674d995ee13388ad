#include "fixture_golden.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace ctxpar::testing_support {

FixtureGolden load_fixture_golden(const std::string& dir) {
  std::ifstream in(dir + "/golden.json");
  if (!in) throw std::runtime_error("cannot open " + dir + "/golden.json");
  const auto j = nlohmann::json::parse(in);
  FixtureGolden g;
  g.prompts = j.at("prompts").get<std::vector<std::vector<int32_t>>>();
  g.logits = j.at("logits").get<std::vector<std::vector<std::vector<float>>>>();
  for (size_t p = 0; p < g.prompts.size(); ++p) {
    const auto positions = j.at("positions").at(p).get<std::vector<size_t>>();
    if (positions.size() != g.prompts[p].size() || g.logits.at(p).size() != positions.size()) {
      throw std::runtime_error(dir + "/golden.json does not store every position of prompt " +
                               std::to_string(p));
    }
  }
  return g;
}

}  // namespace ctxpar::testing_support
