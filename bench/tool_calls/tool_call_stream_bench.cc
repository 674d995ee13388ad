// Streamed tool calls: what the HTTP worker spends per delta turning a long call (a 40 KB file
// written as one string argument, 4 bytes a delta) into argument pieces, for each parser that
// streams calls. hermes feeds an incremental JSON reader; qwen3_coder, glm47 and deepseek_v32
// re-cut the open block each delta and, while the text grows inside one string value, only
// escape the new text (block_call_stream.h). The floor beside them is a copy of the block so
// far per delta, the least any parser that looks at the whole open block does. items_per_second
// counts deltas.
//
// Run: build/bench/tool_calls/tool_call_stream_bench [benchmark flags]
#include <benchmark/benchmark.h>

#include <nlohmann/json.hpp>
#include <string>

#include "ctxpar/server/tool_call_parser.h"

namespace ctxpar::server {
namespace {

constexpr size_t kDeltaBytes = 4;

const nlohmann::json& tools() {
  static const nlohmann::json t = nlohmann::json::parse(R"([{"type": "function", "function": {
      "name": "write_file", "parameters": {"type": "object", "properties": {
      "path": {"type": "string"}, "content": {"type": "string"}}}}}])");
  return t;
}

std::string file() {
  std::string f;
  while (f.size() < 40000) f += "    int total = add(first, \"second\");\n";
  return f;
}

// The model's text of one call writing file() in `parser`'s format.
std::string call_text(ToolCallParser parser) {
  const std::string f = file();
  switch (parser) {
    case ToolCallParser::kHermes:
      return "<tool_call>\n{\"name\": \"write_file\", \"arguments\": " +
             nlohmann::json{{"path", "a.cc"}, {"content", f}}.dump() + "}\n</tool_call>";
    case ToolCallParser::kQwen3Coder:
      return "<tool_call>\n<function=write_file>\n<parameter=path>\na.cc\n</parameter>\n"
             "<parameter=content>\n" +
             f + "\n</parameter>\n</function>\n</tool_call>";
    case ToolCallParser::kGlm47:
      return "<tool_call>write_file<arg_key>path</arg_key><arg_value>a.cc</arg_value>"
             "<arg_key>content</arg_key><arg_value>" +
             f + "</arg_value></tool_call>";
    default:
      return "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"write_file\">\n"
             "<｜DSML｜parameter name=\"path\" string=\"true\">a.cc</｜DSML｜parameter>\n"
             "<｜DSML｜parameter name=\"content\" string=\"true\">" +
             f + "</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>";
  }
}

void BM_StreamCall(benchmark::State& state, ToolCallParser parser) {
  const std::string text = call_text(parser);
  size_t deltas = 0, argument_bytes = 0;
  for (auto _ : state) {
    ToolCallStream stream(parser, &tools());
    for (size_t at = 0; at < text.size(); at += kDeltaBytes) {
      const ToolCallStream::Delta d = stream.add(std::string_view(text).substr(at, kDeltaBytes),
                                                 at + kDeltaBytes >= text.size());
      for (const ToolCallPiece& p : d.calls) argument_bytes += p.arguments.size();
      ++deltas;
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(deltas));
  state.counters["arg_bytes_per_call"] =
      static_cast<double>(argument_bytes) / static_cast<double>(state.iterations());
}

// The floor: a copy of the block so far, per delta.
void BM_CopyPerDelta(benchmark::State& state) {
  const std::string text = call_text(ToolCallParser::kQwen3Coder);
  size_t deltas = 0;
  for (auto _ : state) {
    std::string held;
    for (size_t at = 0; at < text.size(); at += kDeltaBytes) {
      std::string buf = held + text.substr(at, kDeltaBytes);
      benchmark::DoNotOptimize(buf.data());
      held = std::move(buf);
      ++deltas;
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(deltas));
}

BENCHMARK_CAPTURE(BM_StreamCall, hermes, ToolCallParser::kHermes)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_StreamCall, qwen3_coder, ToolCallParser::kQwen3Coder)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_StreamCall, glm47, ToolCallParser::kGlm47)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_StreamCall, deepseek_v32, ToolCallParser::kDeepSeekV32)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CopyPerDelta)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ctxpar::server

BENCHMARK_MAIN();
