#include "weft/nn/normalization.h"

#include "weft/autodiff/tape.h"
#include "weft/core/replica_context.h"
#include "weft/nn/internal/layer_util.h"
#include "weft/ops/batch_norm.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"

namespace weft::nn {
namespace {

using internal::layer_label;

// The feature axis of `input_shape` (batch included) for a Keras-style `axis`, checked.
int64_t feature_axis(const LayerImpl& layer, const Shape& input_shape, int64_t axis) {
  auto rank = static_cast<int64_t>(input_shape.size());
  WEFT_CHECK(rank >= 2, InvalidArgument)
      << layer_label(layer) << ": expected an input of rank >= 2 (batch, ...), got shape "
      << shape_str(input_shape);
  WEFT_CHECK(axis >= -rank && axis < rank && axis != 0 && axis != -rank, InvalidArgument)
      << layer_label(layer) << ": axis " << axis << " is not a feature axis of an input of shape "
      << shape_str(input_shape) << " (expected 1 <= axis < " << rank << " or -" << rank - 1
      << " <= axis <= -1)";
  return axis < 0 ? axis + rank : axis;
}

// Half types are normalised in float32, then rounded back.
Tensor widen(const Tensor& x) { return is_half(x.dtype()) ? cast(x, kFloat32) : x; }

// Normalisation shared by both layers: gamma and beta (when present) along `axis`.
class NormalizationBase : public LayerImpl {
 protected:
  NormalizationBase(std::string class_name, std::string name, const std::string& dtype,
                    int64_t axis, bool center, bool scale, const std::string& beta_init,
                    const std::string& gamma_init)
      : LayerImpl(std::move(class_name), std::move(name), dtype),
        axis_option_(axis),
        center_(center),
        scale_(scale),
        beta_init_name_(beta_init),
        gamma_init_name_(gamma_init),
        beta_init_(internal::initializer_for(*this, "beta_initializer", beta_init)),
        gamma_init_(internal::initializer_for(*this, "gamma_initializer", gamma_init)) {}
  // Keras passes masks through both normalizations (the statistics count masked steps too).
  bool supports_masking() const override { return true; }

  // What both normalizations' configs hold.
  ConfigDict get_config() const override {
    ConfigDict c = LayerImpl::get_config();
    c.set("axis", axis_option_).set("center", center_).set("scale", scale_);
    c.set("beta_initializer", beta_init_name_).set("gamma_initializer", gamma_init_name_);
    return c;
  }

  // Resolves the axis and adds gamma and beta, Keras's order.
  void build_affine(const Shape& input_shape) {
    axis_ = feature_axis(*this, input_shape, axis_option_);
    features_ = input_shape[axis_];
    param_shape_ = Shape(input_shape.size(), 1);
    param_shape_[axis_] = features_;
    if (scale_) gamma_ = add_weight("gamma", {features_}, gamma_init_);
    if (center_) beta_ = add_weight("beta", {features_}, beta_init_);
  }

  // A (features,) vector shaped to broadcast along the feature axis.
  Tensor along_axis(const Tensor& v) const { return reshape(v, param_shape_); }

  Tensor affine(const Tensor& normalized) const {
    Tensor y = normalized;
    if (scale_) y = mul(y, along_axis(gamma_));
    if (center_) y = add(y, along_axis(beta_));
    return y;
  }

  int64_t axis_option_;
  bool center_, scale_;
  std::string beta_init_name_, gamma_init_name_;
  Initializer beta_init_, gamma_init_;
  int64_t axis_ = -1, features_ = 0;
  Shape param_shape_;
  Variable gamma_, beta_;
};

class BatchNormalizationImpl : public NormalizationBase {
 public:
  explicit BatchNormalizationImpl(BatchNormalizationOptions options,
                                  std::string class_name = "BatchNormalization")
      : NormalizationBase(std::move(class_name), options.name, options.dtype, options.axis,
                          options.center, options.scale, options.beta_initializer,
                          options.gamma_initializer),
        options_(std::move(options)),
        activation_(internal::activation_for(*this, options_.activation)),
        moving_mean_init_(internal::initializer_for(*this, "moving_mean_initializer",
                                                    options_.moving_mean_initializer)),
        moving_variance_init_(internal::initializer_for(*this, "moving_variance_initializer",
                                                        options_.moving_variance_initializer)) {
    WEFT_CHECK(options_.epsilon > 0, InvalidArgument)
        << layer_label(*this) << ": epsilon must be positive, got " << options_.epsilon;
    WEFT_CHECK(options_.momentum >= 0 && options_.momentum <= 1, InvalidArgument)
        << layer_label(*this) << ": momentum must be in [0, 1], got " << options_.momentum;
  }

  ConfigDict get_config() const override {
    ConfigDict c = NormalizationBase::get_config();
    c.set("momentum", options_.momentum).set("epsilon", options_.epsilon);
    c.set("moving_mean_initializer", options_.moving_mean_initializer);
    c.set("moving_variance_initializer", options_.moving_variance_initializer);
    c.set("activation", options_.activation);
    return c;
  }

  void build(const Shape& input_shape) override {
    build_affine(input_shape);
    // MEAN: replicas' updates in one step combine into their mean (DISTRIBUTED.md §1).
    moving_mean_ = add_weight("moving_mean", {features_}, moving_mean_init_, false, {},
                              VariableAggregation::MEAN);
    moving_variance_ = add_weight("moving_variance", {features_}, moving_variance_init_, false, {},
                                  VariableAggregation::MEAN);
  }

  Tensor call(const Tensor& x_in, bool training) override {
    if (training && trainable() && synchronized_) return synchronized_training(x_in);
    if (training && trainable() && x_in.numel() == 0) {
      // No rows (a replica's share of a short last batch): no statistics to update, but under a
      // strategy the replica still records an update of no weight (count 0), so that every
      // replica's updates, and so the reductions across workers, stay alike.
      if (auto* collector = autodiff::UpdateCollector::current()) {
        for (const Variable& v : {moving_mean_, moving_variance_}) {
          collector->record({v, v.value(), /*count=*/0});
        }
      }
      return activation_(x_in);
    }
    if (training && trainable()) {
      // One fused op, which normalises half types in float32 itself; a missing gamma or beta is
      // a constant 1 or 0.
      DType param_dtype = batch_norm_param_dtype(x_in.dtype());
      Tensor gamma = scale_ ? Tensor(gamma_) : ones({features_}, param_dtype);
      Tensor beta = center_ ? Tensor(beta_) : zeros({features_}, param_dtype);
      bool fused_relu = options_.activation == "relu";
      BatchNormResult r =
          batch_norm_training(x_in, cast(gamma, param_dtype), cast(beta, param_dtype), axis_,
                              options_.epsilon, fused_relu);
      update_moving(moving_mean_, r.mean);
      update_moving(moving_variance_, r.variance);
      return fused_relu ? r.y : activation_(r.y);
    }
    // In x's precision: rsqrt of the float32 variance would round a float64 input's result.
    Tensor x = widen(x_in);
    Tensor moving_mean = cast(along_axis(moving_mean_), x.dtype());
    Tensor moving_variance = cast(along_axis(moving_variance_), x.dtype());
    Tensor y = affine(mul(sub(x, moving_mean), rsqrt(add(moving_variance, options_.epsilon))));
    return activation_(y.dtype() == x_in.dtype() ? y : cast(y, x_in.dtype()));
  }

  std::string describe() const override { return options_.activation; }
  bool synchronizes_replicas() const override { return synchronized_; }

 protected:
  // SyncBatchNormalization: statistics over the global batch, across replicas.
  bool synchronized_ = false;

 private:
  // Mean and variance over every replica's rows (two all-reduces: the sum, then the squared
  // deviations from the global mean), and a backward pass that all-reduces its two feature sums,
  // so that gradients are those of normalising the whole global batch. On one replica the
  // all-reduces return their input: BatchNormalization's result, by plain ops.
  Tensor synchronized_training(const Tensor& x_in) {
    distribute::ReplicaContext& ctx = distribute::get_replica_context();
    Tensor x = widen(x_in);
    std::vector<int64_t> axes;
    for (int64_t a = 0; a < x.rank(); ++a) {
      if (a != axis_) axes.push_back(a);
    }
    Tensor gamma = scale_ ? cast(gamma_, x.dtype()) : ones({features_}, x.dtype());
    Tensor beta = center_ ? cast(beta_, x.dtype()) : zeros({features_}, x.dtype());
    Tensor mean, var, inv_std, xhat, y;
    double n = 0;
    {
      autodiff::NoRecordScope no_record;
      double local = features_ > 0 ? static_cast<double>(x.numel() / features_) : 0;
      std::vector<Tensor> sums =
          ctx.all_reduce(distribute::ReduceOp::SUM, {sum(x, axes), full({1}, local, kFloat64)});
      n = sums[1].item<double>();
      WEFT_CHECK(n > 0, InvalidArgument)
          << layer_label(*this) << ": the global batch has no rows to normalise";
      mean = div(sums[0], n);
      Tensor centered = sub(x, along_axis(mean));
      var = div(ctx.all_reduce(distribute::ReduceOp::SUM, {sum(square(centered), axes)})[0], n);
      inv_std = rsqrt(add(var, options_.epsilon));
      xhat = mul(centered, along_axis(inv_std));
      y = add(mul(xhat, along_axis(gamma)), along_axis(beta));
    }
    if (autodiff::is_recording()) {
      autodiff::record(
          "SyncBatchNormalization", {x, gamma, beta}, {y},
          [this, xhat, inv_std, gamma, axes, n](const autodiff::Grads& g) -> std::vector<Tensor> {
            const Tensor& dy = g[0];
            Tensor dx;
            if (g.needs(0)) {
              Tensor dxhat = mul(dy, along_axis(gamma));
              std::vector<Tensor> sums = distribute::get_replica_context().all_reduce(
                  distribute::ReduceOp::SUM, {sum(dxhat, axes), sum(mul(dxhat, xhat), axes)});
              dx = mul(sub(sub(mul(dxhat, n), along_axis(sums[0])), mul(xhat, along_axis(sums[1]))),
                       along_axis(div(inv_std, n)));
            }
            return {dx, sum(mul(dy, xhat), axes), sum(dy, axes)};
          });
    }
    update_moving(moving_mean_, mean);
    update_moving(moving_variance_, var);
    y = activation_(y);
    return y.dtype() == x_in.dtype() ? y : cast(y, x_in.dtype());
  }

  void update_moving(Variable moving, const Tensor& batch) const {
    autodiff::NoRecordScope no_record;
    double m = options_.momentum;
    moving.assign(add(mul(moving, m), mul(batch, 1.0 - m)));
  }

  BatchNormalizationOptions options_;
  activations::Activation activation_;
  Initializer moving_mean_init_, moving_variance_init_;
  Variable moving_mean_, moving_variance_;
};

class LayerNormalizationImpl : public NormalizationBase {
 public:
  explicit LayerNormalizationImpl(const LayerNormalizationOptions& options)
      : NormalizationBase("LayerNormalization", options.name, options.dtype, options.axis,
                          options.center, options.scale, options.beta_initializer,
                          options.gamma_initializer),
        epsilon_(options.epsilon) {
    WEFT_CHECK(epsilon_ > 0, InvalidArgument)
        << layer_label(*this) << ": epsilon must be positive, got " << epsilon_;
  }

  void build(const Shape& input_shape) override { build_affine(input_shape); }
  ConfigDict get_config() const override {
    return NormalizationBase::get_config().set("epsilon", epsilon_);
  }

  Tensor call(const Tensor& x_in, bool training) override {
    Tensor x = widen(x_in);
    Tensor centered = sub(x, mean(x, {axis_}, true));
    Tensor var = mean(square(centered), {axis_}, true);
    Tensor y = affine(mul(centered, rsqrt(add(var, epsilon_))));
    return y.dtype() == x_in.dtype() ? y : cast(y, x_in.dtype());
  }

 private:
  double epsilon_;
};

class SyncBatchNormalizationImpl : public BatchNormalizationImpl {
 public:
  explicit SyncBatchNormalizationImpl(BatchNormalizationOptions options)
      : BatchNormalizationImpl(std::move(options), "SyncBatchNormalization") {
    synchronized_ = true;
  }
};

}  // namespace

BatchNormalization::BatchNormalization(BatchNormalizationOptions options)
    : Layer(std::make_shared<BatchNormalizationImpl>(std::move(options))) {}

SyncBatchNormalization::SyncBatchNormalization(BatchNormalizationOptions options)
    : Layer(std::make_shared<SyncBatchNormalizationImpl>(std::move(options))) {}

LayerNormalization::LayerNormalization(LayerNormalizationOptions options)
    : Layer(std::make_shared<LayerNormalizationImpl>(options)) {}

namespace {
// What both normalizations' configs hold (NormalizationBase::get_config), into their options.
template <typename Options>
Options normalization_options(const ConfigDict& c) {
  Options o;
  o.axis = c.get_int("axis", o.axis);
  o.epsilon = c.get_double("epsilon", o.epsilon);
  o.center = c.get_bool("center", o.center);
  o.scale = c.get_bool("scale", o.scale);
  o.beta_initializer = c.get_string("beta_initializer", o.beta_initializer);
  o.gamma_initializer = c.get_string("gamma_initializer", o.gamma_initializer);
  return o;
}

BatchNormalizationOptions batch_normalization_options(const ConfigDict& c) {
  auto o = normalization_options<BatchNormalizationOptions>(c);
  o.momentum = c.get_double("momentum", o.momentum);
  o.moving_mean_initializer = c.get_string("moving_mean_initializer", o.moving_mean_initializer);
  o.moving_variance_initializer =
      c.get_string("moving_variance_initializer", o.moving_variance_initializer);
  o.activation = c.get_string("activation", "");
  return o;
}
}  // namespace

BatchNormalization BatchNormalization::from_config(const ConfigDict& c) {
  return internal::configured(BatchNormalization(batch_normalization_options(c)), c);
}

SyncBatchNormalization SyncBatchNormalization::from_config(const ConfigDict& c) {
  return internal::configured(SyncBatchNormalization(batch_normalization_options(c)), c);
}

LayerNormalization LayerNormalization::from_config(const ConfigDict& c) {
  return internal::configured(
      LayerNormalization(normalization_options<LayerNormalizationOptions>(c)), c);
}

}  // namespace weft::nn
