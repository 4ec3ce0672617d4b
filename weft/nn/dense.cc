#include "weft/nn/dense.h"

#include "weft/nn/activations.h"
#include "weft/nn/internal/layer_util.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/linalg.h"

namespace weft::nn {
namespace {

class DenseImpl : public LayerImpl {
 public:
  bool supports_masking() const override { return true; }
  // Only the last axis (the features) is fixed, as Keras's Dense input spec.
  bool any_size(size_t axis) const override { return axis + 1 < built_shapes_[0].size(); }
  DenseImpl(int64_t units, std::string activation, DenseOptions options)
      : LayerImpl("Dense", options.name, options.dtype),
        units_(units),
        activation_name_(std::move(activation)),
        activation_(internal::activation_for(*this, activation_name_)),
        options_(std::move(options)),
        kernel_init_(
            internal::initializer_for(*this, "kernel_initializer", options_.kernel_initializer)),
        bias_init_(
            internal::initializer_for(*this, "bias_initializer", options_.bias_initializer)) {
    WEFT_CHECK(units > 0, InvalidArgument) << "Dense: units must be positive, got " << units;
    set_activity_regularizer(options_.activity_regularizer);
  }
  void build(const Shape& input_shape) override {
    WEFT_CHECK(input_shape.size() >= 2, InvalidArgument)
        << "Dense \"" << name() << "\": expected an input of rank >= 2 (batch, features), got "
        << shape_str(input_shape);
    kernel_ = add_weight("kernel", {input_shape.back(), units_},
                         initializers::get(options_.kernel_initializer), true, {},
                         VariableAggregation::NONE, options_.kernel_regularizer,
                         options_.kernel_constraint, options_.kernel_layout);
    if (options_.use_bias) {
      dtensor::Layout bias_layout = options_.bias_layout;
      if (bias_layout.is_empty() && !options_.kernel_layout.is_empty()) {
        bias_layout = options_.kernel_layout.delete_axes({0});
      }
      bias_ = add_weight("bias", {units_}, initializers::get(options_.bias_initializer), true, {},
                         VariableAggregation::NONE, options_.bias_regularizer,
                         options_.bias_constraint, bias_layout);
    }
  }
  Tensor call(const Tensor& x, bool training) override {
    Tensor y = matmul(x, cast_variable(kernel_));
    if (options_.use_bias) y = add(y, cast_variable(bias_));
    return activation_(y);
  }
  std::string describe() const override { return activation_name_; }
  ConfigDict get_config() const override {
    ConfigDict c = LayerImpl::get_config();
    c.set("units", units_).set("activation", activation_name_).set("use_bias", options_.use_bias);
    c.set("kernel_initializer", options_.kernel_initializer);
    c.set("bias_initializer", options_.bias_initializer);
    internal::set_config_fn(c, "kernel_regularizer", options_.kernel_regularizer);
    internal::set_config_fn(c, "bias_regularizer", options_.bias_regularizer);
    internal::set_config_fn(c, "kernel_constraint", options_.kernel_constraint);
    internal::set_config_fn(c, "bias_constraint", options_.bias_constraint);
    return c;
  }

 private:
  int64_t units_;
  std::string activation_name_;
  activations::Activation activation_;
  DenseOptions options_;
  Initializer kernel_init_, bias_init_;
  Variable kernel_, bias_;
};

}  // namespace

Dense::Dense(int64_t units, const std::string& activation, DenseOptions options)
    : Layer(std::make_shared<DenseImpl>(units, activation, std::move(options))) {}

Dense Dense::from_config(const ConfigDict& c) {
  DenseOptions o;
  o.use_bias = c.get_bool("use_bias", true);
  o.kernel_initializer = c.get_string("kernel_initializer", o.kernel_initializer);
  o.bias_initializer = c.get_string("bias_initializer", o.bias_initializer);
  internal::read_kernel_bias_rules(c, o);
  return internal::configured(Dense(c.get_int("units"), c.get_string("activation", ""), o), c);
}

}  // namespace weft::nn
