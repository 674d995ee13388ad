// vLLM's spellings of flags that CLI11 does not read itself: the single-dash abbreviations of
// long flags (-tp, -dcp, -pp, -dp), and a config flag's keys given one by one
// (`--speculative-config.method mtp --speculative-config.num_speculative_tokens 1`).
#pragma once

#include <CLI/CLI.hpp>

namespace ctxpar::app {

// Parses argv into app after rewriting each abbreviation (alone, or as "-dcp=4") to its long
// flag (CLI11 would otherwise read "-dcp" as a bundle of one-letter flags), and the dotted keys
// of each `--NAME.KEY[.SUBKEY] VALUE` (or `=VALUE`) into one `--NAME JSON` where the first stood,
// as vLLM merges them: a VALUE that parses as JSON is that value, else a string. Arguments after
// "--" are left alone. Throws what CLI::App::parse throws, or CLI::ParseError for a dotted flag
// without a value.
void parse_with_flag_aliases(CLI::App& app, int argc, char** argv);

}  // namespace ctxpar::app
