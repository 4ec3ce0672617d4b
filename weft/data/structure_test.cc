// from_generator, zip, padded_batch and window: elements, cardinality, errors, and (where an
// iterator can be saved) a restored iterator continuing exactly.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/data/dataset.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"

namespace weft::data {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::vector<int64_t>> rows_of(const Dataset& ds, size_t component = 0) {
  std::vector<std::vector<int64_t>> out;
  for (const Element& e : ds) out.push_back(cast(e.at(component), kInt64).to_vector<int64_t>());
  return out;
}

// Checks that an iterator saved after every step and restored into a fresh one yields the rest.
void expect_resumes(const Dataset& ds) {
  std::vector<std::vector<int64_t>> all = rows_of(ds);
  for (size_t k = 0; k <= all.size(); ++k) {
    Dataset::Iterator it = ds.begin();
    for (size_t i = 0; i < k; ++i) it.next();
    Dataset::Iterator again = ds.begin();
    again.restore_state(it.save_state());
    std::vector<std::vector<int64_t>> rest;
    while (std::optional<Element> e = again.next()) {
      rest.push_back(cast(e->at(0), kInt64).to_vector<int64_t>());
    }
    EXPECT_EQ(rest, std::vector<std::vector<int64_t>>(all.begin() + k, all.end())) << "after " << k;
  }
}

TEST(FromGenerator, EachPassCallsTheFactoryAndSignaturesAreChecked) {
  int passes = 0;
  auto make = [&passes] {
    ++passes;
    return Dataset::Generator([i = int64_t{0}]() mutable -> std::optional<Element> {
      if (i == 3) return std::nullopt;
      ++i;
      return Element{arange(0, i, 1, kInt64)};  // lengths 1, 2, 3
    });
  };
  Dataset ds = Dataset::from_generator(make, {{kInt64, {-1}}});
  EXPECT_EQ(rows_of(ds), (std::vector<std::vector<int64_t>>{{0}, {0, 1}, {0, 1, 2}}));
  EXPECT_EQ(rows_of(ds).size(), 3u);
  EXPECT_EQ(passes, 2);
  EXPECT_EQ(ds.cardinality(), Dataset::kUnknownCardinality);
  Dataset bad = Dataset::from_generator(make, {{kInt64, {2}}});
  EXPECT_THAT([&] { rows_of(bad); },
              ::testing::ThrowsMessage<InvalidArgument>(HasSubstr("element 0")));
  EXPECT_THROW(ds.begin().save_state(), FailedPrecondition);
}

TEST(Zip, SideBySideUntilTheShortestEnds) {
  Dataset ds = Dataset::zip({Dataset::range(5), Dataset::range(10, 13)});
  EXPECT_EQ(ds.cardinality(), 3);
  std::vector<int64_t> a, b;
  for (const Element& e : ds) {
    ASSERT_EQ(e.size(), 2u);
    a.push_back(e[0].item<int64_t>());
    b.push_back(e[1].item<int64_t>());
  }
  EXPECT_THAT(a, ElementsAre(0, 1, 2));
  EXPECT_THAT(b, ElementsAre(10, 11, 12));
  EXPECT_EQ(Dataset::zip({Dataset::range(4), Dataset::range(3).repeat()}).cardinality(), 4);
  expect_resumes(Dataset::zip({Dataset::range(5).shuffle(5, 1, false), Dataset::range(10, 13)}));
}

TEST(PaddedBatch, PadsEachComponentToTheLongestOrTheGivenShape) {
  // Element i: [0, 1, ..., i] (length i + 1).
  Dataset ragged = Dataset::range(5).map(
      [](const Tensor& i) { return arange(0, i.item<int64_t>() + 1, 1, kInt64); });
  Dataset ds = ragged.padded_batch(2);
  EXPECT_EQ(ds.cardinality(), 3);
  EXPECT_EQ(rows_of(ds), (std::vector<std::vector<int64_t>>{
                             {0, 0, 0, 1}, {0, 1, 2, 0, 0, 1, 2, 3}, {0, 1, 2, 3, 4}}));
  Dataset fixed = ragged.padded_batch(
      2, {.padded_shapes = {{6}}, .padding_values = {-1}, .drop_remainder = true});
  EXPECT_EQ(fixed.cardinality(), 2);
  std::vector<Element> batches;
  for (const Element& e : fixed) batches.push_back(e);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0][0].shape(), (Shape{2, 6}));
  EXPECT_THAT(batches[0][0].to_vector<int64_t>(),
              ElementsAre(0, -1, -1, -1, -1, -1, 0, 1, -1, -1, -1, -1));
  EXPECT_THAT([&] { rows_of(ragged.padded_batch(5, {.padded_shapes = {{3}}})); },
              ::testing::ThrowsMessage<InvalidArgument>(HasSubstr("padded_shapes")));
  expect_resumes(ragged.padded_batch(2));
}

TEST(Window, SlidingWindowsWithShiftStrideAndRemainder) {
  auto firsts = [](const Dataset& ds) {
    std::vector<std::vector<int64_t>> out;
    for (const Element& e : ds) out.push_back(e[0].to_vector<int64_t>());
    return out;
  };
  Dataset r = Dataset::range(7);
  Dataset w = r.window({.size = 3, .shift = 2});
  EXPECT_EQ(firsts(w), (std::vector<std::vector<int64_t>>{{0, 1, 2}, {2, 3, 4}, {4, 5, 6}, {6}}));
  EXPECT_EQ(w.cardinality(), 4);
  Dataset dropped = r.window({.size = 3, .shift = 2, .drop_remainder = true});
  EXPECT_EQ(firsts(dropped).size(), 3u);
  EXPECT_EQ(dropped.cardinality(), 3);
  Dataset strided = r.window({.size = 2, .shift = 1, .stride = 2});
  EXPECT_EQ(firsts(strided),
            (std::vector<std::vector<int64_t>>{{0, 2}, {1, 3}, {2, 4}, {3, 5}, {4, 6}, {5}, {6}}));
  EXPECT_EQ(strided.cardinality(), 7);
  // A shift past the window's end skips elements.
  EXPECT_EQ(firsts(r.window({.size = 2, .shift = 3})),
            (std::vector<std::vector<int64_t>>{{0, 1}, {3, 4}, {6}}));
  EXPECT_EQ(r.window({.size = 2}).cardinality(), 4);
  EXPECT_THROW(r.window({.size = 0}), InvalidArgument);
  expect_resumes(r.window({.size = 3, .shift = 2}));
  expect_resumes(r.window({.size = 2, .shift = 3}));
}

}  // namespace
}  // namespace weft::data

namespace weft::data {
namespace {

std::vector<int64_t> scalars(const Dataset& ds, size_t component = 0) {
  std::vector<int64_t> out;
  for (const Element& e : ds) out.push_back(e.at(component).item<int64_t>());
  return out;
}

TEST(MoreDatasetMethods, FromTensorsApplyConcatenateEnumerate) {
  Dataset one = Dataset::from_tensors({arange(0, 3, 1, kInt64)});
  EXPECT_EQ(one.cardinality(), 1);
  EXPECT_EQ(one.get_single_element()[0].shape(), (Shape{3}));
  EXPECT_THROW(Dataset::range(2).get_single_element(), InvalidArgument);
  Dataset both = Dataset::range(3).concatenate(Dataset::range(10, 12));
  EXPECT_THAT(scalars(both), ElementsAre(0, 1, 2, 10, 11));
  EXPECT_EQ(both.cardinality(), 5);
  EXPECT_THAT(scalars(both.apply([](const Dataset& d) { return d.skip(3); })), ElementsAre(10, 11));
  Dataset numbered = Dataset::range(5, 8).enumerate(100);
  EXPECT_THAT(scalars(numbered, 0), ElementsAre(100, 101, 102));
  EXPECT_THAT(scalars(numbered, 1), ElementsAre(5, 6, 7));
  expect_resumes(both);
  expect_resumes(numbered);
}

TEST(MoreDatasetMethods, FlatMapUnbatchTakeWhileUnique) {
  Dataset nested = Dataset::range(1, 4).flat_map([](const Element& e) {
    return Dataset::range(e[0].item<int64_t>());  // 0; 0 1; 0 1 2
  });
  EXPECT_THAT(scalars(nested), ElementsAre(0, 0, 1, 0, 1, 2));
  expect_resumes(nested);
  Dataset rows = Dataset::range(7).batch(3).unbatch();
  EXPECT_THAT(scalars(rows), ElementsAre(0, 1, 2, 3, 4, 5, 6));
  expect_resumes(rows);
  Dataset small =
      Dataset::range(10).take_while([](const Element& e) { return e[0].item<int64_t>() < 4; });
  EXPECT_THAT(scalars(small), ElementsAre(0, 1, 2, 3));
  Dataset distinct = nested.unique();
  EXPECT_THAT(scalars(distinct), ElementsAre(0, 1, 2));
  expect_resumes(distinct);
}

TEST(MoreDatasetMethods, ScanReduceAndElementSpec) {
  // Running sums.
  Dataset sums = Dataset::range(1, 6).scan(
      {Tensor::scalar(int64_t{0}, kInt64)}, [](const Element& state, const Element& e) {
        Tensor total = Tensor::scalar(state[0].item<int64_t>() + e[0].item<int64_t>(), kInt64);
        return std::pair{Element{total}, Element{total}};
      });
  EXPECT_THAT(scalars(sums), ElementsAre(1, 3, 6, 10, 15));
  expect_resumes(sums);
  Element total = Dataset::range(1, 6).reduce(
      {Tensor::scalar(int64_t{1}, kInt64)}, [](const Element& state, const Element& e) {
        return Element{Tensor::scalar(state[0].item<int64_t>() * e[0].item<int64_t>(), kInt64)};
      });
  EXPECT_EQ(total[0].item<int64_t>(), 120);
  std::vector<TensorSpec> spec = Dataset::range(4).batch(2).element_spec();
  ASSERT_EQ(spec.size(), 1u);
  EXPECT_EQ(spec[0].dtype, kInt64);
  EXPECT_EQ(spec[0].shape, (Shape{2}));
}

TEST(MoreDatasetMethods, IgnoreErrorsDropsElementsThatFail) {
  Dataset checked = Dataset::range(6).map([](const Tensor& t) {
    WEFT_CHECK(t.item<int64_t>() % 3 != 1, InvalidArgument) << "a bad element";
    return t;
  });
  EXPECT_THROW(scalars(checked), InvalidArgument);
  EXPECT_THAT(scalars(checked.ignore_errors()), ElementsAre(0, 2, 3, 5));
}

TEST(MoreDatasetMethods, ChooseAndSampleFromDatasets) {
  Dataset a = Dataset::range(0, 3), b = Dataset::range(10, 13);
  Dataset choices = Dataset::from_tensor_slices(Tensor::from_vector<int64_t>({1, 0, 1, 1, 0}));
  EXPECT_THAT(scalars(Dataset::choose_from_datasets({a, b}, choices)),
              ElementsAre(10, 0, 11, 12, 1));
  expect_resumes(Dataset::choose_from_datasets({a, b}, choices));
  // Every element of both, each dataset's in its order; about 3 of 4 from the heavier one early.
  Dataset big = Dataset::range(0, 4000), other = Dataset::range(10000, 14000);
  Dataset mixed = Dataset::sample_from_datasets({big, other}, {3, 1}, 7);
  std::vector<int64_t> got = scalars(mixed);
  ASSERT_EQ(got.size(), 8000u);
  int from_big = 0;
  for (size_t i = 0; i < 2000; ++i) from_big += got[i] < 10000;
  EXPECT_NEAR(from_big / 2000.0, 0.75, 0.04);  // sd of the fraction ~0.01
  std::vector<int64_t> firsts, seconds;
  for (int64_t v : got) (v < 10000 ? firsts : seconds).push_back(v);
  EXPECT_TRUE(std::is_sorted(firsts.begin(), firsts.end()));
  EXPECT_TRUE(std::is_sorted(seconds.begin(), seconds.end()));
  EXPECT_EQ(scalars(mixed), got);  // the same seed, the same order
  expect_resumes(Dataset::sample_from_datasets({a, b}, {}, 3));
}

}  // namespace
}  // namespace weft::data
