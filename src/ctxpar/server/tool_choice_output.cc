#include "ctxpar/server/tool_choice_output.h"

#include "ctxpar/server/openai_responses.h"
#include "ctxpar/server/python_json.h"

namespace ctxpar::server {
namespace {

std::string call_id() {
  return "chatcmpl-tool-" + random_hex(32);
}

bool blank(std::string_view text) {
  return text.find_first_not_of(" \t\n\r") == std::string_view::npos;
}

nlohmann::json call_json(const ToolCall& call, int index) {
  return {{"index", index},
          {"id", call.id},
          {"type", "function"},
          {"function", {{"name", call.name}, {"arguments", call.arguments}}}};
}

}  // namespace

std::vector<ToolCall> forced_tool_calls(ForcedToolChoice choice, const std::string& name,
                                        std::string_view text) {
  std::vector<ToolCall> calls;
  if (choice == ForcedToolChoice::kNamed) {
    if (!blank(text)) calls.push_back({call_id(), name, std::string(text)});
  } else if (choice == ForcedToolChoice::kRequired) {
    const auto list = nlohmann::ordered_json::parse(text, nullptr, false);
    if (list.is_discarded() || !list.is_array()) return {};
    for (const auto& item : list) {
      if (!item.is_object() || !item.contains("name") || !item["name"].is_string()) return {};
      const auto params = item.contains("parameters") ? item["parameters"] : nullptr;
      calls.push_back({call_id(), item["name"].get<std::string>(), python_json_text(params)});
    }
  }
  return calls;
}

nlohmann::json ForcedToolStream::add(std::string_view text, bool finished) {
  nlohmann::json out = nlohmann::json::array();
  if (choice_ == ForcedToolChoice::kNamed) {
    if (text.empty()) return out;
    if (sent_ == 0) {
      out.push_back(call_json({call_id(), name_, std::string(text)}, 0));
      sent_ = 1;
    } else {
      out.push_back({{"index", 0}, {"function", {{"arguments", std::string(text)}}}});
    }
  } else if (choice_ == ForcedToolChoice::kRequired) {
    text_ += text;
    read_array(out);
    if (finished) finish_array(out);
  }
  return out;
}

void ForcedToolStream::read_array(nlohmann::json& out) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (at_ < text_.size()) {
    const char c = text_[at_];
    switch (array_) {
      case Array::kOpen:
      case Array::kItemStart:
      case Array::kItemClose:
      case Array::kAfterItem:
        if (space(c)) {
          ++at_;
          continue;
        }
        if (array_ == Array::kOpen && c == '[') {
          array_ = Array::kItemStart;
        } else if (array_ == Array::kItemStart && c == '{') {
          item_.emplace("parameters");
          item_at_ = at_;
          item_fed_ = 0;
          array_ = Array::kItem;
          continue;  // the item's text begins with its '{'
        } else if (array_ == Array::kItemClose && c == '}') {
          array_ = Array::kAfterItem;
        } else if (array_ == Array::kAfterItem && c == ',') {
          array_ = Array::kItemStart;
        } else if (array_ == Array::kAfterItem && c == ']') {
          array_ = Array::kDone;
        } else {
          array_ = Array::kStopped;  // not the grammar's shape: the end sends what is left
        }
        ++at_;
        continue;
      case Array::kItem: {
        NamedCallStream::Piece p = item_->add(std::string_view(text_).substr(item_at_ + item_fed_));
        item_fed_ = text_.size() - item_at_;
        if (p.named) {
          nlohmann::json function = {{"name", item_->name()}};
          if (!p.arguments.empty()) function["arguments"] = p.arguments;
          out.push_back({{"index", sent_},
                         {"id", call_id()},
                         {"type", "function"},
                         {"function", std::move(function)}});
          streamed_.push_back(p.arguments);
          ++sent_;
        } else if (!p.arguments.empty()) {
          out.push_back({{"index", sent_ - 1}, {"function", {{"arguments", p.arguments}}}});
          streamed_.back() += p.arguments;
        }
        if (!item_->arguments_done()) {
          at_ = text_.size();
          return;
        }
        at_ = item_at_ + item_->arguments_end();
        array_ = Array::kItemClose;
        continue;
      }
      case Array::kDone:
      case Array::kStopped:
        return;
    }
  }
}

void ForcedToolStream::finish_array(nlohmann::json& out) {
  const std::vector<ToolCall> calls = forced_tool_calls(choice_, name_, text_);
  for (size_t k = 0; k < calls.size(); ++k) {
    if (k >= streamed_.size()) {
      out.push_back(call_json(calls[k], sent_++));
      continue;
    }
    // The rest of a streamed call's arguments (when the whole continues what went out).
    const std::string& whole = calls[k].arguments;
    const std::string& sent = streamed_[k];
    if (whole.size() > sent.size() && whole.compare(0, sent.size(), sent) == 0) {
      out.push_back({{"index", static_cast<int>(k)},
                     {"function", {{"arguments", whole.substr(sent.size())}}}});
    }
  }
}

}  // namespace ctxpar::server
