#include "weft/nn/losses.h"

#include "weft/ops/cast.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/nn.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"

namespace weft::nn::losses {
namespace {

constexpr double kEpsilon = 1e-7;  // Keras's backend epsilon: probabilities are clipped to it

// Losses compute in float32 at least (float64 stays float64).
Tensor widen(const Tensor& t) { return t.dtype() == kFloat64 ? t : cast(t, kFloat32); }

void check_same_shape(const char* loss, const Tensor& y_true, const Tensor& y_pred) {
  WEFT_CHECK(y_true.shape() == y_pred.shape(), InvalidArgument)
      << loss << ": y_true has shape " << shape_str(y_true.shape()) << " but y_pred has shape "
      << shape_str(y_pred.shape()) << "; they must match";
}

}  // namespace

Loss::Loss(std::string name, PerExample per_example)
    : state_(std::make_shared<State>(State{std::move(name), std::move(per_example), {}})) {}

Loss::Loss(std::string name, PerExample per_example, ConfigDict config)
    : state_(std::make_shared<State>(
          State{std::move(name), std::move(per_example), std::move(config)})) {}

Tensor Loss::per_example(const Tensor& y_true, const Tensor& y_pred) const {
  WEFT_CHECK(y_true.defined() && y_pred.defined(), InvalidArgument)
      << name() << ": y_true or y_pred is undefined";
  return state_->fn(y_true, y_pred);
}

Tensor Loss::operator()(const Tensor& y_true, const Tensor& y_pred) const {
  return mean(per_example(y_true, y_pred));
}

SparseCategoricalCrossentropy::SparseCategoricalCrossentropy(CrossentropyOptions o)
    : Loss(
          "sparse_categorical_crossentropy",
          [o](const Tensor& y_true, const Tensor& y_pred) {
            Tensor labels = y_true;
            if (labels.rank() == y_pred.rank() && labels.dim(-1) == 1)
              labels = squeeze(labels, {-1});
            if (is_floating(labels.dtype())) labels = cast(labels, kInt64);
            Tensor p = widen(y_pred);
            if (o.from_logits) return sparse_softmax_cross_entropy_with_logits(labels, p);
            Tensor log_p = log(clip(p, kEpsilon, 1 - kEpsilon));
            return neg(sum(mul(one_hot(labels, p.dim(-1), 1, 0, p.dtype()), log_p), {-1}));
          },
          ConfigDict().set("from_logits", o.from_logits)) {}

CategoricalCrossentropy::CategoricalCrossentropy(CrossentropyOptions o)
    : Loss(
          "categorical_crossentropy",
          [o](const Tensor& y_true, const Tensor& y_pred) {
            check_same_shape("categorical_crossentropy", y_true, y_pred);
            Tensor p = widen(y_pred), y = cast(y_true, widen(y_pred).dtype());
            if (o.from_logits) return neg(sum(mul(y, log_softmax(p)), {-1}));
            Tensor normalized = div(p, sum(p, {-1}, true));
            return neg(sum(mul(y, log(clip(normalized, kEpsilon, 1 - kEpsilon))), {-1}));
          },
          ConfigDict().set("from_logits", o.from_logits)) {}

BinaryCrossentropy::BinaryCrossentropy(CrossentropyOptions o)
    : Loss(
          "binary_crossentropy",
          [o](const Tensor& y_true, const Tensor& y_pred) {
            check_same_shape("binary_crossentropy", y_true, y_pred);
            Tensor x = widen(y_pred), z = cast(y_true, widen(y_pred).dtype());
            if (o.from_logits) {
              // max(x, 0) - x z + log(1 + exp(-|x|)), stable for large |x|.
              Tensor l = add(sub(maximum(x, 0.0), mul(x, z)), log(add(exp(neg(abs(x))), 1.0)));
              return mean(l, {-1});
            }
            Tensor p = clip(x, kEpsilon, 1 - kEpsilon);
            Tensor l = neg(add(mul(z, log(p)), mul(sub(1.0, z), log(sub(1.0, p)))));
            return mean(l, {-1});
          },
          ConfigDict().set("from_logits", o.from_logits)) {}

MeanSquaredError::MeanSquaredError()
    : Loss(
          "mean_squared_error",
          [](const Tensor& y_true, const Tensor& y_pred) {
            check_same_shape("mean_squared_error", y_true, y_pred);
            Tensor p = widen(y_pred);
            return mean(square(sub(p, cast(y_true, p.dtype()))), {-1});
          },
          ConfigDict()) {}

MeanAbsoluteError::MeanAbsoluteError()
    : Loss(
          "mean_absolute_error",
          [](const Tensor& y_true, const Tensor& y_pred) {
            check_same_shape("mean_absolute_error", y_true, y_pred);
            Tensor p = widen(y_pred);
            return mean(abs(sub(p, cast(y_true, p.dtype()))), {-1});
          },
          ConfigDict()) {}

Huber::Huber(double delta)
    : Loss(
          "huber",
          [delta](const Tensor& y_true, const Tensor& y_pred) {
            check_same_shape("huber", y_true, y_pred);
            Tensor p = widen(y_pred);
            Tensor err = abs(sub(p, cast(y_true, p.dtype())));
            Tensor quadratic = mul(square(err), 0.5);
            Tensor linear = sub(mul(err, delta), 0.5 * delta * delta);
            return mean(where(less_equal(err, Tensor::scalar(delta, p.dtype())), quadratic, linear),
                        {-1});
          },
          ConfigDict().set("delta", delta)) {}

Loss get(const std::string& name) {
  if (name == "sparse_categorical_crossentropy") return SparseCategoricalCrossentropy();
  if (name == "categorical_crossentropy") return CategoricalCrossentropy();
  if (name == "binary_crossentropy") return BinaryCrossentropy();
  if (name == "mse" || name == "mean_squared_error") return MeanSquaredError();
  if (name == "mae" || name == "mean_absolute_error") return MeanAbsoluteError();
  if (name == "huber") return Huber();
  WEFT_FAIL(InvalidArgument) << "unknown loss \"" << name
                             << "\"; expected one of sparse_categorical_crossentropy, "
                                "categorical_crossentropy, binary_crossentropy, mse, mae, huber";
  return MeanSquaredError();
}

Loss from_config(const std::string& name, const ConfigDict& config) {
  CrossentropyOptions o;
  o.from_logits = config.get_bool("from_logits", false);
  if (name == "sparse_categorical_crossentropy") return SparseCategoricalCrossentropy(o);
  if (name == "categorical_crossentropy") return CategoricalCrossentropy(o);
  if (name == "binary_crossentropy") return BinaryCrossentropy(o);
  if (name == "huber") return Huber(config.get_double("delta", 1.0));
  return get(name);
}

}  // namespace weft::nn::losses
