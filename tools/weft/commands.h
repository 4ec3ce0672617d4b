// Registration of the `weft` subcommands; each add_* defines its options and callback.
#pragma once

#include <CLI/CLI.hpp>

namespace weft::cli {

void add_bench(CLI::App& app);
void add_info(CLI::App& app);
void add_inspect(CLI::App& app);
void add_launch(CLI::App& app);
void add_train(CLI::App& app);

}  // namespace weft::cli
