// Registration of the `weft` subcommands; each add_* defines its options and callback.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "weft/data/datasets.h"

namespace weft::cli {

void add_bench(CLI::App& app);
void add_evaluate(CLI::App& app);  // saved_model_commands.cc, with add_predict
void add_predict(CLI::App& app);
void add_profile(CLI::App& app);
void add_report(CLI::App& app);
void add_server(CLI::App& app);
void add_info(CLI::App& app);
void add_inspect(CLI::App& app);
void add_launch(CLI::App& app);
void add_train(CLI::App& app);

// This very program (/proc/self/exe), so that a command can start itself; "weft" if unknown.
std::string self_program();

// --dataset as train and evaluate take it: fashion_mnist, cifar10, or a directory of
// Fashion-MNIST-style IDX files.
data::datasets::TrainTest load_dataset(const std::string& name);

}  // namespace weft::cli
