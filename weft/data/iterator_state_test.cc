#include "weft/data/iterator_state.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "weft/checkpoint/trackable.h"
#include "weft/data/dataset.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/shape_ops.h"
#include "weft/testing/dataset_checks.h"

namespace weft::data {
namespace {

using ::testing::HasSubstr;

using weft::testing::Builder;
using weft::testing::expect_restores_exactly;
using weft::testing::Flat;
using weft::testing::take_n;

// 100 examples: x row i is (i, i + 0.5), y is i.
std::vector<Tensor> examples() {
  Tensor i = arange(0, 100, 1, kFloat32);
  return {stack({i, add(i, 0.5)}, 1), arange(0, 100, 1, kInt64)};
}

TEST(IteratorState, ShuffleBatchRepeatPrefetchRestoresMidEpoch) {
  // 100 rows in batches of 8: 13 batches an epoch (the 13th of 4 rows), reshuffled every epoch;
  // 40 batches span three epochs and cuts fall before, inside and across epoch boundaries.
  Builder build = [] {
    return Dataset::from_tensor_slices(examples()).shuffle(32, 7).batch(8).repeat().prefetch(3);
  };
  expect_restores_exactly(build, 40, {0, 1, 5, 12, 13, 14, 27, 39, 40});
}

TEST(IteratorState, GeneralElementPathRestores) {
  // map first: the shuffle buffer holds tensors, parallel map holds results computed ahead.
  Builder build = [] {
    return Dataset::from_tensor_slices(examples())
        .map(
            [](const Element& e) {
              return Element{mul(e[0], 2.0), e[1]};
            },
            3)
        .shuffle(16, 3)
        .batch(5, /*drop_remainder=*/true)
        .map(
            [](const Element& e) {
              return Element{add(e[0], 1.0), e[1]};
            },
            4)
        .repeat(2)
        .prefetch(2);
  };
  expect_restores_exactly(build, 40, {0, 3, 19, 20, 21, 33});
}

TEST(IteratorState, SelectionStagesAndCacheRestore) {
  Builder build = [] {
    return Dataset::range(60)
        .filter([](const Tensor& t) { return t.item<int64_t>() % 3 != 0; })
        .shard(2, 1)
        .skip(2)
        .take(15)
        .shuffle(6, 1)
        .cache()
        .repeat(3)
        .batch(4);
  };
  // 15 elements a pass, 45 in all: 12 batches; the cache fills during the first pass.
  expect_restores_exactly(build, 12, {0, 1, 3, 4, 7, 11});
  // The same over elements rather than row numbers.
  Builder general = [] {
    return Dataset::range(60)
        .map([](const Tensor& t) { return mul(t, 3); })
        .shuffle(10, 2)
        .cache()
        .repeat(2)
        .batch(7);
  };
  expect_restores_exactly(general, 18, {0, 2, 8, 9, 17});
}

TEST(IteratorState, RestoringRewindsTheSameIterator) {
  Dataset ds = Dataset::range(50).shuffle(10, 4).batch(3).prefetch(2);
  Dataset::Iterator it = ds.begin();
  take_n(it, 4);
  const std::string state = it.save_state();
  const Flat rest = take_n(it, 100);
  EXPECT_EQ(rest.size(), 17u - 4u);
  it.restore_state(state);
  EXPECT_EQ(take_n(it, 100), rest);
}

TEST(IteratorState, TheElementUnderTheCursorIsPartOfTheState) {
  Dataset ds = Dataset::range(10).shuffle(4, 1);
  Dataset::Iterator it = ds.begin();
  it.next();
  const int64_t under_cursor = (*it)[0].item<int64_t>();  // read ahead, not consumed
  const std::string state = it.save_state();
  Dataset::Iterator restored = Dataset::range(10).shuffle(4, 1).begin();
  restored.restore_state(state);
  EXPECT_EQ(restored.next().value()[0].item<int64_t>(), under_cursor);
  EXPECT_EQ(take_n(restored, 10), take_n(++it, 10));
}

TEST(IteratorState, AnErrorProducedAheadIsRestoredInItsPlace) {
  Builder build = [] {
    return Dataset::range(8)
        .map([](const Tensor& t) {
          WEFT_CHECK(t.item<int64_t>() != 4, DataLoss) << "record 4 is damaged";
          return t;
        })
        .prefetch(6);
  };
  Dataset::Iterator it = build().begin();
  take_n(it, 2);
  const std::string state = it.save_state();  // the error may or may not be queued yet
  Dataset::Iterator restored = build().begin();
  restored.restore_state(state);
  EXPECT_EQ(take_n(restored, 2), (Flat{{2, -1e9}, {3, -1e9}}));
  EXPECT_THAT([&] { restored.next(); },
              ::testing::ThrowsMessage<DataLoss>(HasSubstr("record 4 is damaged")));
  EXPECT_EQ(take_n(restored, 5), (Flat{{5, -1e9}, {6, -1e9}, {7, -1e9}}));
}

TEST(IteratorState, IteratorIsATrackable) {
  Dataset ds = Dataset::range(20).shuffle(5, 2).batch(2);
  Dataset::Iterator it = ds.begin();
  take_n(it, 3);
  Trackable& tracked = it;
  EXPECT_TRUE(tracked.tracked_variables().empty());
  const std::string state = tracked.tracked_state();
  EXPECT_EQ(state, it.save_state());
  const Flat rest = take_n(it, 10);
  Dataset::Iterator other = ds.begin();
  Trackable& other_tracked = other;
  other_tracked.restore_state(state);
  EXPECT_EQ(take_n(other, 10), rest);
}

std::string data_loss_message(Dataset::Iterator& it, const std::string& state) {
  try {
    it.restore_state(state);
  } catch (const DataLoss& e) {
    return e.message();
  }
  ADD_FAILURE() << "expected DataLoss";
  return "";
}

TEST(IteratorState, BadStatesAreDataLossAndLeaveTheIteratorAlone) {
  auto build = [](int64_t batch) { return Dataset::range(30).shuffle(8, 1).batch(batch); };
  Dataset::Iterator it = build(4).begin();
  take_n(it, 2);
  const std::string good = it.save_state();
  Dataset::Iterator probe = build(4).begin();
  take_n(probe, 1);
  const std::string probe_state = probe.save_state();

  EXPECT_THAT(data_loss_message(probe, ""), HasSubstr("starting with the magic \"WEFTITER\""));
  EXPECT_THAT(data_loss_message(probe, "not a state at all, but long enough"),
              HasSubstr("this is not a saved weft iterator state"));
  EXPECT_THAT(data_loss_message(probe, good.substr(0, good.size() - 5)),
              HasSubstr("(truncated or padded)"));
  std::string flipped = good;
  flipped[flipped.size() / 2] ^= 0x10;
  EXPECT_THAT(data_loss_message(probe, flipped), HasSubstr("CRC-32 mismatch"));
  std::string version = good;
  version[8] = 9;
  EXPECT_THAT(data_loss_message(probe, version), HasSubstr("expected format version 1, found 9"));

  Dataset::Iterator other = build(5).begin();
  EXPECT_THAT(data_loss_message(other, good),
              HasSubstr("saved from the pipeline from_tensor_slices((30,) int64).shuffle(8, "
                        "seed=1).batch(4) but this iterator reads "
                        "from_tensor_slices((30,) int64).shuffle(8, seed=1).batch(5)"));

  // None of the failures moved the probe: it goes on from where it was.
  Dataset::Iterator twin = build(4).begin();
  twin.restore_state(probe_state);
  EXPECT_EQ(take_n(probe, 10), take_n(twin, 10));
}

TEST(IteratorState, StageMismatchesAndBadValuesNameTheStage) {
  // Hand-made states reach the per-stage checks the framing would otherwise catch first.
  StateWriter w;
  w.begin("shuffle");
  std::string bytes = w.bytes();
  StateReader r(bytes);
  EXPECT_THAT([&] { r.begin("batch"); },
              ::testing::ThrowsMessage<DataLoss>(
                  HasSubstr("expected the state of stage 'batch', found stage 'shuffle'")));

  StateWriter v;
  v.begin("take");
  v.write_i64(-7);
  std::string vb = v.bytes();
  StateReader rv(vb);
  rv.begin("take");
  EXPECT_THAT([&] { rv.read_i64("elements left", -1); },
              ::testing::ThrowsMessage<DataLoss>(HasSubstr(
                  "expected elements left in [-1, 9223372036854775807], found -7, at byte 12")));

  StateReader short_reader(vb);
  short_reader.begin("take");
  short_reader.read_i64("elements left");
  EXPECT_THAT([&] { short_reader.read_tensor("buffered element"); },
              ::testing::ThrowsMessage<DataLoss>(HasSubstr("in the state of stage 'take'")));
}

TEST(IteratorState, TensorsAndErrorsRoundTrip) {
  StateWriter w;
  Tensor a = reshape(arange(0, 6, 1, kFloat32), {2, 3});
  Tensor b = transpose(a);  // not contiguous
  w.write_element({a, b, Tensor::scalar(7, kInt64), zeros({0, 4}, kUInt8)});
  w.write_error(std::make_exception_ptr(OutOfRange("past the end")));
  w.write_error(std::make_exception_ptr(std::runtime_error("plain")));
  std::string bytes = w.bytes();
  StateReader r(bytes);
  Element e = r.read_element("element");
  ASSERT_EQ(e.size(), 4u);
  EXPECT_EQ(e[0].to_vector<float>(), a.to_vector<float>());
  EXPECT_EQ(e[1].shape(), (Shape{3, 2}));
  EXPECT_EQ(e[1].to_vector<float>(), b.to_vector<float>());
  EXPECT_EQ(e[2].item<int64_t>(), 7);
  EXPECT_EQ(e[3].shape(), (Shape{0, 4}));
  EXPECT_EQ(e[3].dtype(), kUInt8);
  EXPECT_THROW(std::rethrow_exception(r.read_error("error")), OutOfRange);
  EXPECT_THAT([&] { std::rethrow_exception(r.read_error("error")); },
              ::testing::ThrowsMessage<Internal>(HasSubstr("plain")));
  EXPECT_TRUE(r.at_end());
}

}  // namespace
}  // namespace weft::data
