// `weft inspect CHECKPOINT [--verify]`: lists a checkpoint's variables (path, dtype, shape, bytes)
// and state blobs; --verify reads every tensor and blob, checks its CRC32C, and exits non-zero
// with one line per problem (file, tensor, offset). CHECKPOINT may also be a directory that
// train::Checkpoint saves into: the latest checkpoint its state file names is inspected.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "tools/weft/commands.h"
#include "weft/checkpoint/checkpoint_io.h"
#include "weft/core/errors.h"

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

}  // namespace

void add_inspect(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "inspect", "List a checkpoint's variables, shapes and dtypes; --verify checks every CRC32C");
  auto* path =
      cmd->add_option("CHECKPOINT", "Checkpoint directory (e.g. /tmp/ckpts/ckpt-1200)")->required();
  auto verify = std::make_shared<bool>(false);
  cmd->add_flag("--verify", *verify, "Read everything and check every checksum");
  cmd->callback([path, verify] {
    std::string dir = resolve(path->as<std::string>());
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
