// Runs a program to completion and captures what it printed, for CLI tests.
#pragma once

#include <string>
#include <vector>

namespace ctxpar::test {

struct CommandResult {
  int exit_status;  // exit code, or 128 + signal number if it was killed
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs program with args (no shell, so no quoting issues) and waits for it.
CommandResult run_command(const std::string& program, const std::vector<std::string>& args);

}  // namespace ctxpar::test
