#include "chat_template/fixtures.h"

#include <fstream>
#include <sstream>

#include "ctxpar/core/error.h"

namespace ctxpar::chat_template::testing {

std::string read_fixture_text(const std::string& relative_path) {
  const std::string path = std::string(CTXPAR_FIXTURES_DIR) + "/chat_templates/" + relative_path;
  std::ifstream in(path, std::ios::binary);
  CTXPAR_CHECK(in.good(), "cannot open fixture {}", path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

nlohmann::ordered_json load_fixture_json(const std::string& name) {
  return nlohmann::ordered_json::parse(read_fixture_text(name));
}

std::tm fixed_now() {
  std::tm t{};
  t.tm_year = 2024 - 1900;
  t.tm_mon = 6;
  t.tm_mday = 26;
  t.tm_hour = 13;
  t.tm_min = 45;
  t.tm_sec = 7;
  // timegm fills tm_wday / tm_yday from the date (UTC, so no time zone shifts it).
  const std::time_t seconds = timegm(&t);
  std::tm out{};
  gmtime_r(&seconds, &out);
  return out;
}

RenderOptions fixed_clock_options() {
  RenderOptions options;
  options.now = fixed_now;
  return options;
}

std::string test_name(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    out.push_back(ok ? c : '_');
  }
  return out;
}

}  // namespace ctxpar::chat_template::testing
