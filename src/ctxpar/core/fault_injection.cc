#include "ctxpar/core/fault_injection.h"

#include <cstdlib>
#include <new>
#include <optional>
#include <string>

#include "ctxpar/core/error.h"

namespace ctxpar {
namespace {

struct Fault {
  FaultPoint point;
  int rank;
  int64_t step;
};

std::optional<Fault> parse_fault(const char* text) {
  const std::string value = text;
  const std::string usage =
      "CTXPAR_TEST_FAULT='" + value +
      "' is not valid; use <point>:<rank>[:<step>] with point startup, load, oom, decode or "
      "sampler (test-only fault injection)";
  const size_t colon = value.find(':');
  CTXPAR_CHECK_INPUT(colon != std::string::npos, "{}", usage);
  const std::string name = value.substr(0, colon);
  Fault fault{FaultPoint::kStartup, 0, 0};
  if (name == "startup") {
    fault.point = FaultPoint::kStartup;
  } else if (name == "load") {
    fault.point = FaultPoint::kLoad;
  } else if (name == "oom") {
    fault.point = FaultPoint::kOutOfMemory;
  } else if (name == "decode") {
    fault.point = FaultPoint::kDecode;
  } else if (name == "sampler") {
    fault.point = FaultPoint::kSampler;
  } else {
    CTXPAR_INPUT_FAIL("{}", usage);
  }
  try {
    size_t used = 0;
    const std::string rest = value.substr(colon + 1);
    fault.rank = std::stoi(rest, &used);
    if (used < rest.size()) {
      CTXPAR_CHECK_INPUT(rest[used] == ':', "{}", usage);
      const std::string step = rest.substr(used + 1);
      fault.step = std::stoll(step, &used);
      CTXPAR_CHECK_INPUT(used == step.size(), "{}", usage);
    }
  } catch (const std::logic_error&) {
    CTXPAR_INPUT_FAIL("{}", usage);
  }
  CTXPAR_CHECK_INPUT(fault.rank >= 0 && fault.step >= 0, "{}", usage);
  return fault;
}

const std::optional<Fault>& requested_fault() {
  static const std::optional<Fault> fault = [] {
    const char* text = std::getenv("CTXPAR_TEST_FAULT");
    return text != nullptr && *text != '\0' ? parse_fault(text) : std::nullopt;
  }();
  return fault;
}

const char* point_name(FaultPoint point) {
  switch (point) {
    case FaultPoint::kStartup:
      return "start-up";
    case FaultPoint::kLoad:
      return "load";
    case FaultPoint::kOutOfMemory:
      return "load (out of memory)";
    case FaultPoint::kDecode:
      return "decode";
    case FaultPoint::kSampler:
      return "sampler";
  }
  return "?";
}

}  // namespace

void inject_test_fault(FaultPoint point, int rank, int64_t step) {
  const std::optional<Fault>& fault = requested_fault();
  if (!fault) [[likely]]
    return;
  if (fault->point != point || fault->rank != rank || fault->step != step) return;
  std::string message =
      fmt::format("fault injected by CTXPAR_TEST_FAULT at {} on rank {}", point_name(point), rank);
  if (point == FaultPoint::kDecode || point == FaultPoint::kSampler)
    message += fmt::format(" (step {})", step);
  switch (point) {
    case FaultPoint::kStartup:
      throw InputError(message);
    case FaultPoint::kOutOfMemory:
      throw std::bad_alloc();
    default:
      throw Error(message);
  }
}

}  // namespace ctxpar
