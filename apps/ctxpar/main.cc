// ctxpar: Decode Context Parallel LLM inference. Dispatches to one subcommand per file.
//
// Exit status: 0 success, 1 `verify` found a disagreement, 2 invalid input (flags, files,
// prompts: the message says what to change), 3 an internal error (the message ends in the
// source location) or out of memory.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <new>

#include "commands.h"
#include "ctxpar/comm/group_agreement.h"
#include "ctxpar/comm/mpi_session.h"
#include "ctxpar/core/error.h"
#include "engine_flags.h"
#include "flag_aliases.h"

namespace {

constexpr int kInputErrorStatus = 2;
constexpr int kInternalErrorStatus = 3;

int run(int argc, char** argv) {
  CLI::App app{"ctxpar: LLM inference with Decode Context Parallelism", "ctxpar"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "ctxpar 0.1.0");
  ctxpar::app::add_layout_command(app);
  ctxpar::app::add_generate_command(app);
  ctxpar::app::add_verify_command(app);
  ctxpar::app::add_plan_command(app);
  ctxpar::app::add_bench_command(app);
  ctxpar::app::add_tokenize_commands(app);
  ctxpar::app::add_serve_command(app);

  const bool output_rank = ctxpar::app::is_output_rank();
  const bool under_mpi = ctxpar::launched_by_mpirun();
  try {
    ctxpar::app::parse_with_flag_aliases(app, argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Bad flags are the same on every rank: one line naming what is wrong.
    if (output_rank) std::fprintf(stderr, "ctxpar: error: %s\n", e.what());
    return kInputErrorStatus;
  } catch (const ctxpar::GroupFailure& e) {
    // Every rank has this failure (they agreed on it): rank 0 reports it for all.
    if (output_rank) std::fprintf(stderr, "ctxpar: error: %s\n", e.what());
    return e.input_error() ? kInputErrorStatus : kInternalErrorStatus;
  } catch (const ctxpar::InputError& e) {
    if (under_mpi) throw;  // only this rank may know: run_or_abort_mpi stops the job
    std::fprintf(stderr, "ctxpar: error: %s\n", e.what());
    return kInputErrorStatus;
  } catch (const std::bad_alloc&) {
    if (under_mpi) throw;
    std::fprintf(stderr, "ctxpar: error: out of memory (std::bad_alloc)\n");
    return kInternalErrorStatus;
  } catch (const std::exception& e) {
    if (under_mpi) throw;
    std::fprintf(stderr, "ctxpar: error: %s\n", e.what());
    return kInternalErrorStatus;
  }
  return ctxpar::app::exit_code();
}

}  // namespace

int main(int argc, char** argv) {
  // Under mpirun every process is one rank: MPI lives for the whole command, and an error
  // that only some ranks hit ends the whole job with that rank's message.
  if (ctxpar::launched_by_mpirun()) {
    ctxpar::MpiSession mpi(&argc, &argv);
    return ctxpar::run_or_abort_mpi([&] { return run(argc, argv); }, "ctxpar: error: ");
  }
  return run(argc, argv);
}
