// tf.data's auto-shard by file: the rewrite MultiWorkerMirroredStrategy applies to each worker's
// copy of a pipeline that reads files (AutoShardPolicy FILE, and AUTO where it applies), so that
// every worker reads only its own files.
//
//   auto ds = weft::data::tfrecord_dataset(weft::data::list_files("train-*.tfrecord"))
//                 .map(parse).shuffle(1000).batch(64);   // 64: the global batch
//   weft::data::FileShard shard{.num_shards = 2, .index = 1,
//                               .local_rows = [](int64_t n) { return n / 2; }};
//   std::optional<weft::data::Dataset> mine = weft::data::shard_by_file(ds, shard);
//   // list_files(...).shard(2, 1) read by tfrecord_dataset, mapped, shuffled, batch(32)
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "weft/data/dataset.h"

namespace weft::data {

// What the rewrite is asked for, and what it found on the way.
struct FileShard {
  int64_t num_shards = 1;  // the workers
  int64_t index = 0;       // this worker
  // This worker's rows of a global batch of n rows (its replicas' slices of it).
  std::function<int64_t(int64_t)> local_rows;
  // Found: the shortest file list's length, whether the outermost batch was resized, and why
  // the rewrite stopped when it did.
  int64_t files = -1;
  bool rebatched = false;
  std::string unshardable{};
};

// `dataset` as worker shard.index of shard.num_shards reads it: every file list (list_files, or
// the names given to text_line_dataset, tfrecord_dataset or fixed_length_record_dataset) keeps
// every num_shards-th file from shard.index on, as tf.data inserts shard() after its file
// source, and the outermost batch (or padded_batch) makes this worker's rows of each global batch
// instead of the whole (tf.data's rebatch). Every other stage stays as it is, now over this
// worker's files. nullopt, with shard.unshardable saying why, when a source is not a file list
// (from_tensor_slices, range, a generator), a stage mixes its inputs in a way the rewrite cannot
// follow (window, choose_from_datasets, sample_from_datasets), a file list has fewer files than
// workers, or no batch stands above the file reader.
std::optional<Dataset> shard_by_file(const Dataset& dataset, FileShard& shard);

}  // namespace weft::data
