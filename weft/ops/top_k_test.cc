// weft::top_k against tf.math.top_k's documented behaviour: the k largest per row, largest first,
// equal values lower index first, NaN above numbers; int32 indices; the values' gradient
// scattered into the chosen positions (checked against float64 loops and the tape).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "weft/autodiff/tape.h"
#include "weft/ops/cast.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/random.h"
#include "weft/ops/reduce.h"
#include "weft/ops/sort.h"

namespace weft {
namespace {

TEST(TopK, LargestFirstPerRowWithTiesByIndex) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = Tensor::from_vector<float>({1, 3, 3, 2, 5, 0,  //
                                         4, 4, 4, 1, nan, 2},
                                        {2, 6});
  auto [values, indices] = top_k(x, 4);
  EXPECT_EQ(values.shape(), (Shape{2, 4}));
  EXPECT_EQ(indices.dtype(), kInt32);
  EXPECT_EQ(indices.to_vector<int32_t>(), (std::vector<int32_t>{4, 1, 2, 3, 4, 0, 1, 2}));
  std::vector<float> v = values.to_vector<float>();
  EXPECT_EQ(std::vector<float>(v.begin(), v.begin() + 4), (std::vector<float>{5, 3, 3, 2}));
  EXPECT_TRUE(std::isnan(v[4]));
  EXPECT_EQ(std::vector<float>(v.begin() + 5, v.end()), (std::vector<float>{4, 4, 4}));
  // k = 0 and k = the whole row; a 3-D input keeps its leading axes.
  EXPECT_EQ(top_k(x, 0).values.shape(), (Shape{2, 0}));
  EXPECT_EQ(top_k(x, 6).indices.to_vector<int32_t>()[5], 5);
  EXPECT_EQ(top_k(stateless_random_normal({2, 3, 5}, {1, 1}), 2).values.shape(), (Shape{2, 3, 2}));
}

// Against a float64 reference: a stable descending sort of each row's positions.
TEST(TopK, MatchesASortedReferenceOnRandomRows) {
  Tensor x = cast(mul(stateless_random_normal({7, 33}, {2, 2}), 3.0), kInt32);  // many ties
  Tensor xf = cast(x, kFloat64);
  auto [values, indices] = top_k(xf, 9);
  std::vector<double> xv = xf.to_vector<double>(), got = values.to_vector<double>();
  std::vector<int32_t> got_i = indices.to_vector<int32_t>();
  for (int64_t r = 0; r < 7; ++r) {
    std::vector<int32_t> order(33);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return xv[r * 33 + a] > xv[r * 33 + b]; });
    for (int64_t j = 0; j < 9; ++j) {
      EXPECT_EQ(got_i[r * 9 + j], order[j]) << r << ", " << j;
      EXPECT_EQ(got[r * 9 + j], xv[r * 33 + order[j]]);
    }
  }
  // int32 input: the same positions.
  EXPECT_EQ(top_k(x, 9).indices.to_vector<int32_t>(), got_i);
}

TEST(TopK, GradientGoesToTheChosenPositions) {
  Tensor x = cast(stateless_random_normal({3, 5}, {3, 3}), kFloat64);
  Tensor w = cast(stateless_random_normal({3, 2}, {4, 4}), kFloat64);
  GradientTape tape;
  tape.watch(x);
  TopK t = top_k(x, 2);
  Tensor g = tape.gradient(sum(mul(t.values, w)), x);
  std::vector<double> gv = g.to_vector<double>(), wv = w.to_vector<double>();
  std::vector<int32_t> idx = t.indices.to_vector<int32_t>();
  std::vector<double> expected(15, 0.0);
  for (int r = 0; r < 3; ++r) {
    for (int j = 0; j < 2; ++j) expected[r * 5 + idx[r * 2 + j]] = wv[r * 2 + j];
  }
  EXPECT_EQ(gv, expected);
}

TEST(TopK, BadArgumentsAreNamed) {
  Tensor x = stateless_random_normal({2, 3}, {1, 1});
  EXPECT_THAT([&] { top_k(x, 4); },
              ::testing::ThrowsMessage<InvalidArgument>(::testing::HasSubstr(
                  "top_k: k must be in [0, 3] (the last axis of (2, 3)), got 4")));
  EXPECT_THAT([&] { top_k(Tensor::scalar(1.0, kFloat32), 1); },
              ::testing::ThrowsMessage<InvalidArgument>(::testing::HasSubstr("a scalar")));
}

}  // namespace
}  // namespace weft
