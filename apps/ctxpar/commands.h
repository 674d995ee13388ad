// Subcommands of the `ctxpar` command. Each add_* registers one subcommand on the app; its
// callback throws ctxpar::Error on bad input, which main turns into exit status 2.
#pragma once

#include <CLI/CLI.hpp>

namespace ctxpar::app {

// Set by a subcommand's callback; main returns it.
inline int& exit_code() {
  static int code = 0;
  return code;
}

void add_layout_command(CLI::App& app);     // layout_command.cc
void add_generate_command(CLI::App& app);   // generate_command.cc
void add_verify_command(CLI::App& app);     // verify_command.cc
void add_plan_command(CLI::App& app);       // plan_command.cc
void add_bench_command(CLI::App& app);      // bench_command.cc
void add_tokenize_commands(CLI::App& app);  // tokenize_command.cc: tokenize, detokenize
void add_serve_command(CLI::App& app);      // serve_command.cc

}  // namespace ctxpar::app
