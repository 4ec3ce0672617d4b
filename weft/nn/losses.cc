#include "weft/nn/losses.h"

#include <cmath>

#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/math.h"
#include "weft/ops/nn.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"

namespace weft::nn::losses {
namespace {

constexpr double kEpsilon = 1e-7;  // Keras's backend epsilon: probabilities are clipped to it

// Losses compute in float32 at least (float64 stays float64).
Tensor widen(const Tensor& t) { return t.dtype() == kFloat64 ? t : cast(t, kFloat32); }

void check_same_shape(const std::string& loss, const Tensor& y_true, const Tensor& y_pred) {
  WEFT_CHECK(y_true.shape() == y_pred.shape(), InvalidArgument)
      << loss << ": y_true has shape " << shape_str(y_true.shape()) << " but y_pred has shape "
      << shape_str(y_pred.shape()) << "; they must match";
}

// A loss comparing y_true and y_pred of one shape, element by element (`fn(y, p)` on both in the
// loss's dtype), then averaged over the last axis.
template <typename F>
Loss::PerExample elementwise_mean(std::string name, F fn) {
  return [name = std::move(name), fn](const Tensor& y_true, const Tensor& y_pred) {
    check_same_shape(name, y_true, y_pred);
    Tensor p = widen(y_pred);
    return mean(fn(cast(y_true, p.dtype()), p), {-1});
  };
}

// Keras's hinge losses take labels in {-1, 1}; labels that are all 0 or 1 are mapped to them.
Tensor signed_labels(const Tensor& y) {
  bool zero_one = all(logical_or(equal(y, 0.0), equal(y, 1.0))).item<bool>();
  return zero_one ? sub(mul(y, 2.0), 1.0) : y;
}

}  // namespace

// Predictions of one value per example get their trailing axis, and a trailing axis of 1 is
// added to or removed from the labels to match.
std::pair<Tensor, Tensor> match_label_shape(const Tensor& y_true, const Tensor& y_pred) {
  Tensor t = y_true, p = y_pred.rank() == 1 ? expand_dims(y_pred, -1) : y_pred;
  if (t.rank() + 1 == p.rank() && p.dim(-1) == 1) {
    t = expand_dims(t, -1);
  } else if (t.rank() == p.rank() + 1 && t.dim(-1) == 1) {
    t = squeeze(t, {-1});
  }
  return {t, p};
}

Loss::Loss(std::string name, PerExample per_example)
    : state_(std::make_shared<State>(State{std::move(name), std::move(per_example), {}})) {}

Loss::Loss(std::string name, PerExample per_example, ConfigDict config)
    : state_(std::make_shared<State>(
          State{std::move(name), std::move(per_example), std::move(config)})) {}

Tensor Loss::per_example(const Tensor& y_true, const Tensor& y_pred) const {
  WEFT_CHECK(y_true.defined() && y_pred.defined(), InvalidArgument)
      << name() << ": y_true or y_pred is undefined";
  auto [t, p] = match_label_shape(y_true, y_pred);
  return state_->fn(t, p);
}

Tensor Loss::operator()(const Tensor& y_true, const Tensor& y_pred,
                        const Tensor& sample_weight) const {
  return mean(apply_sample_weight(per_example(y_true, y_pred), sample_weight));
}

Tensor apply_sample_weight(const Tensor& losses, const Tensor& sample_weight) {
  if (!sample_weight.defined()) return losses;
  Tensor w = sample_weight;
  if (w.rank() == losses.rank() + 1 && w.dim(-1) == 1) w = squeeze(w, {-1});
  bool fits = w.rank() <= losses.rank();
  for (int64_t a = 0; fits && a < w.rank(); ++a) fits = w.dim(a) == losses.dim(a);
  WEFT_CHECK(fits, InvalidArgument)
      << "sample_weight of shape " << shape_str(sample_weight.shape())
      << " does not fit losses of shape " << shape_str(losses.shape())
      << "; expected a scalar, one weight per example or one per loss";
  while (w.rank() > 0 && w.rank() < losses.rank()) w = expand_dims(w, -1);
  return mul(losses, cast(w, losses.dtype()));
}

SparseCategoricalCrossentropy::SparseCategoricalCrossentropy(CrossentropyOptions o)
    : Loss(
          "sparse_categorical_crossentropy",
          [o](const Tensor& y_true, const Tensor& y_pred) {
            Tensor labels = y_true;
            if (labels.rank() == y_pred.rank() && labels.dim(-1) == 1)
              labels = squeeze(labels, {-1});
            WEFT_CHECK(labels.rank() + 1 == y_pred.rank(), InvalidArgument)
                << "sparse_categorical_crossentropy: integer labels of shape "
                << shape_str(y_true.shape()) << " do not fit class scores of shape "
                << shape_str(y_pred.shape())
                << "; expected the scores' shape without its last axis";
            if (is_floating(labels.dtype())) labels = cast(labels, kInt64);
            if (labels.numel() > 0) {
              int64_t lo = min(labels).item<int64_t>(), hi = max(labels).item<int64_t>();
              WEFT_CHECK(lo >= 0 && hi < y_pred.dim(-1), InvalidArgument)
                  << "sparse_categorical_crossentropy: label " << (lo < 0 ? lo : hi)
                  << " is outside the valid range [0, " << y_pred.dim(-1) << ") of the "
                  << y_pred.dim(-1) << " classes";
            }
            Tensor p = widen(y_pred);
            if (o.from_logits) return sparse_softmax_cross_entropy_with_logits(labels, p);
            Tensor log_p = log(clip(p, kEpsilon, 1 - kEpsilon));
            return neg(sum(mul(one_hot(labels, p.dim(-1), 1, 0, p.dtype()), log_p), {-1}));
          },
          ConfigDict().set("from_logits", o.from_logits)) {
  WEFT_CHECK(o.label_smoothing == 0, InvalidArgument)
      << "sparse_categorical_crossentropy: label_smoothing applies to one-hot labels only (use "
         "CategoricalCrossentropy), got "
      << o.label_smoothing;
}

namespace {

void check_smoothing(const char* loss, double s) {
  WEFT_CHECK(s >= 0 && s <= 1, InvalidArgument)
      << loss << ": label_smoothing must be in [0, 1], got " << s;
}

ConfigDict crossentropy_config(const CrossentropyOptions& o) {
  return ConfigDict().set("from_logits", o.from_logits).set("label_smoothing", o.label_smoothing);
}

}  // namespace

CategoricalCrossentropy::CategoricalCrossentropy(CrossentropyOptions o)
    : Loss(
          "categorical_crossentropy",
          [o](const Tensor& y_true, const Tensor& y_pred) {
            check_same_shape("categorical_crossentropy", y_true, y_pred);
            Tensor p = widen(y_pred), y = cast(y_true, widen(y_pred).dtype());
            if (o.label_smoothing > 0) {
              double classes = static_cast<double>(p.dim(-1));
              y = add(mul(y, 1 - o.label_smoothing), o.label_smoothing / classes);
            }
            if (o.from_logits) return neg(sum(mul(y, log_softmax(p)), {-1}));
            Tensor normalized = div(p, sum(p, {-1}, true));
            return neg(sum(mul(y, log(clip(normalized, kEpsilon, 1 - kEpsilon))), {-1}));
          },
          crossentropy_config(o)) {
  check_smoothing("categorical_crossentropy", o.label_smoothing);
}

BinaryCrossentropy::BinaryCrossentropy(CrossentropyOptions o)
    : Loss(
          "binary_crossentropy",
          [o](const Tensor& y_true, const Tensor& y_pred) {
            check_same_shape("binary_crossentropy", y_true, y_pred);
            Tensor x = widen(y_pred), z = cast(y_true, widen(y_pred).dtype());
            if (o.label_smoothing > 0)
              z = add(mul(z, 1 - o.label_smoothing), 0.5 * o.label_smoothing);
            if (o.from_logits) {
              // max(x, 0) - x z + log(1 + exp(-|x|)), stable for large |x|.
              Tensor l = add(sub(maximum(x, 0.0), mul(x, z)), log(add(exp(neg(abs(x))), 1.0)));
              return mean(l, {-1});
            }
            // TF 2.4's K.binary_crossentropy: clipped, and epsilon inside both logs.
            Tensor p = clip(x, kEpsilon, 1 - kEpsilon);
            Tensor l = neg(add(mul(z, log(add(p, kEpsilon))),
                               mul(sub(1.0, z), log(add(sub(1.0, p), kEpsilon)))));
            return mean(l, {-1});
          },
          crossentropy_config(o)) {
  check_smoothing("binary_crossentropy", o.label_smoothing);
}

MeanSquaredError::MeanSquaredError()
    : Loss("mean_squared_error",
           elementwise_mean("mean_squared_error",
                            [](const Tensor& y, const Tensor& p) { return square(sub(p, y)); }),
           ConfigDict()) {}

MeanAbsoluteError::MeanAbsoluteError()
    : Loss("mean_absolute_error",
           elementwise_mean("mean_absolute_error",
                            [](const Tensor& y, const Tensor& p) { return abs(sub(p, y)); }),
           ConfigDict()) {}

MeanAbsolutePercentageError::MeanAbsolutePercentageError()
    : Loss("mean_absolute_percentage_error",
           elementwise_mean("mean_absolute_percentage_error",
                            [](const Tensor& y, const Tensor& p) {
                              return mul(abs(div(sub(y, p), maximum(abs(y), kEpsilon))), 100.0);
                            }),
           ConfigDict()) {}

MeanSquaredLogarithmicError::MeanSquaredLogarithmicError()
    : Loss("mean_squared_logarithmic_error",
           elementwise_mean("mean_squared_logarithmic_error",
                            [](const Tensor& y, const Tensor& p) {
                              return square(
                                  sub(log1p(maximum(p, kEpsilon)), log1p(maximum(y, kEpsilon))));
                            }),
           ConfigDict()) {}

Huber::Huber(double delta)
    : Loss("huber",
           elementwise_mean("huber",
                            [delta](const Tensor& y, const Tensor& p) {
                              Tensor err = abs(sub(p, y));
                              Tensor quadratic = mul(square(err), 0.5);
                              Tensor linear = sub(mul(err, delta), 0.5 * delta * delta);
                              return where(less_equal(err, Tensor::scalar(delta, p.dtype())),
                                           quadratic, linear);
                            }),
           ConfigDict().set("delta", delta)) {}

LogCosh::LogCosh()
    : Loss("log_cosh",
           elementwise_mean("log_cosh",
                            [](const Tensor& y, const Tensor& p) {
                              Tensor x = sub(p, y);
                              // softplus(-2x) = logaddexp(0, -2x)
                              Tensor softplus = logaddexp(mul(x, -2.0), zeros_like(x));
                              return sub(add(x, softplus), std::log(2.0));
                            }),
           ConfigDict()) {}

KLDivergence::KLDivergence()
    : Loss(
          "kl_divergence",
          [](const Tensor& y_true, const Tensor& y_pred) {
            check_same_shape("kl_divergence", y_true, y_pred);
            Tensor p = clip(widen(y_pred), kEpsilon, 1.0);
            Tensor y = clip(cast(y_true, p.dtype()), kEpsilon, 1.0);
            return sum(mul(y, log(div(y, p))), {-1});
          },
          ConfigDict()) {}

Poisson::Poisson()
    : Loss("poisson",
           elementwise_mean("poisson",
                            [](const Tensor& y, const Tensor& p) {
                              return sub(p, mul(y, log(add(p, kEpsilon))));
                            }),
           ConfigDict()) {}

CosineSimilarity::CosineSimilarity(int axis)
    : Loss(
          "cosine_similarity",
          [axis](const Tensor& y_true, const Tensor& y_pred) {
            check_same_shape("cosine_similarity", y_true, y_pred);
            Tensor p = widen(y_pred);
            Tensor y = cast(y_true, p.dtype());
            return neg(sum(mul(l2_normalize(y, axis), l2_normalize(p, axis)), {axis}));
          },
          ConfigDict().set("axis", axis)) {}

Hinge::Hinge()
    : Loss("hinge",
           elementwise_mean("hinge",
                            [](const Tensor& y, const Tensor& p) {
                              return maximum(sub(1.0, mul(signed_labels(y), p)), 0.0);
                            }),
           ConfigDict()) {}

SquaredHinge::SquaredHinge()
    : Loss("squared_hinge",
           elementwise_mean("squared_hinge",
                            [](const Tensor& y, const Tensor& p) {
                              return square(maximum(sub(1.0, mul(signed_labels(y), p)), 0.0));
                            }),
           ConfigDict()) {}

CategoricalHinge::CategoricalHinge()
    : Loss(
          "categorical_hinge",
          [](const Tensor& y_true, const Tensor& y_pred) {
            check_same_shape("categorical_hinge", y_true, y_pred);
            Tensor p = widen(y_pred);
            Tensor y = cast(y_true, p.dtype());
            Tensor pos = sum(mul(y, p), {-1});
            Tensor neg_score = max(mul(sub(1.0, y), p), {-1});
            return maximum(add(sub(neg_score, pos), 1.0), 0.0);
          },
          ConfigDict()) {}

Loss get(const std::string& name) {
  if (name == "sparse_categorical_crossentropy") return SparseCategoricalCrossentropy();
  if (name == "categorical_crossentropy") return CategoricalCrossentropy();
  if (name == "binary_crossentropy") return BinaryCrossentropy();
  if (name == "mse" || name == "mean_squared_error") return MeanSquaredError();
  if (name == "mae" || name == "mean_absolute_error") return MeanAbsoluteError();
  if (name == "mape" || name == "mean_absolute_percentage_error")
    return MeanAbsolutePercentageError();
  if (name == "msle" || name == "mean_squared_logarithmic_error")
    return MeanSquaredLogarithmicError();
  if (name == "huber" || name == "huber_loss") return Huber();
  if (name == "logcosh" || name == "log_cosh") return LogCosh();
  if (name == "kld" || name == "kl_divergence" || name == "kullback_leibler_divergence")
    return KLDivergence();
  if (name == "poisson") return Poisson();
  if (name == "cosine_similarity") return CosineSimilarity();
  if (name == "hinge") return Hinge();
  if (name == "squared_hinge") return SquaredHinge();
  if (name == "categorical_hinge") return CategoricalHinge();
  WEFT_FAIL(InvalidArgument)
      << "unknown loss \"" << name
      << "\"; expected one of sparse_categorical_crossentropy, categorical_crossentropy, "
         "binary_crossentropy, mse, mae, mape, msle, huber, logcosh, kld, poisson, "
         "cosine_similarity, hinge, squared_hinge, categorical_hinge";
  return MeanSquaredError();
}

Loss from_config(const std::string& name, const ConfigDict& config) {
  CrossentropyOptions o;
  o.from_logits = config.get_bool("from_logits", false);
  o.label_smoothing = config.get_double("label_smoothing", 0.0);
  if (name == "sparse_categorical_crossentropy") return SparseCategoricalCrossentropy(o);
  if (name == "categorical_crossentropy") return CategoricalCrossentropy(o);
  if (name == "binary_crossentropy") return BinaryCrossentropy(o);
  if (name == "huber") return Huber(config.get_double("delta", 1.0));
  if (name == "cosine_similarity") return CosineSimilarity(config.get_int("axis", -1));
  return get(name);
}

}  // namespace weft::nn::losses
