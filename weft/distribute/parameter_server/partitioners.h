// tf.distribute.experimental.partitioners: how ParameterServerStrategy cuts a variable into
// shards along axis 0 (a ShardedVariable when more than one), each on its own parameter server.
// A partitioner returns the number of partitions per axis, as TensorFlow's do; only axis 0 may be
// more than 1.
//
//   weft::distribute::MinSizePartitioner partitioner(256 << 10, /*max_shards=*/num_ps);
//   partitioner({1000, 64}, weft::kFloat32);   // {1, 1}: 256 000 bytes, under 256 KiB
//   partitioner({10000, 64}, weft::kFloat32);  // {num_ps, 1} (at most 10 shards by size)
//   weft::distribute::shard_rows(13, 5);       // {3, 3, 3, 2, 2}: TensorFlow's "div" split
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "weft/core/dtype.h"
#include "weft/core/shape.h"

namespace weft::distribute {

// Partitions per axis of a variable of `shape` and `dtype`.
using VariablePartitioner = std::function<std::vector<int64_t>(const Shape&, DType)>;

// num_shards along axis 0, or as many as it has rows.
struct FixedShardsPartitioner {
  int64_t num_shards = 1;
  std::vector<int64_t> operator()(const Shape& shape, DType dtype) const;
};

// As many shards as keep each at least min_shard_bytes (rounded up), at most max_shards and the
// rows along axis 0, at least one (TensorFlow's min_max_variable_partitioner).
struct MinSizePartitioner {
  int64_t min_shard_bytes = 256 << 10;
  int64_t max_shards = 1;
  std::vector<int64_t> operator()(const Shape& shape, DType dtype) const;
};

// As few shards as keep each at most max_shard_bytes (a shard holds at least one row), at most
// max_shards when given (TensorFlow's variable_axis_size_partitioner).
struct MaxSizePartitioner {
  int64_t max_shard_bytes = 0;
  std::optional<int64_t> max_shards{};
  std::vector<int64_t> operator()(const Shape& shape, DType dtype) const;
};

// `weft train --variable-partitioner`: "fixed:N", "min_size:BYTES[:MAX_SHARDS]" or
// "max_size:BYTES[:MAX_SHARDS]"; InvalidArgument naming what is wrong.
VariablePartitioner parse_partitioner(const std::string& text);

// The rows of each of `shards` shards of `rows` rows: TensorFlow's "div" split, the first
// rows % shards shards one row longer (13 over 5: 3, 3, 3, 2, 2). InvalidArgument for shards < 1
// or more shards than rows.
std::vector<int64_t> shard_rows(int64_t rows, int64_t shards);

}  // namespace weft::distribute
