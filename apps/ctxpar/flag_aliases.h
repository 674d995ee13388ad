// vLLM's single-dash abbreviations of long flags (-tp, -dcp, -pp, -dp).
#pragma once

#include <CLI/CLI.hpp>

namespace ctxpar::app {

// Parses argv into app after rewriting each abbreviation (alone, or as "-dcp=4") to its long
// flag. CLI11 would otherwise read "-dcp" as a bundle of one-letter flags. Arguments after
// "--" are left alone. Throws what CLI::App::parse throws.
void parse_with_flag_aliases(CLI::App& app, int argc, char** argv);

}  // namespace ctxpar::app
