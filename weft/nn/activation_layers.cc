#include "weft/nn/activation_layers.h"

#include "weft/nn/internal/layer_util.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/math.h"
#include "weft/ops/nn.h"

namespace weft::nn {
namespace {

using internal::layer_label;

// An elementwise activation with the options a config records.
Tensor positive(const Tensor& x) { return greater(x, Tensor::scalar(0, x.dtype())); }

class PReLUImpl : public LayerImpl {
 public:
  explicit PReLUImpl(PReLUOptions o)
      : LayerImpl("PReLU", o.name, o.dtype),
        o_(std::move(o)),
        init_(internal::initializer_for(*this, "alpha_initializer", o_.alpha_initializer)) {}
  bool supports_masking() const override { return true; }
  void build(const Shape& input_shape) override {
    Shape shape(input_shape.begin() + 1, input_shape.end());
    for (int64_t axis : o_.shared_axes) {
      WEFT_CHECK(axis >= 1 && axis <= static_cast<int64_t>(shape.size()), InvalidArgument)
          << layer_label(*this) << ": shared axis " << axis << " is not an axis of inputs of shape "
          << shape_str(input_shape) << " (axes count from 1, after the batch)";
      shape[axis - 1] = 1;
    }
    alpha_ = add_weight("alpha", shape, init_);
  }
  Tensor call(const Tensor& x, bool training) override {
    return where(positive(x), x, mul(x, cast_variable(alpha_)));
  }
  ConfigDict get_config() const override {
    ConfigDict c = LayerImpl::get_config();
    c.set("alpha_initializer", o_.alpha_initializer).set("shared_axes", o_.shared_axes);
    return c;
  }

 private:
  PReLUOptions o_;
  Initializer init_;
  Variable alpha_;
};

}  // namespace

LeakyReLU::LeakyReLU(double alpha, LayerOptions o)
    : Layer(std::make_shared<internal::FunctionLayerImpl>(
          "LeakyReLU", o.name, o.dtype, nullptr,
          [alpha](const Tensor& x) { return where(positive(x), x, mul(x, alpha)); },
          [alpha](ConfigDict& c) { c.set("alpha", alpha); }, /*masking=*/true)) {}
LeakyReLU LeakyReLU::from_config(const ConfigDict& c) {
  return internal::configured(LeakyReLU(c.get_double("alpha", 0.3)), c);
}

ELU::ELU(double alpha, LayerOptions o)
    : Layer(std::make_shared<internal::FunctionLayerImpl>(
          "ELU", o.name, o.dtype, nullptr,
          [alpha](const Tensor& x) { return where(positive(x), x, mul(expm1(x), alpha)); },
          [alpha](ConfigDict& c) { c.set("alpha", alpha); }, /*masking=*/true)) {}
ELU ELU::from_config(const ConfigDict& c) {
  return internal::configured(ELU(c.get_double("alpha", 1.0)), c);
}

ReLU::ReLU(ReLUOptions o)
    : Layer(std::make_shared<internal::FunctionLayerImpl>(
          "ReLU", o.name, o.dtype, nullptr,
          [o](const Tensor& x) {
            Tensor t = Tensor::scalar(o.threshold, x.dtype());
            Tensor y = where(greater_equal(x, t), x, mul(sub(x, t), o.negative_slope));
            if (o.max_value) y = minimum(y, Tensor::scalar(*o.max_value, x.dtype()));
            return y;
          },
          [o](ConfigDict& c) {
            c.set("max_value", o.max_value).set("negative_slope", o.negative_slope);
            c.set("threshold", o.threshold);
          },
          /*masking=*/true)) {
  WEFT_CHECK(!o.max_value || *o.max_value >= 0, InvalidArgument)
      << layer_label(impl()) << ": max_value must be non-negative, got " << *o.max_value;
  WEFT_CHECK(o.negative_slope >= 0, InvalidArgument)
      << layer_label(impl()) << ": negative_slope must be non-negative, got " << o.negative_slope;
}
ReLU ReLU::from_config(const ConfigDict& c) {
  ReLUOptions o;
  o.max_value = c.get_optional_double("max_value");
  o.negative_slope = c.get_double("negative_slope", 0);
  o.threshold = c.get_double("threshold", 0);
  return internal::configured(ReLU(o), c);
}

Softmax::Softmax(int64_t axis, LayerOptions o)
    : Layer(std::make_shared<internal::FunctionLayerImpl>(
          "Softmax", o.name, o.dtype, nullptr,
          [axis](const Tensor& x) {
            // A mask of the input's shape (scores over steps) hides the masked entries, as
            // Keras's Softmax(inputs, mask); a (batch, steps) one of wider inputs is passed on.
            Tensor mask = keras_mask(x);
            bool hides = mask.defined() && mask.shape() == x.shape();
            return softmax(hides ? internal::mask_scores(x, mask) : x, static_cast<int>(axis));
          },
          [axis](ConfigDict& c) { c.set("axis", axis); }, /*masking=*/true)) {}
Softmax Softmax::from_config(const ConfigDict& c) {
  return internal::configured(Softmax(c.get_int("axis", -1)), c);
}

PReLU::PReLU(PReLUOptions o) : Layer(std::make_shared<PReLUImpl>(std::move(o))) {}
PReLU PReLU::from_config(const ConfigDict& c) {
  PReLUOptions o;
  o.alpha_initializer = c.get_string("alpha_initializer", o.alpha_initializer);
  if (c.has("shared_axes") && !c.is_null("shared_axes")) o.shared_axes = c.get_ints("shared_axes");
  return internal::configured(PReLU(o), c);
}

}  // namespace weft::nn
