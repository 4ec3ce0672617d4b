// group_by_window and bucket_by_sequence_length: TF 2.4's documented examples exactly, the order
// in which windows are reduced (full ones at once, the rest by ascending key at the end),
// window_size_func called once per key, iterator states restored at every cut, argument errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>

#include "weft/data/dataset.h"
#include "weft/ops/creation.h"
#include "weft/testing/dataset_checks.h"

namespace weft::data {
namespace {

using ::testing::HasSubstr;
using weft::testing::every_cut;
using weft::testing::expect_restores_exactly;

using Rows = std::vector<std::vector<int64_t>>;

// Each element's first component, flattened: one row per element.
Rows rows(const Dataset& ds) {
  Rows out;
  for (const Element& e : ds) out.push_back(e[0].to_vector<int64_t>());
  return out;
}

int64_t parity(const Element& e) { return e[0].item<int64_t>() % 2; }

TEST(GroupByWindow, FullWindowsFirstThenTheRestByAscendingKey) {
  Dataset ds = Dataset::range(10).group_by_window(
      parity, [](int64_t, const Dataset& w) { return w.batch(4); }, 4);
  EXPECT_EQ(rows(ds), (Rows{{0, 2, 4, 6}, {1, 3, 5, 7}, {8}, {9}}));
  EXPECT_EQ(ds.describe(), "from_tensor_slices((10,) int64).group_by_window(window_size=4)");
  EXPECT_EQ(ds.cardinality(), Dataset::kUnknownCardinality);
  // Keys -1, 0, 1, none filling its window: flushed at the end, the negative key first.
  Dataset negative = Dataset::range(7).group_by_window(
      [](const Element& e) { return e[0].item<int64_t>() % 3 - 1; },
      [](int64_t, const Dataset& w) { return w.batch(5); }, 5);
  EXPECT_EQ(rows(negative), (Rows{{0, 3, 6}, {1, 4}, {2, 5}}));
  EXPECT_EQ(Dataset::range(0)
                .group_by_window(
                    parity, [](int64_t, const Dataset& w) { return w; }, 2)
                .cardinality(),
            0);
}

TEST(GroupByWindow, WindowSizeFuncIsCalledOncePerKey) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  Dataset ds = Dataset::range(10).group_by_window(
      parity,
      [](int64_t key, const Dataset& w) {
        // The key reaches reduce_func: every batch is followed by its key, negated.
        return w.batch(10).concatenate(Dataset::from_tensors({Tensor::scalar(-key - 1, kInt64)}));
      },
      [calls](int64_t key) {
        ++*calls;
        return key + 2;
      });
  EXPECT_EQ(rows(ds), (Rows{{0, 2}, {-1}, {1, 3, 5}, {-2}, {4, 6}, {-1}, {8}, {-1}, {7, 9}, {-2}}));
  EXPECT_EQ(calls->load(), 2);
  EXPECT_EQ(ds.describe(), "from_tensor_slices((10,) int64).group_by_window(window_size_func)");
}

TEST(GroupByWindow, ReduceFuncMayChangeTheCount) {
  auto first = [](int64_t, const Dataset& w) { return w.take(1); };
  EXPECT_EQ(rows(Dataset::range(7).group_by_window(parity, first, 2)), (Rows{{0}, {1}, {4}, {5}}));
  auto none = [](int64_t, const Dataset& w) { return w.take(0); };
  EXPECT_TRUE(rows(Dataset::range(7).group_by_window(parity, none, 2)).empty());
}

TEST(GroupByWindow, RestoresAtEveryCut) {
  // reduce_func yields the window's elements one by one, so cuts fall inside a reduced window.
  weft::testing::Builder build = [] {
    return Dataset::range(23).shuffle(5, 3).group_by_window(
        [](const Element& e) { return e[0].item<int64_t>() % 3; },
        [](int64_t key, const Dataset& w) {
          return key == 1 ? w.batch(2) : w.map([](const Tensor& t) { return t; });
        },
        [](int64_t key) { return key + 2; });
  };
  const auto n = static_cast<int64_t>(rows(build()).size());
  ASSERT_EQ(n, 20);  // keys 0 and 2: 15 elements; key 1: windows of 3, 3, 2 in 5 batches
  expect_restores_exactly(build, n, every_cut(n));
}

TEST(GroupByWindow, ArgumentErrors) {
  auto reduce = [](int64_t, const Dataset& w) { return w; };
  EXPECT_THAT([&] { Dataset::range(3).group_by_window(parity, reduce, 0); },
              ::testing::ThrowsMessage<InvalidArgument>(HasSubstr(
                  "Dataset::group_by_window: window_size must be greater than zero, got 0")));
  Dataset zero =
      Dataset::range(3).group_by_window(parity, reduce, [](int64_t key) { return key - 1; });
  EXPECT_THAT([&] { rows(zero); },
              ::testing::ThrowsMessage<InvalidArgument>(
                  HasSubstr("window size must be greater than zero, but window_size_func gave -1 "
                            "for key 0")));
  EXPECT_THAT([&] { Dataset::range(3).group_by_window(nullptr, reduce, 2); },
              ::testing::ThrowsMessage<InvalidArgument>(
                  HasSubstr("Dataset::group_by_window: key_func is empty")));
  EXPECT_THAT([&] { Dataset::range(3).group_by_window(parity, nullptr, 2); },
              ::testing::ThrowsMessage<InvalidArgument>(
                  HasSubstr("Dataset::group_by_window: reduce_func is empty")));
}

// The sequences of TF's bucket_by_sequence_length docstring, as a dataset that can be restored.
Dataset sequences(const Rows& elements) {
  std::optional<Dataset> ds;
  for (const std::vector<int64_t>& e : elements) {
    Dataset one = Dataset::from_tensors({Tensor::from_vector(e, {int64_t(e.size())})});
    ds = ds ? ds->concatenate(one) : one;
  }
  return *ds;
}
const Rows kElements = {
    {0}, {1, 2, 3, 4}, {5, 6, 7}, {7, 8, 9, 10, 11}, {13, 14, 15, 16, 19, 20}, {21, 22}};
int64_t length(const Element& e) { return e[0].dim(0); }

// Batches as rows of rows.
std::vector<Rows> batches(const Dataset& ds) {
  std::vector<Rows> out;
  for (const Element& b : ds) {
    Rows batch;
    const std::vector<int64_t> v = b[0].to_vector<int64_t>();
    const int64_t width = b[0].dim(1);
    for (int64_t i = 0; i < b[0].dim(0); ++i) {
      batch.emplace_back(v.begin() + i * width, v.begin() + (i + 1) * width);
    }
    out.push_back(batch);
  }
  return out;
}

TEST(BucketBySequenceLength, TheDocumentedExamples) {
  Dataset padded = sequences(kElements).bucket_by_sequence_length(length, {3, 5}, {2, 2, 2});
  EXPECT_EQ(batches(padded), (std::vector<Rows>{{{1, 2, 3, 4}, {5, 6, 7, 0}},
                                                {{7, 8, 9, 10, 11, 0}, {13, 14, 15, 16, 19, 20}},
                                                {{0, 0}, {21, 22}}}));
  BucketOptions to_boundary{
      .padded_shapes = {{-1}}, .padding_values = {-1}, .pad_to_bucket_boundary = true};
  Dataset boundary =
      sequences(kElements).bucket_by_sequence_length(length, {4, 7}, {2, 2, 2}, to_boundary);
  EXPECT_EQ(batches(boundary), (std::vector<Rows>{{{0, -1, -1}, {5, 6, 7}},
                                                  {{1, 2, 3, 4, -1, -1}, {7, 8, 9, 10, 11, -1}},
                                                  {{21, 22, -1}},
                                                  {{13, 14, 15, 16, 19, 20}}}));
  to_boundary.drop_remainder = true;
  EXPECT_EQ(
      batches(
          sequences(kElements).bucket_by_sequence_length(length, {4, 7}, {2, 2, 2}, to_boundary)),
      (std::vector<Rows>{{{0, -1, -1}, {5, 6, 7}}, {{1, 2, 3, 4, -1, -1}, {7, 8, 9, 10, 11, -1}}}));
}

TEST(BucketBySequenceLength, ALengthEqualToABoundaryGoesUpAndNoPaddingBatches) {
  // Lengths 2, 3, 3, 2 with boundaries {3}: 2 < 3 in bucket 0, 3 in bucket 1 (batch sizes 2, 2).
  Dataset ds = sequences({{1, 2}, {3, 4, 5}, {6, 7, 8}, {9, 10}})
                   .bucket_by_sequence_length(length, {3}, {2, 2}, {.no_padding = true});
  EXPECT_EQ(batches(ds), (std::vector<Rows>{{{3, 4, 5}, {6, 7, 8}}, {{1, 2}, {9, 10}}}));
  // Batch sizes per bucket: bucket 0 takes 1, bucket 1 takes 3 (the rest at the end).
  Dataset sizes = sequences({{1, 2}, {3, 4, 5}, {6, 7, 8}, {9, 10}})
                      .bucket_by_sequence_length(length, {3}, {1, 3});
  EXPECT_EQ(batches(sizes), (std::vector<Rows>{{{1, 2}}, {{9, 10}}, {{3, 4, 5}, {6, 7, 8}}}));
  EXPECT_EQ(ds.describe(),
            sequences({{1, 2}, {3, 4, 5}, {6, 7, 8}, {9, 10}}).describe() +
                ".bucket_by_sequence_length(bucket_boundaries=[3], bucket_batch_sizes=[2, 2], "
                "no_padding)");
}

TEST(BucketBySequenceLength, RestoresAtEveryCut) {
  weft::testing::Builder build = [] {
    return sequences(kElements).repeat(3).bucket_by_sequence_length(
        length, {3, 5}, {2, 3, 2}, {.padding_values = {-5}, .drop_remainder = false});
  };
  const auto n = static_cast<int64_t>(batches(build()).size());
  ASSERT_EQ(n, 8);  // buckets of 6, 6 and 6 elements in batches of 2, 3 and 2
  expect_restores_exactly(build, n, every_cut(n));
}

TEST(BucketBySequenceLength, ArgumentErrors) {
  auto refused = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const InvalidArgument& e) {
      return e.message();
    }
    return std::string("accepted");
  };
  Dataset s = sequences(kElements);
  EXPECT_THAT(refused([&] {
                s.bucket_by_sequence_length(length, {3, 5}, {2, 2});
              }),
              HasSubstr("Dataset::bucket_by_sequence_length: len(bucket_batch_sizes) (2) must "
                        "equal len(bucket_boundaries) + 1 (3)"));
  EXPECT_THAT(refused([&] {
                s.bucket_by_sequence_length(length, {5, 3}, {2, 2, 2});
              }),
              HasSubstr("bucket_boundaries must be strictly increasing, got [5, 3]"));
  EXPECT_THAT(refused([&] {
                s.bucket_by_sequence_length(length, {3}, {2, 0});
              }),
              HasSubstr("bucket_batch_sizes must be positive, got [2, 0]"));
  EXPECT_THAT(refused([&] {
                s.bucket_by_sequence_length(length, {3}, {2, 2}, {.pad_to_bucket_boundary = true});
              }),
              HasSubstr("pad_to_bucket_boundary needs padded_shapes"));
  // An element in the last bucket cannot be padded to a boundary: raised when it is batched.
  Dataset last = s.bucket_by_sequence_length(
      length, {4, 5}, {2, 2, 2}, {.padded_shapes = {{-1}}, .pad_to_bucket_boundary = true});
  EXPECT_THAT(refused([&] { batches(last); }),
              HasSubstr("When pad_to_bucket_boundary=True, elements must have length < "
                        "max(bucket_boundaries) (5)"));
}

}  // namespace
}  // namespace weft::data
