// ctxpar: Decode Context Parallel LLM inference. Dispatches to one subcommand per file.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "commands.h"
#include "ctxpar/comm/mpi_session.h"
#include "ctxpar/core/error.h"
#include "engine_flags.h"
#include "flag_aliases.h"

namespace {

int run(int argc, char** argv) {
  CLI::App app{"ctxpar: LLM inference with Decode Context Parallelism", "ctxpar"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "ctxpar 0.1.0");
  ctxpar::app::add_layout_command(app);
  ctxpar::app::add_generate_command(app);
  ctxpar::app::add_verify_command(app);
  ctxpar::app::add_plan_command(app);
  ctxpar::app::add_bench_command(app);

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
    if (ctxpar::app::is_output_rank()) std::fprintf(stderr, "ctxpar: error: %s\n", e.what());
    return 2;
  } catch (const ctxpar::Error& e) {
    if (ctxpar::app::is_output_rank()) std::fprintf(stderr, "ctxpar: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ctxpar: internal error: %s\n", e.what());
    return 1;
  }
  return ctxpar::app::exit_code();
}

}  // namespace

int main(int argc, char** argv) {
  // Under mpirun every process is one rank: MPI lives for the whole command. Every rank
  // validates the same flags, so a bad one fails all of them alike (rank 0 reports it).
  if (ctxpar::launched_by_mpirun()) {
    ctxpar::MpiSession mpi(&argc, &argv);
    return run(argc, argv);
  }
  return run(argc, argv);
}
