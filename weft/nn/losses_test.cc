// Losses against NumPy (scripts/make_nn_goldens.py, groups "losses" and "more_losses"): the
// batch-mean loss and its gradient w.r.t. y_pred, for crossentropies from logits and from
// probabilities, MSE, MAE, Huber; the other Keras losses' per-example values, mean and
// sample-weighted mean (gradients by finite differences); label shapes and per-step weights.
#include "weft/nn/losses.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "weft/ops/cast.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"
#include "weft/testing/gradient_check.h"
#include "weft/testing/nn_goldens.h"

namespace weft::nn::losses {
namespace {

using ::testing::HasSubstr;

const testing::NnGoldens& losses_goldens() {
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
  Tensor y_pred = losses_goldens().load(name, "y_pred");
  GradientTape tape;
  tape.watch(y_pred);
  Tensor value = loss(y_true, y_pred);
  Tensor grad = tape.gradient(value, y_pred);
  EXPECT_EQ(value.dtype(), kFloat64);
  EXPECT_TRUE(testing::all_close(value, losses_goldens().load(name, "loss"))) << "loss";
  EXPECT_TRUE(testing::all_close(grad, losses_goldens().load(name, "grad"))) << "gradient";
}

class LossGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(LossGolden, ValueAndGradientMatchNumPy) {
  check_loss(GetParam(), cases().at(GetParam()), losses_goldens().load(GetParam(), "y_true"));
}

INSTANTIATE_TEST_SUITE_P(All, LossGolden,
                         ::testing::Values("scce_logits", "scce_probs", "cce_logits", "cce_probs",
                                           "bce_logits", "bce_probs", "mse", "mae", "huber"),
                         [](const auto& info) { return info.param; });

TEST(SparseCategoricalCrossentropy, LabelsMayBeInt32FloatOrHaveATrailingAxis) {
  Tensor labels = losses_goldens().load("scce_logits", "y_true");
  const Loss& loss = cases().at("scce_logits");
  check_loss("scce_logits", loss, cast(labels, kInt32));
  check_loss("scce_logits", loss, cast(labels, kFloat32));
  check_loss("scce_logits", loss, expand_dims(labels, -1));
  check_loss("scce_probs", cases().at("scce_probs"), expand_dims(labels, -1));
}

TEST(Loss, ComputesInAtLeastFloat32AndGivesPerExampleValues) {
  Tensor labels = losses_goldens().load("scce_logits", "y_true");
  Tensor logits = losses_goldens().load("scce_logits", "y_pred");
  const Loss& loss = cases().at("scce_logits");
  EXPECT_EQ(loss(labels, cast(logits, kBFloat16)).dtype(), kFloat32);
  Tensor f32 = loss(labels, cast(logits, kFloat32));
  EXPECT_EQ(f32.dtype(), kFloat32);
  EXPECT_NEAR(f32.item<double>(), losses_goldens().load("scce_logits", "loss").item<double>(),
              1e-5);
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
  Tensor t = losses_goldens().load("mse", "y_true"), p = losses_goldens().load("mse", "y_pred");
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
  Tensor t = losses_goldens().load("mse", "y_true"), p = losses_goldens().load("mse", "y_pred");
  EXPECT_EQ(get("mse")(t, p).item<double>(), MeanSquaredError()(t, p).item<double>());
}

TEST(LossErrors, ShapeMismatchNamesLossAndShapes) {
  Tensor t = losses_goldens().load("mse", "y_true"), p = losses_goldens().load("mse", "y_pred");
  try {
    MeanSquaredError()(t, reshape(p, {3, 6}));
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.message(), HasSubstr("mean_squared_error"));
    EXPECT_THAT(e.message(), HasSubstr("(6, 3)"));
    EXPECT_THAT(e.message(), HasSubstr("(3, 6)"));
  }
}

// ---- the other losses, sample weights and label shapes (group "more_losses") -----------------

const testing::NnGoldens& more_losses() {
  static const testing::NnGoldens g("more_losses");
  return g;
}

const std::map<std::string, Loss>& more_cases() {
  static const std::map<std::string, Loss> m = {
      {"mape", MeanAbsolutePercentageError()},
      {"msle", MeanSquaredLogarithmicError()},
      {"logcosh", LogCosh()},
      {"kld", KLDivergence()},
      {"poisson", Poisson()},
      {"cosine", CosineSimilarity()},
      {"hinge_pm1", Hinge()},
      {"hinge_01", Hinge()},
      {"squared_hinge", SquaredHinge()},
      {"categorical_hinge", CategoricalHinge()},
      {"cce_smoothed", CategoricalCrossentropy({.from_logits = true, .label_smoothing = 0.1})},
      {"bce_smoothed", BinaryCrossentropy({.from_logits = true, .label_smoothing = 0.2})},
  };
  return m;
}

class MoreLossGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(MoreLossGolden, PerExampleMeanAndWeightedMatchNumPyAndGradientsMatchDifferences) {
  const std::string& name = GetParam();
  const Loss& loss = more_cases().at(name);
  Tensor y_true = more_losses().load(name, "y_true"), y_pred = more_losses().load(name, "y_pred");
  Tensor w = more_losses().load(name, "w");
  EXPECT_TRUE(testing::all_close(loss.per_example(y_true, y_pred),
                                 more_losses().load(name, "per_example")));
  EXPECT_TRUE(testing::all_close(loss(y_true, y_pred), more_losses().load(name, "loss")));
  EXPECT_TRUE(testing::all_close(loss(y_true, y_pred, w), more_losses().load(name, "weighted")));
  // Weights of shape (N, 1) are the same weights.
  EXPECT_TRUE(testing::all_close(loss(y_true, y_pred, expand_dims(w, -1)),
                                 more_losses().load(name, "weighted")));
  EXPECT_TRUE(testing::gradient_check(
      [&](const std::vector<Tensor>& xs) { return loss(y_true, xs[0], w); }, {y_pred}));
  // A loss by its Keras name is the same loss.
  std::string keras = loss.name();
  if (name != "cce_smoothed" && name != "bce_smoothed") {
    EXPECT_EQ(get(keras)(y_true, y_pred).item<double>(), loss(y_true, y_pred).item<double>());
  }
  EXPECT_EQ(from_config(keras, *loss.get_config())(y_true, y_pred).item<double>(),
            loss(y_true, y_pred).item<double>());
}

INSTANTIATE_TEST_SUITE_P(All, MoreLossGolden,
                         ::testing::Values("mape", "msle", "logcosh", "kld", "poisson", "cosine",
                                           "hinge_pm1", "hinge_01", "squared_hinge",
                                           "categorical_hinge", "cce_smoothed", "bce_smoothed"),
                         [](const auto& info) { return info.param; });

TEST(LossLabelShapes, OneValuePerExampleFitsLabelsWithOrWithoutTheTrailingAxis) {
  // Keras accepts labels (N,) against predictions (N, 1), and the other ways round.
  for (const char* name : {"mse_column", "bce_column"}) {
    SCOPED_TRACE(name);
    Loss loss =
        std::string(name) == "mse_column" ? Loss(MeanSquaredError()) : Loss(BinaryCrossentropy());
    Tensor t = more_losses().load(name, "y_true"), p = more_losses().load(name, "y_pred");
    double want = more_losses().load(name, "loss").item<double>();
    Tensor t1 = reshape(t, {-1}), p1 = reshape(p, {-1});
    EXPECT_NEAR(loss(t, p).item<double>(), want, 1e-12);
    EXPECT_NEAR(loss(t1, p).item<double>(), want, 1e-12);
    EXPECT_NEAR(loss(t, p1).item<double>(), want, 1e-12);
    EXPECT_NEAR(loss(t1, p1).item<double>(), want, 1e-12);
    EXPECT_EQ(loss.per_example(t1, p).shape(), (Shape{6}));
    EXPECT_EQ(loss.per_example(t1, p1).shape(), (Shape{6}));
  }
  // Other shapes must match.
  Tensor t = more_losses().load("mape", "y_true"),
         p = more_losses().load("mape", "y_pred");  // (5, 4)
  EXPECT_THROW(MeanSquaredError()(reshape(t, {-1}), p), InvalidArgument);
}

TEST(LossSampleWeight, PerStepWeightsOfASequence) {
  Tensor labels = more_losses().load("scce_sequence", "y_true");  // (3, 4)
  Tensor logits = more_losses().load("scce_sequence", "y_pred");  // (3, 4, 5)
  Tensor w = more_losses().load("scce_sequence", "w");            // (3, 4)
  SparseCategoricalCrossentropy loss({.from_logits = true});
  EXPECT_TRUE(testing::all_close(loss.per_example(labels, logits),
                                 more_losses().load("scce_sequence", "per_example")));
  EXPECT_TRUE(
      testing::all_close(loss(labels, logits, w), more_losses().load("scce_sequence", "weighted")));
  // A scalar weight scales the mean; one per example applies to each of its steps.
  EXPECT_NEAR(loss(labels, logits, Tensor::scalar(2.0, kFloat64)).item<double>(),
              2 * loss(labels, logits).item<double>(), 1e-12);
  Tensor per_example_w = Tensor::from_vector(std::vector<double>{1, 0, 0});
  EXPECT_NEAR(loss(labels, logits, per_example_w).item<double>(),
              sum(loss.per_example(slice(labels, {Slice{0, 1}}), slice(logits, {Slice{0, 1}})))
                      .item<double>() /
                  12,
              1e-12);
}

TEST(LossErrors, SparseLabelsOutsideTheClassesNameTheLabel) {
  Tensor logits = more_losses().load("cce_smoothed", "y_pred");  // (5, 4)
  Tensor labels = Tensor::from_vector<int64_t>({0, 1, 4, 2, 3});
  for (bool from_logits : {true, false}) {
    EXPECT_THAT(
        [&] { SparseCategoricalCrossentropy({.from_logits = from_logits})(labels, logits); },
        ::testing::ThrowsMessage<InvalidArgument>(HasSubstr("label 4 is outside")));
  }
}

TEST(LossErrors, SampleWeightThatDoesNotFitNamesBothShapes) {
  Tensor t = more_losses().load("mape", "y_true"),
         p = more_losses().load("mape", "y_pred");  // (5, 4)
  try {
    MeanSquaredError()(t, p, Tensor::from_vector(std::vector<double>{1, 2, 3}));
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.message(), HasSubstr("sample_weight of shape (3,)"));
    EXPECT_THAT(e.message(), HasSubstr("losses of shape (5,)"));
  }
  EXPECT_THROW(SparseCategoricalCrossentropy({.label_smoothing = 0.1}), InvalidArgument);
  EXPECT_THROW(CategoricalCrossentropy({.label_smoothing = 1.5}), InvalidArgument);
}

TEST(Loss, EveryKerasNameAndAlias) {
  for (const char* name : {"sparse_categorical_crossentropy",
                           "categorical_crossentropy",
                           "binary_crossentropy",
                           "mse",
                           "mean_squared_error",
                           "mae",
                           "mean_absolute_error",
                           "mape",
                           "mean_absolute_percentage_error",
                           "msle",
                           "mean_squared_logarithmic_error",
                           "huber",
                           "logcosh",
                           "log_cosh",
                           "kld",
                           "kl_divergence",
                           "kullback_leibler_divergence",
                           "poisson",
                           "cosine_similarity",
                           "hinge",
                           "squared_hinge",
                           "categorical_hinge"}) {
    EXPECT_NO_THROW(get(name)) << name;
  }
  EXPECT_EQ(get("kld").name(), "kl_divergence");
  EXPECT_EQ(get("logcosh").name(), "log_cosh");

  // Each name (and alias) gives the loss of its class, with Keras's default options: the same
  // name, and the same per-example and weighted values on inputs that fit it as that class made
  // directly.
  struct Case {
    const char* name;
    Loss direct;
    const testing::NnGoldens& group;
    const char* inputs;  // a golden case of that group with y_true and y_pred
  };
  const Case cases[] = {
      {"sparse_categorical_crossentropy", SparseCategoricalCrossentropy(), losses_goldens(),
       "scce_probs"},
      {"categorical_crossentropy", CategoricalCrossentropy(), losses_goldens(), "cce_probs"},
      {"binary_crossentropy", BinaryCrossentropy(), losses_goldens(), "bce_probs"},
      {"mse", MeanSquaredError(), losses_goldens(), "mse"},
      {"mean_squared_error", MeanSquaredError(), losses_goldens(), "mse"},
      {"mae", MeanAbsoluteError(), losses_goldens(), "mse"},
      {"mean_absolute_error", MeanAbsoluteError(), losses_goldens(), "mse"},
      {"mape", MeanAbsolutePercentageError(), more_losses(), "mape"},
      {"mean_absolute_percentage_error", MeanAbsolutePercentageError(), more_losses(), "mape"},
      {"msle", MeanSquaredLogarithmicError(), more_losses(), "msle"},
      {"mean_squared_logarithmic_error", MeanSquaredLogarithmicError(), more_losses(), "msle"},
      {"huber", Huber(), losses_goldens(), "mse"},
      {"huber_loss", Huber(), losses_goldens(), "mse"},
      {"logcosh", LogCosh(), more_losses(), "logcosh"},
      {"log_cosh", LogCosh(), more_losses(), "logcosh"},
      {"kld", KLDivergence(), more_losses(), "kld"},
      {"kl_divergence", KLDivergence(), more_losses(), "kld"},
      {"kullback_leibler_divergence", KLDivergence(), more_losses(), "kld"},
      {"poisson", Poisson(), more_losses(), "poisson"},
      {"cosine_similarity", CosineSimilarity(), more_losses(), "cosine"},
      {"hinge", Hinge(), more_losses(), "hinge_01"},
      {"squared_hinge", SquaredHinge(), more_losses(), "squared_hinge"},
      {"categorical_hinge", CategoricalHinge(), more_losses(), "categorical_hinge"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Loss from_name = get(c.name);
    EXPECT_EQ(from_name.name(), c.direct.name());
    Tensor t = c.group.load(c.inputs, "y_true"), p = c.group.load(c.inputs, "y_pred");
    EXPECT_EQ(from_name.per_example(t, p).to_vector<double>(),
              c.direct.per_example(t, p).to_vector<double>());
    std::vector<double> w;
    for (int64_t i = 0; i < p.dim(0); ++i) w.push_back(0.5 + 0.25 * static_cast<double>(i));
    Tensor weights = Tensor::from_vector(w);
    EXPECT_EQ(from_name(t, p, weights).item<double>(), c.direct(t, p, weights).item<double>());
  }
}

}  // namespace
}  // namespace weft::nn::losses
