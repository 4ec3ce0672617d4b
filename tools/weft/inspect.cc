// `weft inspect CHECKPOINT [--verify]`: lists a checkpoint's variables (path, dtype, shape, bytes)
// and state blobs; --verify reads every tensor and blob, checks its CRC32C, and exits non-zero
// with one line per problem (file, tensor, offset). CHECKPOINT may also be a directory that
// train::Checkpoint saves into: the latest checkpoint its state file names is inspected; or a
// saved model (weft/nn/saving.h): its layers, shapes and parameter counts, its compile settings,
// then its variables.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>

#include "tools/weft/commands.h"
#include "weft/checkpoint/checkpoint_io.h"
#include "weft/core/config_dict.h"
#include "weft/core/errors.h"
#include "weft/core/file_io.h"
#include "weft/nn/saving.h"

namespace weft::cli {
namespace {

namespace ckpt = weft::checkpoint;

// A directory train::Checkpoint saves into (no index.json, but a `checkpoint` state file) stands
// for the checkpoint its state file names as the latest.
std::string resolve(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string state_file = (fs::path(path) / "checkpoint").string();
  if (fs::exists(fs::path(path) / ckpt::kIndexFileName, ec) || !fs::exists(state_file, ec)) {
    return path;
  }
  std::ifstream in(state_file);
  nlohmann::json state = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  WEFT_CHECK(state.is_object() && state.contains("latest") && state["latest"].is_string(), DataLoss)
      << state_file << ": not a checkpoint state file (no \"latest\")";
  std::string latest = (fs::path(path) / state["latest"].get<std::string>()).string();
  std::printf("latest checkpoint in %s: %s\n", path.c_str(), latest.c_str());
  return latest;
}

void print_listing(const ckpt::CheckpointIndex& index) {
  uint64_t total = 0;
  size_t width = 4;
  for (const auto& t : index.tensors) width = std::max(width, t.path.size());
  for (const auto& s : index.state) width = std::max(width, s.name.size());
  std::printf("variables (%zu):\n", index.tensors.size());
  for (const auto& t : index.tensors) {
    // A slice (format v2) says where it lies in which tensor, and which writer's file holds it.
    std::string slice;
    if (t.global_shape) {
      slice = "  slice at " + shape_str(t.slice_offsets) + " of " + shape_str(*t.global_shape) +
              ", in " + t.shard;
    }
    std::printf("  %-*s  %-8s  %-16s  %12llu bytes%s\n", static_cast<int>(width), t.path.c_str(),
                std::string(dtype_name(t.dtype)).c_str(), shape_str(t.shape).c_str(),
                static_cast<unsigned long long>(t.length), slice.c_str());
    total += t.length;
  }
  std::printf("state (%zu):\n", index.state.size());
  for (const auto& s : index.state) {
    std::printf("  %-*s  %12llu bytes\n", static_cast<int>(width), s.name.c_str(),
                static_cast<unsigned long long>(s.length));
    total += s.length;
  }
  std::printf("format version %d, %zu shard(s), %llu bytes of data\n", index.format_version,
              index.shards.size(), static_cast<unsigned long long>(total));
}

// Each layer of the model's config, its class and its parameters (counted in the checkpoint):
// what can be said of a model whose layers this program cannot make.
void print_config_layers(const ConfigDict& model, const ckpt::CheckpointIndex& index) {
  std::printf("%-32s %-24s %12s\n", "Layer", "(type)", "Param #");
  int64_t total = 0;
  for (const ConfigDict& layer : model.get_dict("config").get_dicts("layers")) {
    std::string name = layer.get_dict("config").get_string("name", "?");
    int64_t params = 0;
    for (const auto& t : index.tensors) {
      if (t.path.rfind("model/" + name + "/", 0) != 0) continue;
      int64_t n = 1;
      for (int64_t d : t.global_shape ? *t.global_shape : t.shape) n *= d;
      params += n;
    }
    total += params;
    std::printf("%-32s %-24s %12lld\n", name.c_str(), layer.get_string("class_name").c_str(),
                static_cast<long long>(params));
  }
  std::printf("Total params: %lld\n", static_cast<long long>(total));
}

// A saved model's layers (Model::summary) and compile settings; returns its checkpoint's directory.
std::string describe_saved_model(const std::string& dir) {
  std::string variables = dir + "/" + nn::kSavedModelVariablesDir;
  std::optional<nn::Model> model;
  std::string unbuildable;
  try {
    model = nn::load_model(dir, {.compile = false});
  } catch (const InvalidArgument& e) {
    if (e.message().find("unknown layer class") == std::string::npos) throw;
    unbuildable = e.message();
  }
  ConfigDict file = ConfigDict::from_json(io::read_whole_file(dir + "/" + nn::kSavedModelFileName));
  std::printf("saved model %s (format version %lld, saved by weft %s)\n", dir.c_str(),
              static_cast<long long>(file.get_int("format_version")),
              file.get_string("weft_version", "?").c_str());
  if (model) {
    model->summary();
  } else {
    // Shapes come from building the model, which takes the program that registers its layers.
    std::printf("(output shapes unknown: %s)\n", unbuildable.c_str());
    print_config_layers(file.get_dict("model"), ckpt::read_index(variables));
  }
  if (file.is_null("compile")) {
    std::printf("not compiled (saved without its optimizer, loss and metrics)\n");
  } else {
    ConfigDict c = file.get_dict("compile");
    ConfigDict optimizer = c.get_dict("optimizer");
    std::string metrics;
    for (const std::string& m : c.get_strings("metrics"))
      metrics += (metrics.empty() ? "" : ", ") + m;
    std::printf("compiled with optimizer %s (learning_rate %s), loss %s, metrics [%s]\n",
                optimizer.get_string("class_name").c_str(),
                optimizer.get_dict("learning_rate").to_json().c_str(),
                c.get_dict("loss").get_string("name").c_str(), metrics.c_str());
  }
  return variables;
}

}  // namespace

void add_inspect(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "inspect",
      "Describe a saved model, or list a checkpoint's variables, shapes and dtypes; --verify "
      "checks every CRC32C");
  auto* path =
      cmd->add_option("CHECKPOINT",
                      "A checkpoint directory (e.g. /tmp/ckpts/ckpt-1200) or a saved model")
          ->required();
  auto verify = std::make_shared<bool>(false);
  cmd->add_flag("--verify", *verify, "Read everything and check every checksum");
  cmd->callback([path, verify] {
    std::string dir = resolve(path->as<std::string>());
    if (std::filesystem::exists(std::filesystem::path(dir) / nn::kSavedModelFileName)) {
      dir = describe_saved_model(dir);
    }
    if (!*verify) {
      print_listing(ckpt::read_index(dir));
      return;
    }
    ckpt::VerifyReport report = ckpt::verify_checkpoint(dir);
    if (report.index) print_listing(*report.index);
    std::fflush(stdout);
    for (const std::string& p : report.problems) std::fprintf(stderr, "weft: %s\n", p.c_str());
    WEFT_CHECK(report.ok, DataLoss)
        << dir << ": " << report.problems.size() << " problem(s) found, the checkpoint is damaged";
    std::printf("verified: every checksum matches (%zu tensors, %zu state blobs)\n",
                report.index->tensors.size(), report.index->state.size());
  });
}

}  // namespace weft::cli
