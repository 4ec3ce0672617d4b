// weft's on-disk format of Dataset::save / load: DIR/snapshot.metadata, a JSON description of the
// run that holds the data, and DIR/<run_id>/<shard:08d>.shard/<chunk:08d>.snapshot files of
// TFRecord-framed records (CRC-checked, seekable by offset), each one element as an iterator
// state writes it, deflated on its own with kGzip so that offsets stay seekable. A save writes a
// new run, then replaces the metadata atomically, so a save that fails leaves the previous one
// readable. This is weft's own format, not TF's (whose layout io.py calls an implementation
// detail).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "weft/core/file_io.h"
#include "weft/data/internal/pipeline.h"

namespace weft::data::internal {

const char* compression_name(Compression c);

struct SnapshotMetadata {
  int64_t version = 1;
  std::string pipeline;  // describe() of what was saved
  std::vector<TensorSpec> element_spec;
  Compression compression = Compression::kNone;
  std::vector<int64_t> shards;  // the shard ids written, ascending
  int64_t num_elements = 0;
  std::string run_id;
  bool finalized = false;
};

std::string metadata_path(const std::string& dir);
// nullopt when there is no metadata file; DataLoss naming the file when it is damaged.
std::optional<SnapshotMetadata> read_metadata(const std::string& dir);
void write_metadata(const std::string& dir, const SnapshotMetadata& m);
std::string shard_dir(const std::string& dir, const std::string& run_id, int64_t shard);
// 16 hex digits, random.
std::string new_run_id();

// Appends elements to one run's shards, a chunk file per shard at a time.
class SnapshotWriter {
 public:
  SnapshotWriter(std::string dir, std::string run_id, Compression compression);
  void write(int64_t shard, const Element& e);
  // Commits every shard's open chunk; the shard's next write starts the next chunk.
  void close_chunks();
  std::vector<int64_t> shards() const;
  // Each shard's count of chunks committed.
  std::map<int64_t, int64_t> chunk_counts() const;
  // Takes chunks [0, n) of each shard of run `from` (n from `chunks`, by shard id) into this run,
  // as hard links (copies where a link fails); this run's next chunks follow them. False when
  // one cannot be taken (gone).
  bool adopt(const std::string& from, const std::map<int64_t, int64_t>& chunks);

 private:
  struct Shard {
    int64_t next_chunk = 0;
    std::unique_ptr<io::AtomicOutputFile> file;
  };
  std::string dir_, run_id_;
  Compression compression_;
  std::map<int64_t, Shard> shards_;
};

// The elements of one shard directory's chunks, in order.
NodePtr make_snapshot_shard_node(std::string shard_dir, Compression compression);

// Dataset::snapshot's stage (internal/snapshot_node.cc).
NodePtr make_snapshot_node(NodePtr input, const std::string& path, const SnapshotOptions& options);

// The element spec of what was saved so far, widened by `e` (a size that differs becomes -1);
// InvalidArgument when e's structure, a dtype or a rank differs.
void widen_spec(std::vector<TensorSpec>& spec, const Element& e, int64_t index);
// "(int64 (-1,), float32 (2,))"
std::string spec_str(const std::vector<TensorSpec>& spec);

}  // namespace weft::data::internal
