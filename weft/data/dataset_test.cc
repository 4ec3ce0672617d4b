#include "weft/data/dataset.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <numeric>
#include <set>
#include <thread>

#include "weft/data/auto_shard.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/shape_ops.h"

namespace weft::data {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<Element> collect(const Dataset& ds) {
  std::vector<Element> out;
  for (const Element& e : ds) out.push_back(e);
  return out;
}

// The first component of every element, which must be an int64 scalar.
std::vector<int64_t> ints(const Dataset& ds) {
  std::vector<int64_t> out;
  for (const Element& e : ds) out.push_back(e[0].item<int64_t>());
  return out;
}
std::vector<int64_t> ints(Dataset::Iterator& it, int64_t n) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(it.next().value()[0].item<int64_t>());
  return out;
}

std::vector<int64_t> iota(int64_t n, int64_t start = 0) {
  std::vector<int64_t> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

bool is_permutation_of_range(std::vector<int64_t> v, int64_t n) {
  std::sort(v.begin(), v.end());
  return v == iota(n);
}

Element identity(const Element& e) { return e; }

// ---- sources and the existing basics ------------------------------------------------------------

TEST(Dataset, FromTensorSlicesYieldsRowsOfEveryComponent) {
  Tensor x = reshape(arange(0, 6, 1, kFloat32), {3, 2});
  Tensor y = arange(10, 13, 1, kInt64);
  auto rows = collect(Dataset::from_tensor_slices({x, y}));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1][0].to_vector<float>(), (std::vector<float>{2, 3}));
  EXPECT_EQ(rows[2][1].item<int64_t>(), 12);
  EXPECT_EQ(rows[2][1].rank(), 0);
}

TEST(Dataset, RangeWithStartStopAndStep) {
  EXPECT_THAT(ints(Dataset::range(3, 12, 4)), ElementsAre(3, 7, 11));
  EXPECT_THAT(ints(Dataset::range(5, 0, -2)), ElementsAre(5, 3, 1));
  EXPECT_TRUE(ints(Dataset::range(0)).empty());
}

TEST(Dataset, MapThenBatchStacksAndKeepsTheRemainder) {
  auto ds = Dataset::range(7).map([](const Tensor& t) { return mul(t, 10); }).batch(3);
  auto batches = collect(ds);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0][0].to_vector<int64_t>(), (std::vector<int64_t>{0, 10, 20}));
  EXPECT_EQ(batches[2][0].to_vector<int64_t>(), (std::vector<int64_t>{60}));
  EXPECT_EQ(collect(Dataset::range(7).batch(3, /*drop_remainder=*/true)).size(), 2u);
}

TEST(Dataset, MapOverWholeElements) {
  auto ds = Dataset::from_tensor_slices({arange(0, 3, 1, kInt64), arange(5, 8, 1, kInt64)})
                .map([](const Element& e) { return Element{add(e[0], e[1])}; });
  EXPECT_THAT(ints(ds), ElementsAre(5, 7, 9));
}

TEST(Dataset, TakeAndRepeatablePasses) {
  auto ds = Dataset::range(10).take(4);
  EXPECT_EQ(collect(ds).size(), 4u);
  EXPECT_EQ(collect(ds).size(), 4u);  // every begin() starts a fresh pass
}

TEST(Dataset, IteratorOutlivesItsDataset) {
  Dataset::Iterator it = Dataset::range(3).map([](const Tensor& t) { return add(t, 1); }).begin();
  std::vector<int64_t> seen;
  while (auto e = it.next()) seen.push_back((*e)[0].item<int64_t>());
  EXPECT_EQ(seen, (std::vector<int64_t>{1, 2, 3}));
}

TEST(Dataset, IteratorDereferenceIncrementAndNextAgree) {
  Dataset::Iterator it = Dataset::range(4).begin();
  EXPECT_EQ((*it)[0].item<int64_t>(), 0);
  EXPECT_EQ((*it)[0].item<int64_t>(), 0);  // dereferencing does not advance
  EXPECT_EQ(it.next().value()[0].item<int64_t>(), 0);
  ++it;  // skips 1 without dereferencing it
  EXPECT_EQ((*it)[0].item<int64_t>(), 2);
  ++it;
  EXPECT_EQ(it.next().value()[0].item<int64_t>(), 3);
  EXPECT_TRUE(it == std::default_sentinel);
  EXPECT_FALSE(it.next().has_value());
  EXPECT_THROW(*it, OutOfRange);
}

TEST(Dataset, BadInputNamesTheProblem) {
  EXPECT_THAT(
      [] {
        Dataset::from_tensor_slices({zeros({3, 2}), zeros({4})});
      },
      ::testing::ThrowsMessage<InvalidArgument>(HasSubstr("component 1 has 4 rows")));
  EXPECT_THAT([] { Dataset::range(3).batch(0); },
              ::testing::ThrowsMessage<InvalidArgument>(HasSubstr("batch_size")));
  EXPECT_THAT([] { Dataset::from_tensor_slices(zeros({})); },
              ::testing::ThrowsMessage<InvalidArgument>(HasSubstr("rank >= 1")));
  EXPECT_THAT([] { Dataset::range(3).shuffle(0); },
              ::testing::ThrowsMessage<InvalidArgument>(HasSubstr("buffer_size must be >= 1")));
  EXPECT_THAT([] { Dataset::range(3).shard(2, 2); },
              ::testing::ThrowsMessage<InvalidArgument>(HasSubstr("index must be in [0, 2)")));
  EXPECT_THAT([] { Dataset::range(3).shard(0, 0); },
              ::testing::ThrowsMessage<InvalidArgument>(HasSubstr("num_shards must be >= 1")));
  EXPECT_THAT([] { Dataset::range(3).repeat(-2); },
              ::testing::ThrowsMessage<InvalidArgument>(HasSubstr("Dataset::repeat")));
  EXPECT_THAT([] { Dataset::range(3).prefetch(0); },
              ::testing::ThrowsMessage<InvalidArgument>(HasSubstr("Dataset::prefetch")));
  EXPECT_THAT([] { Dataset::range(3).map(identity, 0); },
              ::testing::ThrowsMessage<InvalidArgument>(HasSubstr("num_parallel_calls")));
  EXPECT_THAT([] { Dataset::range(3).take(-5); },
              ::testing::ThrowsMessage<InvalidArgument>(HasSubstr("Dataset::take")));
}

// ---- filter ------------------------------------------------------------------------------------

TEST(Dataset, FilterKeepsWhatThePredicateAccepts) {
  auto even = [](const Tensor& t) { return t.item<int64_t>() % 2 == 0; };
  EXPECT_THAT(ints(Dataset::range(9).filter(even)), ElementsAre(0, 2, 4, 6, 8));
  // Over mapped elements (the general path) and over rows (the row-number path) alike.
  EXPECT_THAT(ints(Dataset::range(9).map(identity).filter(even)), ElementsAre(0, 2, 4, 6, 8));
  auto pairs = Dataset::from_tensor_slices({arange(0, 6, 1, kInt64), arange(10, 16, 1, kInt64)})
                   .filter([](const Element& e) { return e[1].item<int64_t>() % 3 == 0; })
                   .batch(4);
  auto batches = collect(pairs);
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0][0].to_vector<int64_t>(), (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(batches[0][1].to_vector<int64_t>(), (std::vector<int64_t>{12, 15}));
}

// ---- shuffle -----------------------------------------------------------------------------------

TEST(Dataset, ShuffleIsAPermutationForEveryBufferSize) {
  for (int64_t buffer : {1, 2, 7, 100, 1000}) {
    std::vector<int64_t> order = ints(Dataset::range(100).shuffle(buffer, /*seed=*/3));
    EXPECT_TRUE(is_permutation_of_range(order, 100)) << "buffer " << buffer;
    if (buffer == 1) {
      EXPECT_EQ(order, iota(100));
    } else {
      EXPECT_NE(order, iota(100)) << "buffer " << buffer;
    }
  }
}

TEST(Dataset, ShuffleOnlyPicksFromItsBuffer) {
  // With a buffer of b, the i-th output is one of the first i + b inputs.
  const int64_t b = 5;
  std::vector<int64_t> order = ints(Dataset::range(200).shuffle(b, 11));
  for (size_t i = 0; i < order.size(); ++i) {
    EXPECT_LT(order[i], static_cast<int64_t>(i) + b) << "position " << i;
  }
}

TEST(Dataset, ShuffleIsDeterministicPerSeed) {
  auto order = [](uint64_t seed) { return ints(Dataset::range(50).shuffle(20, seed)); };
  EXPECT_EQ(order(7), order(7));  // separate datasets, same seed
  EXPECT_NE(order(7), order(8));
}

TEST(Dataset, ShuffleOrderDoesNotDependOnTheElementPath) {
  // Row numbers (over from_tensor_slices) and whole elements (after map) draw the same numbers.
  EXPECT_EQ(ints(Dataset::range(60).shuffle(16, 5)),
            ints(Dataset::range(60).map(identity).shuffle(16, 5)));
}

TEST(Dataset, ReshuffleEachIterationGivesEachPassItsOwnOrder) {
  Dataset ds = Dataset::range(40).shuffle(40, 9);
  std::vector<int64_t> first = ints(ds), second = ints(ds);
  EXPECT_TRUE(is_permutation_of_range(first, 40));
  EXPECT_TRUE(is_permutation_of_range(second, 40));
  EXPECT_NE(first, second);
  // The sequence of passes is itself reproducible.
  Dataset again = Dataset::range(40).shuffle(40, 9);
  EXPECT_EQ(ints(again), first);
  EXPECT_EQ(ints(again), second);

  Dataset fixed = Dataset::range(40).shuffle(40, 9, /*reshuffle_each_iteration=*/false);
  std::vector<int64_t> a = ints(fixed), b = ints(fixed);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, first);  // pass 0 of either kind
}

TEST(Dataset, ShuffleThenRepeatReshufflesEveryRepetition) {
  std::vector<int64_t> all = ints(Dataset::range(30).shuffle(30, 2).repeat(3));
  ASSERT_EQ(all.size(), 90u);
  std::vector<std::vector<int64_t>> epochs;
  for (int e = 0; e < 3; ++e) {
    epochs.emplace_back(all.begin() + 30 * e, all.begin() + 30 * (e + 1));
    EXPECT_TRUE(is_permutation_of_range(epochs.back(), 30)) << "epoch " << e;
  }
  EXPECT_NE(epochs[0], epochs[1]);
  EXPECT_NE(epochs[1], epochs[2]);
  std::vector<int64_t> same = ints(Dataset::range(30).shuffle(30, 2, false).repeat(3));
  EXPECT_TRUE(std::equal(same.begin(), same.begin() + 30, same.begin() + 30));
}

// ---- batch -------------------------------------------------------------------------------------

TEST(Dataset, BatchOverShuffledSlicesGathersMatchingRows) {
  Tensor x = reshape(arange(0, 30, 1, kFloat32), {10, 3});  // row i = 3i, 3i+1, 3i+2
  Tensor y = arange(0, 10, 1, kInt64);
  auto fast = collect(Dataset::from_tensor_slices({x, y}).shuffle(10, 1).batch(4));
  auto general = collect(Dataset::from_tensor_slices({x, y}).map(identity).shuffle(10, 1).batch(4));
  ASSERT_EQ(fast.size(), 3u);
  ASSERT_EQ(general.size(), 3u);
  EXPECT_EQ(fast[0][0].shape(), (Shape{4, 3}));
  EXPECT_EQ(fast[0][1].shape(), (Shape{4}));
  EXPECT_EQ(fast[2][0].shape(), (Shape{2, 3}));
  std::vector<int64_t> labels;
  for (size_t b = 0; b < fast.size(); ++b) {
    EXPECT_EQ(fast[b][0].to_vector<float>(), general[b][0].to_vector<float>());
    EXPECT_EQ(fast[b][1].to_vector<int64_t>(), general[b][1].to_vector<int64_t>());
    std::vector<float> rows = fast[b][0].to_vector<float>();
    std::vector<int64_t> ys = fast[b][1].to_vector<int64_t>();
    for (size_t i = 0; i < ys.size(); ++i) {
      for (int k = 0; k < 3; ++k) EXPECT_EQ(rows[3 * i + k], 3 * ys[i] + k);
      labels.push_back(ys[i]);
    }
  }
  EXPECT_TRUE(is_permutation_of_range(labels, 10));
}

TEST(Dataset, BatchOfConsecutiveSlicesSharesTheSourceStorage) {
  Tensor x = reshape(arange(0, 12, 1, kFloat32), {6, 2});
  auto batches = collect(Dataset::from_tensor_slices(x).batch(4));
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0][0].storage(), x.storage());  // a view: no copy at all
  EXPECT_EQ(batches[1][0].to_vector<float>(), (std::vector<float>{8, 9, 10, 11}));
}

TEST(Dataset, BatchCrossesRepetitions) {
  auto batches = collect(Dataset::range(5).repeat(2).batch(3));
  ASSERT_EQ(batches.size(), 4u);
  EXPECT_EQ(batches[1][0].to_vector<int64_t>(), (std::vector<int64_t>{3, 4, 0}));
  EXPECT_EQ(batches[3][0].to_vector<int64_t>(), (std::vector<int64_t>{4}));
}

TEST(Dataset, BatchOfUnequalShapesNamesThem) {
  auto ds = Dataset::range(3)
                .map([](const Tensor& t) { return zeros({t.item<int64_t>() + 1}); })
                .batch(3);
  EXPECT_THAT([&] { collect(ds); },
              ::testing::ThrowsMessage<InvalidArgument>(
                  HasSubstr("component 0 of element 1 of the batch is (2,) float32, in element 0 "
                            "it is (1,) float32")));
}

// ---- repeat, take, skip, shard ------------------------------------------------------------------

TEST(Dataset, RepeatAndTake) {
  EXPECT_THAT(ints(Dataset::range(3).repeat(2)), ElementsAre(0, 1, 2, 0, 1, 2));
  EXPECT_THAT(ints(Dataset::range(3).repeat().take(7)), ElementsAre(0, 1, 2, 0, 1, 2, 0));
  EXPECT_THAT(ints(Dataset::range(3).take(2).repeat(3)), ElementsAre(0, 1, 0, 1, 0, 1));
  EXPECT_TRUE(ints(Dataset::range(3).repeat(0)).empty());
  EXPECT_TRUE(ints(Dataset::range(0).repeat()).empty());  // ends instead of spinning
  EXPECT_THAT(ints(Dataset::range(4).take(-1)), ElementsAre(0, 1, 2, 3));
  EXPECT_TRUE(ints(Dataset::range(4).take(0)).empty());
}

TEST(Dataset, Skip) {
  EXPECT_THAT(ints(Dataset::range(6).skip(4)), ElementsAre(4, 5));
  EXPECT_TRUE(ints(Dataset::range(6).skip(10)).empty());
  EXPECT_TRUE(ints(Dataset::range(6).skip(-1)).empty());
  EXPECT_THAT(ints(Dataset::range(6).skip(0)), ElementsAre(0, 1, 2, 3, 4, 5));
  EXPECT_THAT(ints(Dataset::range(4).repeat(2).skip(3)), ElementsAre(3, 0, 1, 2, 3));
}

TEST(Dataset, ShardsPartitionTheData) {
  EXPECT_THAT(ints(Dataset::range(10).shard(3, 1)), ElementsAre(1, 4, 7));
  EXPECT_THAT(ints(Dataset::range(10).shard(3, 0)), ElementsAre(0, 3, 6, 9));
  std::vector<int64_t> all;
  for (int64_t i = 0; i < 4; ++i) {
    std::vector<int64_t> part = ints(Dataset::range(23).map(identity).shard(4, i));
    all.insert(all.end(), part.begin(), part.end());
  }
  EXPECT_TRUE(is_permutation_of_range(all, 23));
}

TEST(Dataset, ShuffleThenShardPartitionsEachEpoch) {
  // Workers that shuffle with the same seed and then take their shard read disjoint parts that
  // together cover the data, every epoch, and each epoch in another order.
  const int64_t n = 103, shards = 4;
  std::vector<std::vector<int64_t>> epochs(2);
  for (int64_t i = 0; i < shards; ++i) {
    Dataset part = Dataset::range(n).shuffle(n, 9).shard(shards, i);
    for (auto& epoch : epochs) {
      std::vector<int64_t> got = ints(part);  // each pass reshuffles
      EXPECT_EQ(static_cast<int64_t>(got.size()), (n - i + shards - 1) / shards);
      epoch.insert(epoch.end(), got.begin(), got.end());
    }
  }
  EXPECT_TRUE(is_permutation_of_range(epochs[0], n));
  EXPECT_TRUE(is_permutation_of_range(epochs[1], n));
  EXPECT_NE(epochs[0], epochs[1]);
}

// ---- map with parallel calls --------------------------------------------------------------------

TEST(Dataset, ParallelMapKeepsTheInputOrder) {
  std::mutex mu;
  std::set<std::thread::id> threads;
  auto slow_square = [&](const Tensor& t) {
    int64_t v = t.item<int64_t>();
    // Later elements finish first unless the output is reordered.
    std::this_thread::sleep_for(std::chrono::microseconds(200 * (8 - v % 8)));
    std::lock_guard lock(mu);
    threads.insert(std::this_thread::get_id());
    return mul(t, t);
  };
  std::vector<int64_t> expected;
  for (int64_t i = 0; i < 40; ++i) expected.push_back(i * i);
  EXPECT_EQ(ints(Dataset::range(40).map(slow_square, 4)), expected);
  EXPECT_GT(threads.size(), 1u);
  EXPECT_EQ(ints(Dataset::range(40).map(slow_square, Dataset::kAutotune)), expected);
  EXPECT_EQ(ints(Dataset::range(40).map(slow_square, 1)), expected);
}

TEST(Dataset, ParallelMapErrorComesAtItsPlace) {
  auto ds = Dataset::range(10).map(
      [](const Tensor& t) {
        WEFT_CHECK(t.item<int64_t>() != 6, InvalidArgument) << "element six is bad";
        return t;
      },
      3);
  Dataset::Iterator it = ds.begin();
  EXPECT_EQ(ints(it, 6), iota(6));
  EXPECT_THAT([&] { it.next(); },
              ::testing::ThrowsMessage<InvalidArgument>(HasSubstr("element six is bad")));
  EXPECT_EQ(ints(it, 3), iota(3, 7));  // as tf.data: the iterator goes on after an error
  EXPECT_FALSE(it.next().has_value());
}

// ---- prefetch ----------------------------------------------------------------------------------

TEST(Dataset, PrefetchYieldsTheSameSequence) {
  // A fresh dataset each time: the first pass of each has the same shuffle order.
  auto base = [] { return Dataset::range(100).shuffle(30, 4).batch(7); };
  std::vector<Element> expected = collect(base());
  for (int64_t size : {1, 3, 50}) {
    std::vector<Element> got = collect(base().prefetch(size));
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i][0].to_vector<int64_t>(), expected[i][0].to_vector<int64_t>());
    }
  }
}

TEST(Dataset, PrefetchRethrowsAMapErrorAtItsPlace) {
  auto ds = Dataset::range(8)
                .map([](const Tensor& t) {
                  WEFT_CHECK(t.item<int64_t>() != 3, DataLoss) << "cannot decode element 3";
                  return add(t, 100);
                })
                .prefetch(4);
  Dataset::Iterator it = ds.begin();
  EXPECT_THAT(ints(it, 3), ElementsAre(100, 101, 102));
  EXPECT_THAT([&] { it.next(); },
              ::testing::ThrowsMessage<DataLoss>(HasSubstr("cannot decode element 3")));
  EXPECT_THAT(ints(it, 4), ElementsAre(104, 105, 106, 107));
  EXPECT_FALSE(it.next().has_value());
  EXPECT_FALSE(it.next().has_value());
}

TEST(Dataset, PrefetchStopsCleanlyWhenDestroyedMidStream) {
  std::atomic<int> produced{0};
  auto slow = [&](const Tensor& t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    ++produced;
    return t;
  };
  {
    Dataset::Iterator it = Dataset::range(1000000).map(slow).prefetch(8).begin();
    EXPECT_EQ(it.next().value()[0].item<int64_t>(), 0);
  }  // joins the producer, which is never more than the buffer ahead
  int after = produced.load();
  EXPECT_LE(after, 1 + 8 + 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(produced.load(), after);  // nothing runs after destruction
  { Dataset::Iterator never_read = Dataset::range(10).repeat().prefetch(2).begin(); }
  {
    Dataset::Iterator it = Dataset::range(10).repeat().prefetch(2).begin();
    EXPECT_THAT(ints(it, 12), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1));
  }
}

// ---- cache -------------------------------------------------------------------------------------

TEST(Dataset, CacheReadsTheInputOnce) {
  std::atomic<int> calls{0};
  auto counted = Dataset::range(6)
                     .map([&](const Tensor& t) {
                       ++calls;
                       return mul(t, 2);
                     })
                     .cache();
  EXPECT_THAT(ints(counted), ElementsAre(0, 2, 4, 6, 8, 10));
  EXPECT_EQ(calls.load(), 6);
  EXPECT_THAT(ints(counted), ElementsAre(0, 2, 4, 6, 8, 10));
  EXPECT_THAT(ints(counted.repeat(2)), ElementsAre(0, 2, 4, 6, 8, 10, 0, 2, 4, 6, 8, 10));
  EXPECT_EQ(calls.load(), 6);
}

TEST(Dataset, CacheKeepsOnlyCompletePasses) {
  std::atomic<int> calls{0};
  auto counted = Dataset::range(5)
                     .map([&](const Tensor& t) {
                       ++calls;
                       return t;
                     })
                     .cache();
  EXPECT_THAT(ints(counted.take(2)), ElementsAre(0, 1));
  EXPECT_THAT(ints(counted), ElementsAre(0, 1, 2, 3, 4));  // the partial pass was not kept
  EXPECT_EQ(calls.load(), 2 + 5);
}

TEST(Dataset, CacheAfterShuffleFreezesTheOrder) {
  Dataset frozen = Dataset::range(30).shuffle(30, 6).cache();
  std::vector<int64_t> first = ints(frozen);
  EXPECT_TRUE(is_permutation_of_range(first, 30));
  EXPECT_NE(first, iota(30));
  EXPECT_EQ(ints(frozen), first);
  auto batches = collect(frozen.batch(30));
  EXPECT_EQ(batches[0][0].to_vector<int64_t>(), first);
}

// ---- cardinality, describe, a throughput sanity run ---------------------------------------------

TEST(Dataset, Cardinality) {
  EXPECT_EQ(Dataset::range(10).cardinality(), 10);
  EXPECT_EQ(Dataset::range(10).batch(3).cardinality(), 4);
  EXPECT_EQ(Dataset::range(10).batch(3, true).cardinality(), 3);
  EXPECT_EQ(Dataset::range(10).repeat(3).take(25).cardinality(), 25);
  EXPECT_EQ(Dataset::range(10).repeat().cardinality(), Dataset::kInfiniteCardinality);
  EXPECT_EQ(Dataset::range(10).repeat().take(5).cardinality(), 5);
  EXPECT_EQ(Dataset::range(10).skip(4).cardinality(), 6);
  EXPECT_EQ(Dataset::range(10).shard(3, 1).cardinality(), 3);
  EXPECT_EQ(Dataset::range(10).shard(3, 0).cardinality(), 4);
  EXPECT_EQ(Dataset::range(10).filter([](const Tensor&) { return true; }).cardinality(),
            Dataset::kUnknownCardinality);
  EXPECT_EQ(Dataset::range(10).shuffle(3).map(identity).prefetch().cache().cardinality(), 10);
}

TEST(Dataset, DescribeReadsLikeTheCode) {
  auto ds = Dataset::from_tensor_slices({zeros({8, 3}), zeros({8}, kInt64)})
                .shuffle(8, 5)
                .batch(4, true)
                .map(identity, 2)
                .repeat()
                .prefetch(3);
  EXPECT_EQ(ds.describe(),
            "from_tensor_slices((8, 3) float32, (8,) int64).shuffle(8, seed=5).batch(4, "
            "drop_remainder).map().repeat().prefetch()");
}

TEST(Dataset, ThroughputSanityOverATrainingShapedPipeline) {
  // Timing belongs to benchmarks; this checks that a full, realistic pipeline delivers every
  // example exactly once per epoch.
  const int64_t n = 5000;
  Tensor x = contiguous(broadcast_to(reshape(arange(0, n, 1, kFloat32), {n, 1}), {n, 784}));
  Tensor y = arange(0, n, 1, kInt64);
  auto ds = Dataset::from_tensor_slices({x, y}).shuffle(n, 1).batch(128).repeat(2).prefetch(2);
  // 40 batches an epoch (39 of 128, one of 8); each epoch must hold every label once.
  const int64_t batches_per_epoch = (n + 127) / 128;
  std::vector<std::vector<int>> seen(2, std::vector<int>(n, 0));
  int64_t batches = 0;
  for (const Element& b : ds) {
    ASSERT_EQ(b[0].dim(1), 784);
    int64_t epoch = batches++ / batches_per_epoch;
    ASSERT_LT(epoch, 2);
    std::vector<float> first_column = b[0].to_vector<float>();
    std::vector<int64_t> labels = b[1].to_vector<int64_t>();
    for (size_t i = 0; i < labels.size(); ++i) {
      ASSERT_EQ(first_column[i * 784], static_cast<float>(labels[i]));
      ++seen[epoch][labels[i]];
    }
  }
  EXPECT_EQ(batches, 2 * batches_per_epoch);
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (int64_t label = 0; label < n; ++label) {
      ASSERT_EQ(seen[epoch][label], 1) << "example " << label << " in epoch " << epoch;
    }
  }
}

// Under DATA a worker keeps its rows of every global batch; over batch() over map()s it maps only
// those. Worker 1 of 2 keeps the second half of each batch of range(10).map(x 10).batch(4); its
// iterator's state restores in the whole pipeline's and the other way round (a parallel map's
// elements mapped ahead included).
TEST(MapOnlyOwnRows, MapsOnlyThisWorkersRowsAndSavesTheWholePipelinesState) {
  std::atomic<int> calls{0};
  auto times10 = [&calls](const Element& e) -> Element {
    ++calls;
    return {mul(e[0], int64_t{10})};
  };
  auto second_half = [](int64_t n) { return std::make_pair(n / 2, n); };
  auto whole = [&](int64_t parallel) {
    return Dataset::range(10).map(times10, parallel).batch(4);
  };
  std::optional<Dataset> own = map_only_own_rows(whole(1), second_half);
  ASSERT_TRUE(own.has_value());
  EXPECT_EQ(own->describe(), whole(1).describe());
  EXPECT_EQ(own->cardinality(), 3);
  std::vector<std::vector<int64_t>> rows, sizes;
  for (const Element& e : *own) {
    rows.push_back(e[0].to_vector<int64_t>());
    sizes.push_back({e[1].item<int64_t>()});
  }
  EXPECT_EQ(rows, (std::vector<std::vector<int64_t>>{{20, 30}, {60, 70}, {90}}));
  EXPECT_EQ(sizes, (std::vector<std::vector<int64_t>>{{4}, {4}, {2}}));
  EXPECT_EQ(calls.load(), 5);  // of 10

  // A position saved here restores in the whole pipeline, and one saved there (a parallel map
  // with elements mapped ahead) restores here.
  Dataset::Iterator mine = own->begin();
  mine.next();
  Dataset::Iterator all = whole(1).begin();
  all.restore_state(mine.save_state());
  EXPECT_EQ((*all.next())[0].to_vector<int64_t>(), (std::vector<int64_t>{40, 50, 60, 70}));
  Dataset::Iterator ahead = whole(3).begin();
  ahead.next();
  ahead.next();  // the map has elements 8, 9 mapped ahead
  Dataset::Iterator resumed = map_only_own_rows(whole(3), second_half)->begin();
  resumed.restore_state(ahead.save_state());
  EXPECT_EQ((*resumed.next())[0].to_vector<int64_t>(), (std::vector<int64_t>{90}));
  EXPECT_FALSE(resumed.next().has_value());

  // Only batch() directly over map()s.
  EXPECT_FALSE(map_only_own_rows(Dataset::range(10).batch(4), second_half).has_value());
  EXPECT_FALSE(
      map_only_own_rows(Dataset::range(10).map(times10).batch(4).prefetch(), second_half));
  EXPECT_FALSE(map_only_own_rows(
      Dataset::range(10).map(times10).filter([](const Element&) { return true; }).batch(4),
      second_half));
}

}  // namespace
}  // namespace weft::data
