// Shared helpers of the chat template tests: the committed jinja2 goldens
// (tests/fixtures/chat_templates, made by tools/make_chat_template_fixtures.py) and the fixed
// clock those goldens were rendered with.
#pragma once

#include <ctime>
#include <string>

#include <nlohmann/json.hpp>

#include "ctxpar/tokenizer/chat_template/chat_template.h"

namespace ctxpar::chat_template::testing {

// tests/fixtures/chat_templates/<name>, parsed keeping key order.
nlohmann::ordered_json load_fixture_json(const std::string& name);
// The text of tests/fixtures/chat_templates/<relative_path>.
std::string read_fixture_text(const std::string& relative_path);

// 2024-07-26 13:45:07, the FIXED_NOW of the fixture script, as strftime_now() sees it.
std::tm fixed_now();
RenderOptions fixed_clock_options();

// A gtest-safe name: letters, digits and '_' only.
std::string test_name(const std::string& text);

}  // namespace ctxpar::chat_template::testing
