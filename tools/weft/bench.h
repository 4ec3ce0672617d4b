// What the `weft bench` subcommands share: each runs itself as a local cluster and collects the
// results its chief writes to a file.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace weft::cli {

// Runs `command` + " --output FILE" through the shell, FILE a temporary file, and returns what
// the command wrote there ("" if nothing); `status` is its exit status.
std::string run_with_output_file(const std::string& command, int& status);

// `weft bench ps` (bench_ps.cc), a subcommand of `bench`.
void add_bench_ps(CLI::App& bench);

}  // namespace weft::cli
