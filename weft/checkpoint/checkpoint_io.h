// The checkpoint format (SPEC §5): a directory holding `index.json` and data shards
// `data-00000-of-0000N`. The index has a header (magic "weft-checkpoint", format version, a CRC32C
// of the index itself) and, per tensor, its path, dtype, shape, shard, offset, length and CRC32C;
// named state blobs (an iterator position, an optimizer's step) are stored like tensors. Data is
// raw little-endian bytes in C order, each tensor starting at a multiple of 64 bytes (the gaps are
// zeros, and readers check that too, so no byte of a checkpoint is unchecked).
//
// A checkpoint is written under `<dir>.tmp-<pid>`, every file and the directory fsynced, then
// renamed to `<dir>` (committed). Readers check every checksum and throw weft::DataLoss naming
// the file, tensor and offset for anything damaged, missing or uncommitted.
//
//   weft::checkpoint::write_checkpoint("/ckpt/ckpt-100", {{"model/w", w}}, {{"step", "100"}});
//   auto loaded = weft::checkpoint::read_checkpoint("/ckpt/ckpt-100");
//   weft::Tensor w2 = loaded.tensors.at("model/w");
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "weft/core/shape.h"
#include "weft/core/tensor.h"

namespace weft::checkpoint {

inline constexpr const char* kMagic = "weft-checkpoint";
// Written by this weft; it reads 1 and 2. Version 2 adds slices of tensors in global
// coordinates and checkpoints written by several processes together (write_checkpoint_part).
inline constexpr int kFormatVersion = 2;
inline constexpr const char* kIndexFileName = "index.json";
// Every tensor and blob starts at a multiple of this in its shard (so shards can be mapped).
inline constexpr uint64_t kDataAlignment = 64;

struct SavedTensor {
  std::string path;
  Tensor value;
};

struct WriteOptions {
  // A shard is closed once it holds this many bytes; a larger tensor gets a shard of its own.
  uint64_t max_shard_bytes = uint64_t{1} << 30;
};

// Writes tensors (any layout; saved in C order) and state blobs to `dir` atomically: `dir` either
// keeps its previous contents or becomes the complete new checkpoint. The parent of `dir` must
// exist. Throws InvalidArgument for an empty or duplicate path or an undefined tensor, and
// FailedPrecondition (naming the file) when the file system refuses; the temporary directory is
// then removed.
void write_checkpoint(const std::string& dir, const std::vector<SavedTensor>& tensors,
                      const std::map<std::string, std::string>& state,
                      const WriteOptions& options = {});

struct LoadedCheckpoint {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> state;
};

// Reads every tensor and blob, verifying each CRC32C. Throws DataLoss naming the file (and the
// tensor or blob, and its offset) when the checkpoint is uncommitted, damaged, truncated or has
// missing files; FailedPrecondition when `dir` is not a directory or the index has a newer
// format version than this reader knows.
LoadedCheckpoint read_checkpoint(const std::string& dir);

// A region of one tensor of a checkpoint: `shape` elements from `offsets` of the tensor stored
// under `path` (whole, or in slices).
struct Region {
  std::string path;
  std::vector<int64_t> offsets;
  Shape shape;
};
// Reads only the stored entries (whole tensors or format-v2 slices) that overlap each region,
// each once, verifying its CRC32C, and returns the regions, in order, of the stored dtype: a
// process that holds a piece of a variable (a parameter server's shard) restores it without
// reading the rest. With `state`, reads every state blob too. Throws as read_checkpoint does for
// damage (DataLoss naming the file, tensor and offset), and InvalidArgument naming the path for
// a tensor the checkpoint lacks or a region outside it.
std::vector<Tensor> read_checkpoint_regions(const std::string& dir,
                                            const std::vector<Region>& regions,
                                            std::map<std::string, std::string>* state = nullptr);

// What the index says, for listing (`weft inspect`).
struct ShardEntry {
  std::string file;  // "data-00000-of-00001"
  uint64_t length;   // bytes
};
struct TensorEntry {
  std::string path;
  DType dtype;
  Shape shape;
  std::string shard;
  uint64_t offset;
  uint64_t length;
  uint32_t crc32c;
  // Format v2: this entry is the slice of a tensor of `global_shape` that starts at
  // `slice_offsets` (its extents are `shape`). Absent for a whole tensor.
  std::optional<Shape> global_shape;
  std::vector<int64_t> slice_offsets;
};
struct StateEntry {
  std::string name;
  std::string shard;
  uint64_t offset;
  uint64_t length;
  uint32_t crc32c;
};
struct CheckpointIndex {
  int format_version = kFormatVersion;
  std::vector<ShardEntry> shards;
  std::vector<TensorEntry> tensors;  // in the order they were written
  std::vector<StateEntry> state;     // by name
};

// Format v2, several writers (DISTRIBUTED.md §4). Every writer k of n calls
// write_checkpoint_part with the same `dir` and `save_id` (unique to this save, e.g. chosen by the
// chief and shared): it writes its slices and blobs to data-k-of-n in the save's temporary
// directory `<dir>.tmp-<save_id>` and its entries next to them, all fsynced. Once every part is
// written, one writer (the chief) calls commit_checkpoint: it checks every part, writes
// index.json last and renames the directory into place. A tensor's slices, from any writers,
// must cover it exactly once; read_checkpoint assembles them.
struct SavedSlice {
  std::string path;
  Tensor value;               // the slice's values
  Shape global_shape;         // the whole tensor's
  std::vector<int64_t> offsets;  // where the slice starts in it
};
void write_checkpoint_part(const std::string& dir, const std::string& save_id, int part,
                           int parts, const std::vector<SavedSlice>& slices,
                           const std::map<std::string, std::string>& state);
// DataLoss naming the file when a part is missing or damaged (the temporary directory is then
// left as it is: it never counts as a checkpoint).
void commit_checkpoint(const std::string& dir, const std::string& save_id, int parts);

// Removes the temporary directories (`<parent>/<name_prefix>*.tmp-*`) that saves which never
// committed left: a writer that crashed, or a cluster that stopped between the parts and the
// commit. Only while no other save into `parent` with these names is in progress (a checkpoint
// directory belongs to one job). Returns how many it removed.
int remove_abandoned_saves(const std::string& parent, const std::string& name_prefix);

// Reads and checks index.json only (its CRC, structure, and that every entry lies inside its
// shard's recorded length). Throws as read_checkpoint does.
CheckpointIndex read_index(const std::string& dir);

// Cheap test for "committed": not a temporary name, the index is intact, and every shard exists
// with its recorded length. Does not read tensor data. Returns an empty string when committed,
// otherwise the reason (a DataLoss message).
std::string check_committed(const std::string& dir);

// Every problem found, rather than the first: each a line naming the file, the tensor or blob,
// and the offset. `index` is set when index.json itself is intact.
struct VerifyReport {
  bool ok = false;
  std::vector<std::string> problems;
  std::optional<CheckpointIndex> index;
};
VerifyReport verify_checkpoint(const std::string& dir);

}  // namespace weft::checkpoint
