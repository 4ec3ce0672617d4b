// The rewrites MultiWorkerMirroredStrategy applies to each worker's copy of a pipeline
// (distribute::worker_input): tf.data's auto-shard by file for a pipeline that reads files
// (AutoShardPolicy FILE, and AUTO where it applies), so that every worker reads only its own
// files; and under DATA, a shard before the map, so that every worker maps only its own rows.
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
#include <utility>

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
// workers, no batch stands above the file reader, or its global batch has fewer rows than there
// are workers. Every reason is the same on every worker, so all divide the pipeline or none.
std::optional<Dataset> shard_by_file(const Dataset& dataset, FileShard& shard);

// Under DATA every worker reads every global batch and keeps its replicas' rows of it. Where the
// pipeline's last stage is batch() over map()s, `dataset` as a worker that keeps rows
// [rows(n).first, rows(n).second) of each global batch of n reads it: the maps run on those
// elements only (a shard before the map), so preprocessing is not repeated on every worker. Each
// element is this worker's rows of one global batch, then an int64 scalar: the global batch's
// row count. Its iterator's state and describe() are the whole pipeline's, so a position saved on
// any worker, or in one process, restores on any other. nullopt for any other pipeline.
std::optional<Dataset> map_only_own_rows(
    const Dataset& dataset, std::function<std::pair<int64_t, int64_t>(int64_t)> rows);

}  // namespace weft::data
