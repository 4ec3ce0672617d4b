#include "weft/ops/shape_ops.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "weft/autodiff/tape.h"
#include "weft/core/errors.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/reduce.h"
#include "weft/testing/gradient_check.h"

namespace weft {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using testing::gradient_check;
using ::testing::HasSubstr;
using testing::second_derivative_check;
using ::testing::ThrowsMessage;
using testing::uniform;

// 0, 1, 2, ... as float64 in `shape`.
Tensor iota(const Shape& shape) {
  return reshape(arange(0, static_cast<double>(num_elements(shape)), 1, kFloat64), shape);
}

bool shares_storage(const Tensor& a, const Tensor& b) { return a.storage() == b.storage(); }

// ---- reshape -----------------------------------------------------------------------------------

TEST(Reshape, ContiguousIsAView) {
  Tensor x = iota({2, 6});
  Tensor y = reshape(x, {3, -1});
  EXPECT_EQ(y.shape(), Shape({3, 4}));
  EXPECT_TRUE(shares_storage(x, y));
  EXPECT_THAT(y.to_vector<double>(), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11));
  EXPECT_EQ(reshape(x, {-1}).shape(), Shape({12}));
  EXPECT_EQ(reshape(x, {2, 1, -1, 3}).shape(), Shape({2, 1, 2, 3}));
  EXPECT_EQ(reshape(x, {12, 1}).shape(), Shape({12, 1}));
  EXPECT_EQ(reshape(Tensor::scalar(3.0, kFloat64), {1, 1}).shape(), Shape({1, 1}));
  EXPECT_EQ(reshape(zeros({1, 1}), {}).shape(), Shape{});
}

TEST(Reshape, TransposedNeedsACopyInCOrder) {
  Tensor x = iota({2, 3});
  Tensor t = transpose(x);  // [[0, 3], [1, 4], [2, 5]]
  Tensor y = reshape(t, {6});
  EXPECT_FALSE(shares_storage(x, y));
  EXPECT_THAT(y.to_vector<double>(), ElementsAre(0, 3, 1, 4, 2, 5));
  EXPECT_TRUE(y.is_contiguous());
}

TEST(Reshape, StridedViewsThatAllowItStayViews) {
  Tensor x = iota({4, 6});
  Tensor rows = slice(x, {Slice{{}, {}, 2}});  // rows 0 and 2, strides (12, 1)
  Tensor y = reshape(rows, {2, 2, 3});
  EXPECT_TRUE(shares_storage(x, y));
  EXPECT_THAT(y.to_vector<double>(), ElementsAre(0, 1, 2, 3, 4, 5, 12, 13, 14, 15, 16, 17));
  // Merging the two rows into one axis is not possible with strides: a copy.
  Tensor z = reshape(rows, {12});
  EXPECT_FALSE(shares_storage(x, z));
  EXPECT_THAT(z.to_vector<double>(), ElementsAre(0, 1, 2, 3, 4, 5, 12, 13, 14, 15, 16, 17));
  // Adding unit axes to a transpose is a view.
  Tensor t = transpose(x);
  Tensor u = reshape(t, {6, 1, 4});
  EXPECT_TRUE(shares_storage(x, u));
  EXPECT_EQ(u.to_vector<double>(), t.to_vector<double>());
  // A reversed view.
  Tensor r = slice(x, {Slice{{}, {}, -1}});
  EXPECT_EQ(reshape(r, {2, 2, 6}).to_vector<double>(), r.to_vector<double>());
  EXPECT_EQ(reshape(r, {24}).to_vector<double>(), r.to_vector<double>());
}

TEST(Reshape, EmptyNonContiguous) {
  Tensor t = transpose(zeros({0, 3}));  // shape (3, 0), not contiguous
  EXPECT_EQ(reshape(t, {-1}).shape(), Shape({0}));
  EXPECT_EQ(reshape(transpose(zeros({2, 0, 3})), {6, 0}).shape(), Shape({6, 0}));
  EXPECT_EQ(reshape(transpose(zeros({4, 0})), {2, 0, 2}).shape(), Shape({2, 0, 2}));
  EXPECT_EQ(flatten(slice(zeros({3, 0}), {Slice{{}, {}, 2}})).shape(), Shape({0}));
}

TEST(Reshape, Errors) {
  Tensor x = zeros({2, 3});
  EXPECT_THAT(
      [&] {
        reshape(x, {4, 2});
      },
      ThrowsMessage<InvalidArgument>(
          AllOf(HasSubstr("reshape"), HasSubstr("(2, 3)"), HasSubstr("(4, 2)"))));
  EXPECT_THAT(
      [&] {
        reshape(x, {-1, 4});
      },
      ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("(2, 3)"), HasSubstr("(-1, 4)"))));
  EXPECT_THAT([&] { reshape(x, {-1, -1}); }, ThrowsMessage<InvalidArgument>(HasSubstr("-1")));
  EXPECT_THAT([&] { reshape(x, {-2, -3}); }, ThrowsMessage<InvalidArgument>(HasSubstr("-2")));
}

TEST(Reshape, Gradient) {
  EXPECT_TRUE(gradient_check(
      [](const auto& xs) {
        return reshape(xs[0], {3, -1});
      },
      {uniform({2, 6}, 1)}));
  EXPECT_TRUE(gradient_check([](const auto& xs) { return reshape(transpose(xs[0]), {-1}); },
                             {uniform({2, 6}, 2)}));
  EXPECT_TRUE(
      gradient_check([](const auto& xs) { return flatten(xs[0]); }, {uniform({2, 3, 2}, 3)}));
}

// ---- transpose ---------------------------------------------------------------------------------

TEST(Transpose, ValuesAndPermutations) {
  Tensor x = iota({2, 3, 4});
  Tensor t = transpose(x, {2, 0, 1});
  EXPECT_EQ(t.shape(), Shape({4, 2, 3}));
  EXPECT_TRUE(shares_storage(x, t));
  EXPECT_FALSE(t.is_contiguous());
  std::vector<double> v = t.to_vector<double>();
  for (int a = 0; a < 4; ++a) {
    for (int b = 0; b < 2; ++b) {
      for (int c = 0; c < 3; ++c) EXPECT_EQ(v[(a * 2 + b) * 3 + c], b * 12 + c * 4 + a);
    }
  }
  EXPECT_EQ(transpose(x).shape(), Shape({4, 3, 2}));
  EXPECT_EQ(transpose(x, {-1, 0, 1}).to_vector<double>(), v);
  EXPECT_THAT(
      [&] {
        transpose(x, {0, 0, 1});
      },
      ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("transpose"), HasSubstr("repeats"))));
  EXPECT_THAT(
      [&] {
        transpose(x, {0, 1});
      },
      ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("transpose"), HasSubstr("rank 3"))));
  EXPECT_THAT([&] { transpose(x, {0, 1, 3}); }, ThrowsMessage<OutOfRange>(HasSubstr("axis 3")));
}

TEST(Transpose, Gradient) {
  EXPECT_TRUE(gradient_check(
      [](const auto& xs) {
        return transpose(xs[0], {1, 2, 0});
      },
      {uniform({2, 3, 4}, 4)}));
  EXPECT_TRUE(gradient_check([](const auto& xs) { return transpose(xs[0]) * xs[1]; },
                             {uniform({3, 2}, 5), uniform({2, 3}, 6)}));
}

// ---- slice and select --------------------------------------------------------------------------

// Python's list slicing (CPython PySlice_AdjustIndices) on range(n).
std::vector<double> python_slice(int64_t n, std::optional<int64_t> start,
                                 std::optional<int64_t> stop, int64_t step) {
  auto adjust = [n, step](std::optional<int64_t> v, bool is_start) {
    if (!v) return step > 0 ? (is_start ? int64_t{0} : n) : (is_start ? n - 1 : int64_t{-1});
    int64_t i = *v;
    if (i < 0) {
      i += n;
      if (i < 0) i = step < 0 ? -1 : 0;
    } else if (i >= n) {
      i = step < 0 ? n - 1 : n;
    }
    return i;
  };
  int64_t lo = adjust(start, true), hi = adjust(stop, false);
  std::vector<double> out;
  for (int64_t i = lo; step > 0 ? i < hi : i > hi; i += step) out.push_back(static_cast<double>(i));
  return out;
}

TEST(Slice, MatchesPythonSlicing) {
  std::vector<std::optional<int64_t>> bounds = {std::nullopt};
  for (int64_t b = -8; b <= 8; ++b) bounds.push_back(b);
  for (int64_t n : {0, 1, 5, 6}) {
    Tensor x = iota({n});
    for (int64_t step : {-3, -2, -1, 1, 2, 3}) {
      for (auto start : bounds) {
        for (auto stop : bounds) {
          Tensor y = slice(x, {Slice{start, stop, step}});
          std::vector<double> expected = python_slice(n, start, stop, step);
          ASSERT_EQ(y.to_vector<double>(), expected)
              << "n=" << n << " start=" << (start ? std::to_string(*start) : "None")
              << " stop=" << (stop ? std::to_string(*stop) : "None") << " step=" << step;
        }
      }
    }
  }
}

TEST(Slice, MultiAxisViewsAndErrors) {
  Tensor x = iota({4, 5});
  Tensor y = slice(x, {Slice{3, 0, -2}, Slice{1, {}, 3}});  // rows 3, 1; columns 1, 4
  EXPECT_EQ(y.shape(), Shape({2, 2}));
  EXPECT_TRUE(shares_storage(x, y));
  EXPECT_THAT(y.to_vector<double>(), ElementsAre(16, 19, 6, 9));
  Tensor z = slice(y, {Slice{{}, {}, -1}});  // a slice of a slice
  EXPECT_THAT(z.to_vector<double>(), ElementsAre(6, 9, 16, 19));
  EXPECT_EQ(slice(x, {Slice{}}).to_vector<double>(), x.to_vector<double>());
  EXPECT_THAT(
      [&] {
        slice(x, {Slice{}, Slice{}, Slice{}});
      },
      ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("slice"), HasSubstr("rank 2"))));
  EXPECT_THAT(
      [&] {
        slice(x, {Slice{}, Slice{0, 2, 0}});
      },
      ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("step"), HasSubstr("axis 1"))));
}

TEST(Slice, Gradient) {
  Tensor x = uniform({5, 6}, 7);
  EXPECT_TRUE(gradient_check(
      [](const auto& xs) {
        return slice(xs[0], {Slice{4, 0, -2}, Slice{1, {}, 2}});
      },
      {x}));
  EXPECT_TRUE(gradient_check(
      [](const auto& xs) {
        return slice(xs[0], {Slice{{}, {}, -1}});
      },
      {x}));
  // Overlapping slices of one tensor accumulate.
  EXPECT_TRUE(gradient_check(
      [](const auto& xs) {
        return slice(xs[0], {Slice{0, 3}}) * slice(xs[0], {Slice{2, 5}});
      },
      {x}));
  EXPECT_TRUE(second_derivative_check(
      [](const auto& xs) {
        return square(slice(xs[0], {Slice{{}, {}, -2}, Slice{1, 4}}));
      },
      {x}));
}

TEST(Select, ValuesErrorsAndGradient) {
  Tensor x = iota({3, 4});
  EXPECT_THAT(select(x, 0, 1).to_vector<double>(), ElementsAre(4, 5, 6, 7));
  EXPECT_THAT(select(x, 1, -1).to_vector<double>(), ElementsAre(3, 7, 11));
  EXPECT_EQ(select(x, -1, 0).shape(), Shape({3}));
  EXPECT_TRUE(shares_storage(x, select(x, 1, 2)));
  EXPECT_THAT([&] { select(x, 1, 4); },
              ThrowsMessage<OutOfRange>(
                  AllOf(HasSubstr("select"), HasSubstr("index 4"), HasSubstr("axis 1"))));
  EXPECT_THAT([&] { select(x, 0, -4); }, ThrowsMessage<OutOfRange>(HasSubstr("index -4")));
  EXPECT_THAT([&] { select(x, 2, 0); }, ThrowsMessage<OutOfRange>(HasSubstr("axis 2")));
  EXPECT_TRUE(
      gradient_check([](const auto& xs) { return select(xs[0], 1, 2); }, {uniform({3, 4}, 8)}));
  EXPECT_TRUE(gradient_check([](const auto& xs) { return select(transpose(xs[0]), 0, -1); },
                             {uniform({3, 4}, 9)}));
}

// ---- broadcast_to, squeeze, expand_dims --------------------------------------------------------

TEST(BroadcastTo, ViewsValuesAndErrors) {
  Tensor x = iota({3, 1});
  Tensor y = broadcast_to(x, {2, 3, 4});
  EXPECT_TRUE(shares_storage(x, y));
  EXPECT_EQ(y.strides()[0], 0);
  std::vector<double> v = y.to_vector<double>();
  for (int i = 0; i < 24; ++i) EXPECT_EQ(v[i], (i / 4) % 3);
  EXPECT_THAT(
      [&] {
        broadcast_to(x, {3, 4, 2});
      },
      ThrowsMessage<InvalidArgument>(
          AllOf(HasSubstr("broadcast_to"), HasSubstr("(3, 1)"), HasSubstr("(3, 4, 2)"))));
  EXPECT_THAT([&] { broadcast_to(x, {4}); }, ThrowsMessage<InvalidArgument>(HasSubstr("(4,)")));
}

TEST(BroadcastTo, Gradient) {
  EXPECT_TRUE(gradient_check(
      [](const auto& xs) {
        return broadcast_to(xs[0], {2, 3, 4});
      },
      {uniform({3, 1}, 10)}));
  EXPECT_TRUE(gradient_check(
      [](const auto& xs) {
        return broadcast_to(xs[0], {2, 3});
      },
      {uniform({}, 11)}));
}

TEST(SqueezeExpandDims, ShapesErrorsAndGradient) {
  Tensor x = iota({1, 3, 1, 2});
  EXPECT_EQ(squeeze(x).shape(), Shape({3, 2}));
  EXPECT_EQ(squeeze(x, {2}).shape(), Shape({1, 3, 2}));
  EXPECT_EQ(squeeze(x, {0, -2}).shape(), Shape({3, 2}));
  EXPECT_TRUE(shares_storage(x, squeeze(x)));
  EXPECT_THAT([&] { squeeze(x, {1}); },
              ThrowsMessage<InvalidArgument>(
                  AllOf(HasSubstr("squeeze"), HasSubstr("axis 1"), HasSubstr("(1, 3, 1, 2)"))));
  Tensor v = iota({3});
  EXPECT_EQ(expand_dims(v, 0).shape(), Shape({1, 3}));
  EXPECT_EQ(expand_dims(v, 1).shape(), Shape({3, 1}));
  EXPECT_EQ(expand_dims(v, -1).shape(), Shape({3, 1}));
  EXPECT_EQ(expand_dims(Tensor::scalar(1.0, kFloat64), 0).shape(), Shape({1}));
  EXPECT_THAT([&] { expand_dims(v, 2); }, ThrowsMessage<OutOfRange>(HasSubstr("expand_dims")));
  EXPECT_TRUE(
      gradient_check([](const auto& xs) { return squeeze(xs[0]); }, {uniform({1, 3, 1}, 12)}));
  EXPECT_TRUE(gradient_check([](const auto& xs) { return expand_dims(transpose(xs[0]), 1); },
                             {uniform({2, 3}, 13)}));
}

// ---- concat, stack, split ----------------------------------------------------------------------

TEST(Concat, ValuesPromotionAndErrors) {
  Tensor a = iota({2, 2});
  Tensor b = Tensor::from_vector<float>({10, 11, 12, 13, 14, 15}, {2, 3});
  Tensor y = concat({a, b}, 1);
  EXPECT_EQ(y.dtype(), kFloat64);
  EXPECT_EQ(y.shape(), Shape({2, 5}));
  EXPECT_THAT(y.to_vector<double>(), ElementsAre(0, 1, 10, 11, 12, 2, 3, 13, 14, 15));
  Tensor z = concat({a, transpose(a), a}, 0);
  EXPECT_THAT(z.to_vector<double>(), ElementsAre(0, 1, 2, 3, 0, 2, 1, 3, 0, 1, 2, 3));
  EXPECT_EQ(concat({a, zeros({0, 2}, kFloat64)}, 0).shape(), Shape({2, 2}));
  EXPECT_THAT(
      [&] {
        concat({a, b}, 0);
      },
      ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("concat"), HasSubstr("(2, 3)"),
                                           HasSubstr("(2, 2)"), HasSubstr("axis 0"))));
  EXPECT_THAT([&] { concat({}, 0); }, ThrowsMessage<InvalidArgument>(HasSubstr("concat")));
  EXPECT_THAT(
      [&] {
        concat({a, iota({4})}, 0);
      },
      ThrowsMessage<InvalidArgument>(HasSubstr("(4,)")));
  EXPECT_THAT([&] { concat({a}, 2); }, ThrowsMessage<OutOfRange>(HasSubstr("axis 2")));
}

TEST(Stack, ValuesAndErrors) {
  Tensor a = iota({3}), b = iota({3}) + 10;
  EXPECT_THAT(stack({a, b}).to_vector<double>(), ElementsAre(0, 1, 2, 10, 11, 12));
  Tensor c = stack({a, b}, 1);
  EXPECT_EQ(c.shape(), Shape({3, 2}));
  EXPECT_THAT(c.to_vector<double>(), ElementsAre(0, 10, 1, 11, 2, 12));
  EXPECT_EQ(stack({a, b}, -1).shape(), Shape({3, 2}));
  EXPECT_THAT(
      [&] {
        stack({a, iota({4})});
      },
      ThrowsMessage<InvalidArgument>(
          AllOf(HasSubstr("stack"), HasSubstr("(4,)"), HasSubstr("(3,)"))));
}

TEST(Split, EqualAndSizedParts) {
  Tensor x = iota({2, 6});
  std::vector<Tensor> parts = split(x, 3, 1);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_THAT(parts[1].to_vector<double>(), ElementsAre(2, 3, 8, 9));
  EXPECT_TRUE(shares_storage(x, parts[2]));
  std::vector<Tensor> sized = split(x, std::vector<int64_t>{1, 0, 5}, -1);
  ASSERT_EQ(sized.size(), 3u);
  EXPECT_EQ(sized[1].shape(), Shape({2, 0}));
  EXPECT_THAT(sized[2].to_vector<double>(), ElementsAre(1, 2, 3, 4, 5, 7, 8, 9, 10, 11));
  EXPECT_THAT([&] { split(x, 4, 1); },
              ThrowsMessage<InvalidArgument>(
                  AllOf(HasSubstr("split"), HasSubstr("(2, 6)"), HasSubstr("4 equal parts"))));
  EXPECT_THAT(
      [&] {
        split(x, std::vector<int64_t>{2, 2}, 1);
      },
      ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("sum to 4"), HasSubstr("size 6"))));
  EXPECT_THAT(
      [&] {
        split(x, std::vector<int64_t>{7, -1}, 1);
      },
      ThrowsMessage<InvalidArgument>(HasSubstr("negative")));
}

TEST(ConcatStackSplit, Gradients) {
  EXPECT_TRUE(gradient_check(
      [](const auto& xs) {
        return concat({xs[0], xs[1], xs[0]}, 1);
      },
      {uniform({2, 2}, 14), uniform({2, 3}, 15)}));
  EXPECT_TRUE(gradient_check(
      [](const auto& xs) {
        return concat({transpose(xs[0]), xs[1]}, 0);
      },
      {uniform({2, 3}, 16), uniform({1, 2}, 17)}));
  EXPECT_TRUE(gradient_check(
      [](const auto& xs) {
        return stack({xs[0], xs[1]}, 1);
      },
      {uniform({2, 3}, 18), uniform({2, 3}, 19)}));
  EXPECT_TRUE(gradient_check(
      [](const auto& xs) {
        std::vector<Tensor> p = split(xs[0], std::vector<int64_t>{1, 3, 2}, 1);
        return concat({p[2] * 3.0, p[0] * p[0]}, 1);  // p[1] unused: its gradient is zero
      },
      {uniform({2, 6}, 20)}));
  EXPECT_TRUE(second_derivative_check(
      [](const auto& xs) {
        return square(concat({xs[0], xs[1]}, 0));
      },
      {uniform({2, 3}, 21), uniform({1, 3}, 22)}));
}

TEST(Concat, Float32PartGetsFloat32Gradient) {
  Tensor a = uniform({2}, 23, -1, 1, kFloat32), b = uniform({3}, 24);
  GradientTape tape;
  tape.watch({a, b});
  Tensor y = concat({a, b}, 0);
  auto g = tape.gradient(sum(y * 2.0), std::vector<Tensor>{a, b});
  EXPECT_EQ(g[0].dtype(), kFloat32);
  EXPECT_THAT(g[0].to_vector<float>(), ElementsAre(2, 2));
  EXPECT_THAT(g[1].to_vector<double>(), ElementsAre(2, 2, 2));
}

// ---- gather ------------------------------------------------------------------------------------

TEST(Gather, Axis0And1) {
  Tensor x = iota({3, 4});
  Tensor rows = gather(x, Tensor::from_vector<int32_t>({2, 0, 2}), 0);
  EXPECT_EQ(rows.shape(), Shape({3, 4}));
  EXPECT_THAT(rows.to_vector<double>(), ElementsAre(8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11));
  Tensor cols = gather(x, Tensor::from_vector<int64_t>({3, 1}), 1);
  EXPECT_EQ(cols.shape(), Shape({3, 2}));
  EXPECT_THAT(cols.to_vector<double>(), ElementsAre(3, 1, 7, 5, 11, 9));
  Tensor idx2 = Tensor::from_vector<int64_t>({0, 1, 1, 0}, {2, 2});
  Tensor g2 = gather(x, idx2, 1);
  EXPECT_EQ(g2.shape(), Shape({3, 2, 2}));
  EXPECT_THAT(select(g2, 0, 2).to_vector<double>(), ElementsAre(8, 9, 9, 8));
  EXPECT_EQ(gather(x, Tensor::scalar(1, kInt32), 0).shape(), Shape({4}));
  // Non-contiguous params and integer params.
  EXPECT_THAT(gather(transpose(x), Tensor::from_vector<int32_t>({1}), 0).to_vector<double>(),
              ElementsAre(1, 5, 9));
  Tensor xi = Tensor::from_vector<int32_t>({5, 6, 7});
  EXPECT_THAT(gather(xi, Tensor::from_vector<int32_t>({2, 2, 0}), 0).to_vector<int32_t>(),
              ElementsAre(7, 7, 5));
}

TEST(Gather, Errors) {
  Tensor x = iota({3, 4});
  EXPECT_THAT(
      [&] {
        gather(x, Tensor::from_vector<int32_t>({0, 5}), 1);
      },
      ThrowsMessage<OutOfRange>(AllOf(HasSubstr("gather"), HasSubstr("index 5"),
                                      HasSubstr("axis 1"), HasSubstr("position 1"))));
  EXPECT_THAT([&] { gather(x, Tensor::from_vector<int64_t>({-1}), 0); },
              ThrowsMessage<OutOfRange>(AllOf(HasSubstr("index -1"), HasSubstr("axis 0"))));
  EXPECT_THAT([&] { gather(x, Tensor::from_vector<float>({0}), 0); },
              ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("gather"), HasSubstr("float32"))));
  EXPECT_THAT([&] { gather(x, Tensor::from_vector<int32_t>({0}), 2); },
              ThrowsMessage<OutOfRange>(HasSubstr("axis 2")));
}

TEST(Gather, GradientAccumulatesRepeatedIndices) {
  Tensor x = uniform({4, 3}, 25);
  Tensor idx = Tensor::from_vector<int32_t>({1, 3, 1, 1});
  GradientTape tape;
  tape.watch(x);
  Tensor g = tape.gradient(sum(gather(x, idx, 0)), x);
  EXPECT_THAT(g.to_vector<double>(), ElementsAre(0, 0, 0, 3, 3, 3, 0, 0, 0, 1, 1, 1));
  EXPECT_TRUE(gradient_check([idx](const auto& xs) { return gather(xs[0], idx, 0); }, {x}));
  Tensor idx2 = Tensor::from_vector<int64_t>({2, 0, 2, 2, 1, 0}, {3, 2});
  EXPECT_TRUE(gradient_check([idx2](const auto& xs) { return gather(xs[0], idx2, 1); }, {x}));
  EXPECT_TRUE(gradient_check(
      [idx2](const auto& xs) {
        return gather(transpose(xs[0], {1, 0, 2}), idx2, 1);
      },
      {uniform({3, 2, 2}, 26)}));
  EXPECT_TRUE(second_derivative_check(
      [idx2](const auto& xs) { return square(gather(xs[0], idx2, 1)); }, {x}));
}

// ---- one_hot and pad ---------------------------------------------------------------------------

TEST(OneHot, Values) {
  Tensor idx = Tensor::from_vector<int32_t>({0, 2, -1, 3}, {2, 2});
  Tensor y = one_hot(idx, 3);
  EXPECT_EQ(y.shape(), Shape({2, 2, 3}));
  EXPECT_EQ(y.dtype(), kFloat32);
  EXPECT_THAT(y.to_vector<float>(), ElementsAre(1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0));
  Tensor z = one_hot(Tensor::from_vector<int64_t>({1}), 2, 5, -1, kInt32);
  EXPECT_EQ(z.dtype(), kInt32);
  EXPECT_THAT(z.to_vector<int32_t>(), ElementsAre(-1, 5));
  EXPECT_EQ(one_hot(Tensor::scalar(1, kInt32), 4).shape(), Shape({4}));
  EXPECT_THAT([&] { one_hot(Tensor::from_vector<float>({1}), 2); },
              ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("one_hot"), HasSubstr("float32"))));
  EXPECT_THAT([&] { one_hot(idx, -1); }, ThrowsMessage<InvalidArgument>(HasSubstr("depth")));
}

TEST(Pad, ValuesAndGradient) {
  Tensor x = iota({2, 2}) + 1;
  Tensor y = pad(x, {{1, 0}, {0, 2}}, 9);
  EXPECT_EQ(y.shape(), Shape({3, 4}));
  EXPECT_THAT(y.to_vector<double>(), ElementsAre(9, 9, 9, 9, 1, 2, 9, 9, 3, 4, 9, 9));
  EXPECT_THAT(pad(Tensor::from_vector<int32_t>({7}), {{2, 1}}).to_vector<int32_t>(),
              ElementsAre(0, 0, 7, 0));
  EXPECT_THAT(
      [&] {
        pad(x, {{1, 1}});
      },
      ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("pad"), HasSubstr("rank 2"))));
  EXPECT_THAT(
      [&] {
        pad(x, {{1, 1}, {-1, 0}});
      },
      ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("negative"), HasSubstr("axis 1"))));
  EXPECT_TRUE(gradient_check(
      [](const auto& xs) {
        return pad(xs[0], {{1, 2}, {0, 1}}, 0.5);
      },
      {uniform({2, 3}, 27)}));
  EXPECT_TRUE(gradient_check(
      [](const auto& xs) {
        return pad(transpose(xs[0]), {{0, 1}, {2, 0}});
      },
      {uniform({2, 3}, 28)}));
  EXPECT_TRUE(second_derivative_check(
      [](const auto& xs) {
        return square(pad(xs[0], {{1, 1}, {1, 1}}));
      },
      {uniform({2, 2}, 29)}));
}

}  // namespace
}  // namespace weft
