#include "weft/distribute/parameter_server/partitioners.h"

#include <algorithm>
#include <cmath>

#include "weft/core/errors.h"

namespace weft::distribute {
namespace {

// Checks what every partitioner needs: a variable with an axis 0.
void check_shape(const char* partitioner, const Shape& shape) {
  WEFT_CHECK(!shape.empty(), InvalidArgument)
      << partitioner << ": a scalar cannot be partitioned (it needs an axis 0)";
  WEFT_CHECK(shape[0] > 0, InvalidArgument)
      << partitioner << ": axis 0 has " << shape[0] << " rows; at least 1 is needed";
}

std::vector<int64_t> along_axis0(const Shape& shape, int64_t shards) {
  std::vector<int64_t> partitions(shape.size(), 1);
  partitions[0] = shards;
  return partitions;
}

int64_t parse_count(const std::string& text, const std::string& what, const std::string& whole) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  WEFT_CHECK(used == text.size() && !text.empty() && v > 0, InvalidArgument)
      << "--variable-partitioner " << whole << ": " << what << " must be a positive integer, not '"
      << text << "'";
  return v;
}

}  // namespace

std::vector<int64_t> FixedShardsPartitioner::operator()(const Shape& shape, DType) const {
  check_shape("FixedShardsPartitioner", shape);
  WEFT_CHECK(num_shards >= 1, InvalidArgument)
      << "FixedShardsPartitioner: num_shards must be at least 1, not " << num_shards;
  return along_axis0(shape, std::min(num_shards, shape[0]));
}

std::vector<int64_t> MinSizePartitioner::operator()(const Shape& shape, DType dtype) const {
  check_shape("MinSizePartitioner", shape);
  WEFT_CHECK(min_shard_bytes >= 1 && max_shards >= 1, InvalidArgument)
      << "MinSizePartitioner: min_shard_bytes and max_shards must be at least 1, not "
      << min_shard_bytes << " and " << max_shards;
  const double total = static_cast<double>(num_elements(shape)) * dtype_size(dtype);
  const auto by_size =
      static_cast<int64_t>(std::ceil(total / static_cast<double>(min_shard_bytes)));
  return along_axis0(shape, std::max<int64_t>(1, std::min({shape[0], max_shards, by_size})));
}

std::vector<int64_t> MaxSizePartitioner::operator()(const Shape& shape, DType dtype) const {
  check_shape("MaxSizePartitioner", shape);
  WEFT_CHECK(max_shard_bytes >= 1, InvalidArgument)
      << "MaxSizePartitioner: max_shard_bytes must be at least 1, not " << max_shard_bytes;
  WEFT_CHECK(!max_shards || *max_shards >= 1, InvalidArgument)
      << "MaxSizePartitioner: max_shards must be at least 1, not " << *max_shards;
  const double row_bytes =
      static_cast<double>(num_elements(shape) / shape[0]) * static_cast<double>(dtype_size(dtype));
  const int64_t rows_per_shard = std::max<int64_t>(
      1, static_cast<int64_t>(std::floor(static_cast<double>(max_shard_bytes) / row_bytes)));
  int64_t shards = (shape[0] + rows_per_shard - 1) / rows_per_shard;
  if (max_shards) shards = std::min(shards, *max_shards);
  return along_axis0(shape, shards);
}

VariablePartitioner parse_partitioner(const std::string& text) {
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    size_t colon = text.find(':', start);
    parts.push_back(text.substr(start, colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  const std::string& kind = parts[0];
  if (kind == "fixed" && parts.size() == 2) {
    return FixedShardsPartitioner{parse_count(parts[1], "the number of shards", text)};
  }
  if ((kind == "min_size" || kind == "max_size") && (parts.size() == 2 || parts.size() == 3)) {
    const int64_t bytes = parse_count(parts[1], "the shard size in bytes", text);
    std::optional<int64_t> max_shards;
    if (parts.size() == 3) max_shards = parse_count(parts[2], "the maximum of shards", text);
    if (kind == "min_size") return MinSizePartitioner{bytes, max_shards.value_or(1)};
    return MaxSizePartitioner{bytes, max_shards};
  }
  throw InvalidArgument("--variable-partitioner '" + text +
                        "': expected fixed:N, min_size:BYTES[:MAX_SHARDS] or "
                        "max_size:BYTES[:MAX_SHARDS]");
}

std::vector<int64_t> shard_rows(int64_t rows, int64_t shards) {
  WEFT_CHECK(shards >= 1 && shards <= rows, InvalidArgument)
      << "cannot cut " << rows << " rows into " << shards << " shards";
  std::vector<int64_t> out(static_cast<size_t>(shards), rows / shards);
  for (int64_t i = 0; i < rows % shards; ++i) ++out[static_cast<size_t>(i)];
  return out;
}

}  // namespace weft::distribute
