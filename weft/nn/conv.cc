#include "weft/nn/conv.h"

#include "weft/nn/internal/layer_util.h"
#include "weft/ops/elementwise.h"

namespace weft::nn {
namespace {

using internal::layer_label;

// Output size of one spatial axis, as the conv2d op computes it (TF's rules).
int64_t conv_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
                         const std::string& padding) {
  if (padding == "SAME") return (in + stride - 1) / stride;
  int64_t effective = (kernel - 1) * dilation + 1;
  return in < effective ? 0 : (in - effective) / stride + 1;
}

class Conv2DImpl : public LayerImpl {
 public:
  Conv2DImpl(int64_t filters, Size2 kernel_size, Conv2DOptions options)
      : LayerImpl("Conv2D", options.name, options.dtype),
        filters_(filters),
        kernel_size_(kernel_size),
        options_(std::move(options)),
        padding_(internal::op_padding(*this, options_.padding)),
        activation_(internal::activation_for(*this, options_.activation)),
        kernel_init_(
            internal::initializer_for(*this, "kernel_initializer", options_.kernel_initializer)),
        bias_init_(
            internal::initializer_for(*this, "bias_initializer", options_.bias_initializer)) {
    WEFT_CHECK(filters > 0, InvalidArgument)
        << layer_label(*this) << ": filters must be positive, got " << filters;
    const Size2& s = options_.strides;
    const Size2& d = options_.dilation_rate;
    WEFT_CHECK(kernel_size[0] > 0 && kernel_size[1] > 0, InvalidArgument)
        << layer_label(*this) << ": kernel_size must be positive, got {" << kernel_size[0] << ", "
        << kernel_size[1] << "}";
    WEFT_CHECK(s[0] > 0 && s[1] > 0 && d[0] > 0 && d[1] > 0, InvalidArgument)
        << layer_label(*this) << ": strides {" << s[0] << ", " << s[1] << "} and dilation_rate {"
        << d[0] << ", " << d[1] << "} must be positive";
    WEFT_CHECK(!((s[0] > 1 || s[1] > 1) && (d[0] > 1 || d[1] > 1)), InvalidArgument)
        << layer_label(*this) << ": strides > 1 are not supported together with dilation_rate > 1"
        << " (strides {" << s[0] << ", " << s[1] << "}, dilation_rate {" << d[0] << ", " << d[1]
        << "})";
  }

  void build(const Shape& input_shape) override {
    internal::check_rank(*this, input_shape, 4, "(batch, height, width, channels)");
    for (int axis = 0; axis < 2; ++axis) {
      int64_t out =
          conv_output_size(input_shape[1 + axis], kernel_size_[axis], options_.strides[axis],
                           options_.dilation_rate[axis], padding_);
      WEFT_CHECK(out > 0, InvalidArgument)
          << layer_label(*this) << ": input of shape " << shape_str(input_shape)
          << " is smaller than the kernel {" << kernel_size_[0] << ", " << kernel_size_[1]
          << "} (dilation_rate {" << options_.dilation_rate[0] << ", " << options_.dilation_rate[1]
          << "}) with \"valid\" padding";
    }
    kernel_ = add_weight("kernel", {kernel_size_[0], kernel_size_[1], input_shape[3], filters_},
                         kernel_init_);
    if (options_.use_bias) bias_ = add_weight("bias", {filters_}, bias_init_);
  }

  Tensor call(const Tensor& x, bool training) override {
    Tensor y =
        conv2d(x, cast_variable(kernel_), options_.strides, padding_, options_.dilation_rate);
    if (options_.use_bias) y = add(y, cast_variable(bias_));
    return activation_(y);
  }

  std::string describe() const override { return options_.activation; }
  ConfigDict get_config() const override {
    ConfigDict c = LayerImpl::get_config();
    c.set("filters", filters_).set("kernel_size", internal::config_pair(kernel_size_));
    c.set("strides", internal::config_pair(options_.strides)).set("padding", options_.padding);
    c.set("dilation_rate", internal::config_pair(options_.dilation_rate))
        .set("activation", options_.activation);
    c.set("use_bias", options_.use_bias).set("kernel_initializer", options_.kernel_initializer);
    c.set("bias_initializer", options_.bias_initializer);
    return c;
  }

 private:
  int64_t filters_;
  Size2 kernel_size_;
  Conv2DOptions options_;
  std::string padding_;
  activations::Activation activation_;
  Initializer kernel_init_, bias_init_;
  Variable kernel_, bias_;
};

}  // namespace

Conv2D::Conv2D(int64_t filters, Size2 kernel_size, Conv2DOptions options)
    : Layer(std::make_shared<Conv2DImpl>(filters, kernel_size, std::move(options))) {}

Conv2D Conv2D::from_config(const ConfigDict& c) {
  Conv2DOptions o;
  o.strides = internal::config_size2(c, "strides", o.strides);
  o.padding = c.get_string("padding", o.padding);
  o.dilation_rate = internal::config_size2(c, "dilation_rate", o.dilation_rate);
  o.activation = c.get_string("activation", "");
  o.use_bias = c.get_bool("use_bias", true);
  o.kernel_initializer = c.get_string("kernel_initializer", o.kernel_initializer);
  o.bias_initializer = c.get_string("bias_initializer", o.bias_initializer);
  return internal::configured(
      Conv2D(c.get_int("filters"), internal::config_size2(c, "kernel_size", {0, 0}), o), c);
}

}  // namespace weft::nn
