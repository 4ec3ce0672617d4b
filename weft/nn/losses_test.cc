// Losses against NumPy (scripts/make_nn_goldens.py, group "losses"): the batch-mean loss and its
// gradient w.r.t. y_pred, for crossentropies from logits and from probabilities, MSE, MAE, Huber.
#include "weft/nn/losses.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "weft/ops/cast.h"
#include "weft/ops/shape_ops.h"
#include "weft/testing/nn_goldens.h"

namespace weft::nn::losses {
namespace {

using ::testing::HasSubstr;

const testing::NnGoldens& goldens() {
  static const testing::NnGoldens g("losses");
  return g;
}

const std::map<std::string, Loss>& cases() {
  static const std::map<std::string, Loss> m = {
      {"scce_logits", SparseCategoricalCrossentropy({.from_logits = true})},
      {"scce_probs", SparseCategoricalCrossentropy()},
      {"cce_logits", CategoricalCrossentropy({.from_logits = true})},
      {"cce_probs", CategoricalCrossentropy()},
      {"bce_logits", BinaryCrossentropy({.from_logits = true})},
      {"bce_probs", BinaryCrossentropy()},
      {"mse", MeanSquaredError()},
      {"mae", MeanAbsoluteError()},
      {"huber", Huber(0.8)},
  };
  return m;
}

void check_loss(const std::string& name, const Loss& loss, Tensor y_true) {
  SCOPED_TRACE(name);
  Tensor y_pred = goldens().load(name, "y_pred");
  GradientTape tape;
  tape.watch(y_pred);
  Tensor value = loss(y_true, y_pred);
  Tensor grad = tape.gradient(value, y_pred);
  EXPECT_EQ(value.dtype(), kFloat64);
  EXPECT_TRUE(testing::all_close(value, goldens().load(name, "loss"))) << "loss";
  EXPECT_TRUE(testing::all_close(grad, goldens().load(name, "grad"))) << "gradient";
}

class LossGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(LossGolden, ValueAndGradientMatchNumPy) {
  check_loss(GetParam(), cases().at(GetParam()), goldens().load(GetParam(), "y_true"));
}

INSTANTIATE_TEST_SUITE_P(All, LossGolden,
                         ::testing::Values("scce_logits", "scce_probs", "cce_logits", "cce_probs",
                                           "bce_logits", "bce_probs", "mse", "mae", "huber"),
                         [](const auto& info) { return info.param; });

TEST(SparseCategoricalCrossentropy, LabelsMayBeInt32FloatOrHaveATrailingAxis) {
  Tensor labels = goldens().load("scce_logits", "y_true");
  const Loss& loss = cases().at("scce_logits");
  check_loss("scce_logits", loss, cast(labels, kInt32));
  check_loss("scce_logits", loss, cast(labels, kFloat32));
  check_loss("scce_logits", loss, expand_dims(labels, -1));
  check_loss("scce_probs", cases().at("scce_probs"), expand_dims(labels, -1));
}

TEST(Loss, ComputesInAtLeastFloat32AndGivesPerExampleValues) {
  Tensor labels = goldens().load("scce_logits", "y_true");
  Tensor logits = goldens().load("scce_logits", "y_pred");
  const Loss& loss = cases().at("scce_logits");
  EXPECT_EQ(loss(labels, cast(logits, kBFloat16)).dtype(), kFloat32);
  Tensor f32 = loss(labels, cast(logits, kFloat32));
  EXPECT_EQ(f32.dtype(), kFloat32);
  EXPECT_NEAR(f32.item<double>(), goldens().load("scce_logits", "loss").item<double>(), 1e-5);
  // Each example's loss, against -log softmax(logits)[label] computed here in double.
  Tensor per = loss.per_example(labels, logits);
  ASSERT_EQ(per.shape(), (Shape{6}));
  std::vector<double> z = cast(logits, kFloat64).to_vector<double>();
  std::vector<int64_t> y = cast(labels, kInt64).to_vector<int64_t>();
  int64_t classes = logits.dim(-1);
  std::vector<double> got = cast(per, kFloat64).to_vector<double>();
  double total = 0;
  for (int64_t i = 0; i < 6; ++i) {
    double top = *std::max_element(z.begin() + i * classes, z.begin() + (i + 1) * classes);
    double denom = 0;
    for (int64_t c = 0; c < classes; ++c) denom += std::exp(z[i * classes + c] - top);
    double expected = -(z[i * classes + y[i]] - top - std::log(denom));
    EXPECT_NEAR(got[i], expected, 1e-5 * (1 + expected)) << "example " << i;
    total += got[i];
  }
  EXPECT_NEAR(total / 6, f32.item<double>(), 1e-5);  // the loss is their mean
  Tensor t = goldens().load("mse", "y_true"), p = goldens().load("mse", "y_pred");
  Tensor mse = MeanSquaredError().per_example(t, p);
  ASSERT_EQ(mse.shape(), (Shape{6}));
  std::vector<double> tv = cast(t, kFloat64).to_vector<double>(),
                      pv = cast(p, kFloat64).to_vector<double>(),
                      mv = cast(mse, kFloat64).to_vector<double>();
  int64_t width = p.dim(-1);
  for (int64_t i = 0; i < 6; ++i) {
    double expected = 0;
    for (int64_t k = 0; k < width; ++k) {
      double d = pv[i * width + k] - tv[i * width + k];
      expected += d * d / static_cast<double>(width);
    }
    EXPECT_NEAR(mv[i], expected, 1e-5 * (1 + expected)) << "example " << i;
  }
}

TEST(Loss, ByKerasName) {
  EXPECT_EQ(get("sparse_categorical_crossentropy").name(), "sparse_categorical_crossentropy");
  EXPECT_EQ(get("mse").name(), "mean_squared_error");
  EXPECT_EQ(get("mae").name(), "mean_absolute_error");
  EXPECT_EQ(get("huber").name(), "huber");
  EXPECT_EQ(get("binary_crossentropy").name(), "binary_crossentropy");
  EXPECT_THROW(get("hinge_loss"), InvalidArgument);
  Tensor t = goldens().load("mse", "y_true"), p = goldens().load("mse", "y_pred");
  EXPECT_EQ(get("mse")(t, p).item<double>(), MeanSquaredError()(t, p).item<double>());
}

TEST(LossErrors, ShapeMismatchNamesLossAndShapes) {
  Tensor t = goldens().load("mse", "y_true"), p = goldens().load("mse", "y_pred");
  try {
    MeanSquaredError()(t, reshape(p, {3, 6}));
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.message(), HasSubstr("mean_squared_error"));
    EXPECT_THAT(e.message(), HasSubstr("(6, 3)"));
    EXPECT_THAT(e.message(), HasSubstr("(3, 6)"));
  }
}

}  // namespace
}  // namespace weft::nn::losses
