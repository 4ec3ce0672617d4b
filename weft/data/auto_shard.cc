#include "weft/data/auto_shard.h"

#include "weft/data/internal/pipeline.h"

namespace weft::data {

std::shared_ptr<const Dataset::Node> Dataset::Node::shard_files(FileShard& shard) const {
  if (shard.unshardable.empty()) {
    std::string stage = describe();
    if (stage.size() > 120) stage = stage.substr(0, 60) + "..." + stage.substr(stage.size() - 57);
    shard.unshardable = "its stage " + stage + " reads no file list it can divide";
  }
  return nullptr;
}

namespace internal {

std::vector<NodePtr> shard_every_input(const std::vector<NodePtr>& inputs, FileShard& shard) {
  const bool rebatched = shard.rebatched;
  bool any = false;
  std::vector<NodePtr> out;
  for (const NodePtr& input : inputs) {
    shard.rebatched = rebatched;
    NodePtr rewritten = input->shard_files(shard);
    if (!rewritten) return {};
    any = any || shard.rebatched;
    out.push_back(std::move(rewritten));
  }
  shard.rebatched = any;
  return out;
}

int64_t sharded_batch_size(int64_t batch_size, bool outermost, FileShard& shard) {
  if (!outermost) return batch_size;
  // The same test on every worker (some would have no rows), so that all of them divide the
  // pipeline or none does.
  if (batch_size < shard.num_shards) {
    shard.unshardable = "its global batch of " + std::to_string(batch_size) +
                        " rows is smaller than the " + std::to_string(shard.num_shards) +
                        " workers";
    return 0;
  }
  return shard.local_rows(batch_size);
}

}  // namespace internal

std::optional<Dataset> shard_by_file(const Dataset& dataset, FileShard& shard) {
  std::shared_ptr<const Dataset::Node> node = dataset.node()->shard_files(shard);
  if (node && !shard.rebatched) {
    shard.unshardable = "no batch() stands above its file reader, so its elements are not "
                        "global batches to divide";
    node.reset();
  }
  if (!node) return std::nullopt;
  return Dataset(std::move(node)).with_options(dataset.options());
}

std::optional<Dataset> map_only_own_rows(
    const Dataset& dataset, std::function<std::pair<int64_t, int64_t>(int64_t)> rows) {
  std::shared_ptr<const Dataset::Node> node =
      internal::own_rows_node(dataset.node(), std::move(rows));
  if (!node) return std::nullopt;
  return Dataset(std::move(node)).with_options(dataset.options());
}

}  // namespace weft::data
