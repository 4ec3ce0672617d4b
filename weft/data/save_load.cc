// Dataset::save, load and snapshot (tf.data.experimental.save / load / snapshot) over weft's
// snapshot format (internal/snapshot_io.h).
#include <algorithm>
#include <cctype>
#include <filesystem>

#include "weft/core/config.h"
#include "weft/data/internal/snapshot_io.h"

namespace weft::data {
namespace {

using namespace internal;  // NOLINT(google-build-using-namespace): the node factories
namespace fs = std::filesystem;

// A loaded dataset: the reader's pipeline, known to hold the saved count with the default reader.
class LoadNode : public Node {
 public:
  LoadNode(NodePtr reader, std::string description, int64_t cardinality)
      : reader_(std::move(reader)),
        description_(std::move(description)),
        cardinality_(cardinality) {}
  std::unique_ptr<Reader> make_reader() const override { return reader_->make_reader(); }
  int64_t cardinality() const override { return cardinality_; }
  std::string describe() const override { return description_; }

 private:
  NodePtr reader_;
  std::string description_;
  int64_t cardinality_;
};

bool spec_matches(const std::vector<TensorSpec>& given, const std::vector<TensorSpec>& saved) {
  if (given.size() != saved.size()) return false;
  for (size_t i = 0; i < given.size(); ++i) {
    if (given[i].dtype != saved[i].dtype || given[i].shape.size() != saved[i].shape.size()) {
      return false;
    }
    for (size_t d = 0; d < given[i].shape.size(); ++d) {
      const int64_t a = given[i].shape[d], b = saved[i].shape[d];
      if (a != -1 && b != -1 && a != b) return false;
    }
  }
  return true;
}

// 16 hex digits: the name of a run's directory.
bool is_run_id(const std::string& name) {
  return name.size() == 16 &&
         std::all_of(name.begin(), name.end(), [](char c) { return std::isxdigit(c) != 0; });
}

}  // namespace

void Dataset::save(const std::string& path, SaveOptions options) const {
  WEFT_CHECK(!path.empty(), InvalidArgument) << "Dataset::save: the path is empty";
  std::error_code ec;
  fs::create_directories(path, ec);
  WEFT_CHECK(!ec, FailedPrecondition)
      << "Dataset::save: cannot create " << path << ": " << ec.message();
  SnapshotMetadata m;
  m.pipeline = describe();
  m.compression =
      options.compression == Compression::kGzip ? Compression::kGzip : Compression::kNone;
  m.run_id = new_run_id();
  const int64_t round_robin = std::max(1, config::num_threads());
  const std::string run_dir = path + "/" + m.run_id;
  try {
    SnapshotWriter writer(path, m.run_id, m.compression);
    int64_t i = 0;
    for (const Element& e : *this) {
      const int64_t shard = options.shard_func ? options.shard_func(e) : i % round_robin;
      WEFT_CHECK(shard >= 0, InvalidArgument)
          << "Dataset::save: shard_func gave " << shard << " for element " << i
          << "; expected a shard id >= 0";
      widen_spec(m.element_spec, e, i);
      writer.write(shard, e);
      ++i;
    }
    writer.close_chunks();
    m.shards = writer.shards();
    m.num_elements = i;
    m.finalized = true;
    write_metadata(path, m);
  } catch (...) {
    fs::remove_all(run_dir, ec);  // the previous save, if any, stays as it was
    throw;
  }
  // The runs of earlier saves are no longer referenced.
  for (const fs::directory_entry& d : fs::directory_iterator(path, ec)) {
    const std::string name = d.path().filename().string();
    if (name != m.run_id && is_run_id(name) && d.is_directory(ec)) fs::remove_all(d.path(), ec);
  }
}

Dataset Dataset::load(const std::string& path, LoadOptions options) {
  std::optional<SnapshotMetadata> m = read_metadata(path);
  WEFT_CHECK(m.has_value(), FailedPrecondition)
      << "Dataset::load: " << metadata_path(path)
      << " does not exist; expected a directory written by Dataset::save";
  WEFT_CHECK(m->finalized, FailedPrecondition)
      << "Dataset::load: " << path << " holds an unfinished snapshot, not a finished save";
  if (options.compression) {
    const Compression given =
        *options.compression == Compression::kGzip ? Compression::kGzip : Compression::kNone;
    WEFT_CHECK(given == m->compression, InvalidArgument)
        << "Dataset::load: compression " << compression_name(*options.compression)
        << " was given, but " << path << " was saved with " << compression_name(m->compression);
  }
  if (!options.element_spec.empty()) {
    WEFT_CHECK(spec_matches(options.element_spec, m->element_spec), InvalidArgument)
        << "Dataset::load: element_spec " << spec_str(options.element_spec) << " was given, but "
        << path << " holds elements " << spec_str(m->element_spec);
  }
  std::vector<Dataset> shards;
  for (int64_t id : m->shards) {
    shards.emplace_back(make_snapshot_shard_node(shard_dir(path, m->run_id, id), m->compression));
  }
  std::string description = "load(\"" + path + "\", run=" + m->run_id;
  if (options.reader_func) {
    Dataset read = options.reader_func(shards);
    return Dataset(std::make_shared<LoadNode>(
        read.node(), description + ", reader_func=" + read.describe() + ")", read.cardinality()));
  }
  // Element i went to shard i % n, so taking one element of each shard in turn restores the
  // order, whatever the machine.
  const auto n = static_cast<int64_t>(shards.size());
  Dataset read = Dataset::range(n).interleave(
      [shards](const Element& e) { return shards[static_cast<size_t>(e[0].item<int64_t>())]; },
      {.cycle_length = std::max<int64_t>(n, 1),
       .block_length = 1,
       .num_parallel_calls = std::clamp<int64_t>(config::num_threads(), 1, std::max<int64_t>(n, 1)),
       .deterministic = true});
  return Dataset(std::make_shared<LoadNode>(read.node(), description + ")", m->num_elements));
}

Dataset Dataset::snapshot(const std::string& path, SnapshotOptions options) const {
  return derived(make_snapshot_node(node_, path, options));
}

}  // namespace weft::data
