// ctxpar: Decode Context Parallel LLM inference. Dispatches to one subcommand per file.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "commands.h"
#include "ctxpar/core/error.h"
#include "flag_aliases.h"

int main(int argc, char** argv) {
  CLI::App app{"ctxpar: LLM inference with Decode Context Parallelism", "ctxpar"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "ctxpar 0.1.0");
  ctxpar::app::add_layout_command(app);

  try {
    ctxpar::app::parse_with_flag_aliases(app, argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Bad flags: one line naming what is wrong, status 2 like every other invalid input.
    std::fprintf(stderr, "ctxpar: error: %s\n", e.what());
    return 2;
  } catch (const ctxpar::Error& e) {
    std::fprintf(stderr, "ctxpar: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ctxpar: internal error: %s\n", e.what());
    return 1;
  }
  return ctxpar::app::exit_code();
}
