// The partitioners and the "div" split, against TensorFlow's documented results
// (sharded_variable_test.py, the parameter-server tutorial).
#include "weft/distribute/parameter_server/partitioners.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/core/errors.h"

namespace weft::distribute {
namespace {

using V = std::vector<int64_t>;
using ::testing::HasSubstr;

TEST(Partitioners, FixedShardsAreCappedByTheRows) {
  EXPECT_EQ(FixedShardsPartitioner{2}({10, 3}, kFloat32), (V{2, 1}));
  EXPECT_EQ(FixedShardsPartitioner{5}({3, 4}, kFloat32), (V{3, 1}));
  EXPECT_EQ(FixedShardsPartitioner{3}({7}, kFloat32), (V{3}));
  EXPECT_THROW(FixedShardsPartitioner{0}({4}, kFloat32), InvalidArgument);
  try {
    FixedShardsPartitioner{2}({}, kFloat32);
    FAIL() << "a scalar was partitioned";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr("FixedShardsPartitioner: a scalar cannot be partitioned"));
  }
}

TEST(Partitioners, MinSizeKeepsEachShardAtLeastItsBytes) {
  // TensorFlow's test: 6 x 1 float32 (24 bytes) at 4 bytes a shard.
  EXPECT_EQ((MinSizePartitioner{4, 2}({6, 1}, kFloat32)), (V{2, 1}));
  EXPECT_EQ((MinSizePartitioner{4, 10}({6, 1}, kFloat32)), (V{6, 1}));
  // 256 KiB by default: 1000 x 64 float32 is 256 000 bytes, one shard; 10 000 rows, 10 by size.
  EXPECT_EQ((MinSizePartitioner{256 << 10, 4}({1000, 64}, kFloat32)), (V{1, 1}));
  EXPECT_EQ((MinSizePartitioner{256 << 10, 4}({10000, 64}, kFloat32)), (V{4, 1}));
  EXPECT_EQ((MinSizePartitioner{256 << 10, 100}({10000, 64}, kFloat32)), (V{10, 1}));
  EXPECT_EQ((MinSizePartitioner{256 << 10, 100}({10000, 64}, kFloat64)), (V{20, 1}));
  EXPECT_EQ(MinSizePartitioner{}({1 << 20}, kFloat32), (V{1}));  // max_shards 1 by default
}

TEST(Partitioners, MaxSizeKeepsEachShardAtMostItsBytes) {
  // Rows of 8 bytes: 3 rows fit in 30 bytes, so 10 rows take 4 shards.
  EXPECT_EQ((MaxSizePartitioner{30, std::nullopt}({10, 2}, kFloat32)), (V{4, 1}));
  EXPECT_EQ((MaxSizePartitioner{30, 2}({10, 2}, kFloat32)), (V{2, 1}));
  // A row larger than the bound still makes a shard of its own.
  EXPECT_EQ((MaxSizePartitioner{4, std::nullopt}({5, 2}, kFloat32)), (V{5, 1}));
  EXPECT_EQ((MaxSizePartitioner{1 << 30, std::nullopt}({5, 2}, kFloat32)), (V{1, 1}));
  EXPECT_THROW((MaxSizePartitioner{0, std::nullopt}({5, 2}, kFloat32)), InvalidArgument);
}

TEST(Partitioners, TheDivSplitGivesTheFirstShardsTheExtraRows) {
  EXPECT_EQ(shard_rows(13, 5), (V{3, 3, 3, 2, 2}));
  EXPECT_EQ(shard_rows(12, 4), (V{3, 3, 3, 3}));
  EXPECT_EQ(shard_rows(3, 3), (V{1, 1, 1}));
  EXPECT_EQ(shard_rows(7, 1), (V{7}));
  EXPECT_THROW(shard_rows(2, 3), InvalidArgument);
  EXPECT_THROW(shard_rows(2, 0), InvalidArgument);
}

TEST(Partitioners, TheCommandLineFormIsParsedOrRefusedNamingTheProblem) {
  EXPECT_EQ(parse_partitioner("fixed:3")({10, 2}, kFloat32), (V{3, 1}));
  EXPECT_EQ(parse_partitioner("min_size:4:2")({6, 1}, kFloat32), (V{2, 1}));
  EXPECT_EQ(parse_partitioner("min_size:4")({6, 1}, kFloat32), (V{1, 1}));
  EXPECT_EQ(parse_partitioner("max_size:30")({10, 2}, kFloat32), (V{4, 1}));
  EXPECT_EQ(parse_partitioner("max_size:30:2")({10, 2}, kFloat32), (V{2, 1}));
  for (const char* bad :
       {"fixed", "fixed:0", "fixed:two", "min_size:", "max_size:1:2:3", "round_robin:2", ""}) {
    SCOPED_TRACE(bad);
    EXPECT_THROW(parse_partitioner(bad), InvalidArgument);
  }
  try {
    parse_partitioner("fixed:x");
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr("--variable-partitioner fixed:x: the number of shards must be "
                                    "a positive integer, not 'x'"));
  }
}

}  // namespace
}  // namespace weft::distribute
