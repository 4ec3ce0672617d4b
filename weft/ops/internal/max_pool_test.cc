// weft's NHWC max-pooling kernels against the scalar reference (conv_reference.h): forward values
// and where each gradient goes, over window shapes, strides, paddings (overlapping windows,
// clipped SAME windows, unused VALID rows), many ties, NaNs, and every floating dtype.
#include "weft/ops/internal/max_pool.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "weft/core/dtype.h"

namespace weft::ops::internal {
namespace {

struct Case {
  int64_t n, h, w, c, kh, kw, sh, sw;
  const char* padding;
};

std::string describe(const Case& k) {
  return std::to_string(k.n) + "x" + std::to_string(k.h) + "x" + std::to_string(k.w) + "x" +
         std::to_string(k.c) + " window " + std::to_string(k.kh) + "x" + std::to_string(k.kw) +
         " stride " + std::to_string(k.sh) + "x" + std::to_string(k.sw) + " " + k.padding;
}

const Case kCases[] = {
    {3, 8, 8, 5, 2, 2, 2, 2, "VALID"},    {2, 7, 9, 17, 2, 2, 2, 2, "VALID"},
    {2, 7, 9, 3, 3, 3, 2, 2, "SAME"},     {1, 6, 6, 33, 3, 3, 1, 1, "SAME"},
    {2, 5, 7, 4, 2, 3, 3, 1, "VALID"},    {1, 4, 4, 2, 1, 1, 2, 2, "SAME"},
    {4, 28, 28, 32, 2, 2, 2, 2, "VALID"},
};

// Values on a coarse grid, so windows have many ties; every 37th a NaN when asked.
std::vector<double> sample(int64_t count, uint32_t seed, bool with_nans) {
  std::mt19937 rng(seed);
  std::vector<double> v(count);
  for (int64_t i = 0; i < count; ++i) {
    v[i] = static_cast<double>(static_cast<int>(rng() % 7) - 3);
    if (with_nans && rng() % 37 == 0) v[i] = std::numeric_limits<double>::quiet_NaN();
  }
  return v;
}

template <typename T>
void expect_matches_reference(const Case& k, bool with_nans) {
  PoolParams p =
      make_pool2d_params("max_pool2d", k.n, k.h, k.w, k.c, k.kh, k.kw, k.sh, k.sw, k.padding);
  std::vector<double> xd = sample(k.n * k.h * k.w * k.c, 1, with_nans);
  std::vector<double> gd = sample(k.n * p.oh * p.ow * k.c, 2, false);
  std::vector<T> x(xd.begin(), xd.end()), dy(gd.begin(), gd.end());
  std::vector<T> y(gd.size()), dx(xd.size(), T(7));
  std::vector<int32_t> argmax(gd.size());
  max_pool2d_nhwc_forward<T>(p, x.data(), y.data(), argmax.data());
  max_pool2d_nhwc_backward<T>(p, argmax.data(), dy.data(), dx.data());
  std::vector<double> y_ref(gd.size()), dx_ref(xd.size());
  max_pool_forward<double>(p, xd.data(), y_ref.data());
  max_pool_backward<double>(p, xd.data(), gd.data(), dx_ref.data());
  std::string what = describe(k) + " " + std::string(dtype_name(dtype_of<T>()));
  for (size_t i = 0; i < y.size(); ++i) {
    double v = static_cast<double>(static_cast<compute_t<T>>(y[i]));
    if (std::isnan(y_ref[i])) {
      ASSERT_TRUE(std::isnan(v)) << what << " y[" << i << "]";
    } else {
      ASSERT_EQ(v, y_ref[i]) << what << " y[" << i << "]";
    }
  }
  for (size_t i = 0; i < dx.size(); ++i) {
    ASSERT_EQ(static_cast<double>(static_cast<compute_t<T>>(dx[i])), dx_ref[i])
        << what << " dx[" << i << "]";
  }
}

TEST(MaxPoolNhwc, MatchesTheReferenceForEveryDtype) {
  for (const Case& k : kCases) {
    for (bool nans : {false, true}) {
      expect_matches_reference<float>(k, nans);
      expect_matches_reference<double>(k, nans);
      expect_matches_reference<bfloat16>(k, nans);
      expect_matches_reference<float16>(k, nans);
    }
  }
}

}  // namespace
}  // namespace weft::ops::internal
