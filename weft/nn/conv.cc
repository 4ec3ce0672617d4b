#include "weft/nn/conv.h"

#include <algorithm>

#include "weft/nn/internal/layer_util.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/shape_ops.h"

namespace weft::nn {
namespace {

using internal::layer_label;
using internal::size_str;

enum class Kind { kConv1D, kConv2D, kConv3D, kTranspose, kDepthwise, kSeparable };

// Spatial axes: Conv1D 1, Conv3D 3, the rest 2.
int rank_of(Kind k) { return k == Kind::kConv1D ? 1 : k == Kind::kConv3D ? 3 : 2; }

// A 2-D size as the 3-D {depth, height, width} of depth 1, and back.
Size3 lift(Size2 s) { return {1, s[0], s[1]}; }
Size2 hw(const Size3& s) { return {s[1], s[2]}; }

// Every convolution layer's settings, whichever options struct they came from.
struct Spec {
  Kind kind;
  int64_t filters = 0;  // output channels (DepthwiseConv2D: channels * depth_multiplier)
  Size3 kernel{}, strides{1, 1, 1}, dilation{1, 1, 1};  // {depth, height, width}
  std::string padding{};                                // as given ("valid", "same", "causal")
  int64_t groups = 1, depth_multiplier = 1;
  std::string activation{};
  bool use_bias = true;
  std::string kernel_init{}, pointwise_init{}, bias_init{};
  Regularizer kernel_reg{}, pointwise_reg{}, bias_reg{}, activity_reg{};
  Constraint kernel_con{}, pointwise_con{}, bias_con{};
};

const char* class_of(Kind k) {
  switch (k) {
    case Kind::kConv1D:
      return "Conv1D";
    case Kind::kConv2D:
      return "Conv2D";
    case Kind::kConv3D:
      return "Conv3D";
    case Kind::kTranspose:
      return "Conv2DTranspose";
    case Kind::kDepthwise:
      return "DepthwiseConv2D";
    case Kind::kSeparable:
      return "SeparableConv2D";
  }
  return "";
}

class ConvImpl : public LayerImpl {
 public:
  ConvImpl(Spec spec, const std::string& name, const std::string& dtype)
      : LayerImpl(class_of(spec.kind), name, dtype),
        s_(std::move(spec)),
        causal_(s_.kind == Kind::kConv1D && s_.padding == "causal"),
        padding_(causal_ ? "VALID" : internal::op_padding(*this, s_.padding)),
        activation_(internal::activation_for(*this, s_.activation)),
        kernel_init_(internal::initializer_for(*this, kernel_argument(), s_.kernel_init)),
        pointwise_init_(
            s_.kind == Kind::kSeparable
                ? internal::initializer_for(*this, "pointwise_initializer", s_.pointwise_init)
                : Initializer()),
        bias_init_(internal::initializer_for(*this, "bias_initializer", s_.bias_init)) {
    set_activity_regularizer(s_.activity_reg);
    const int rank = rank_of(s_.kind);
    // Conv1D's sizes keep printing as {1, k}, as before 3-D layers.
    const int shown = std::max(rank, 2);
    auto all = [](const Size3& v, auto pred) { return pred(v[0]) && pred(v[1]) && pred(v[2]); };
    auto positive = [](int64_t v) { return v > 0; };
    auto one = [](int64_t v) { return v == 1; };
    WEFT_CHECK(s_.kind == Kind::kDepthwise || s_.filters > 0, InvalidArgument)
        << layer_label(*this) << ": filters must be positive, got " << s_.filters;
    WEFT_CHECK(all(s_.kernel, positive), InvalidArgument)
        << layer_label(*this) << ": kernel_size must be positive, got "
        << size_str(s_.kernel, shown);
    WEFT_CHECK(all(s_.strides, positive) && all(s_.dilation, positive), InvalidArgument)
        << layer_label(*this) << ": strides " << size_str(s_.strides, shown)
        << " and dilation_rate " << size_str(s_.dilation, shown) << " must be positive";
    WEFT_CHECK(all(s_.strides, one) || all(s_.dilation, one), InvalidArgument)
        << layer_label(*this) << ": strides > 1 are not supported together with dilation_rate > 1"
        << " (strides " << size_str(s_.strides, shown) << ", dilation_rate "
        << size_str(s_.dilation, shown) << ")";
    WEFT_CHECK(s_.groups >= 1 && s_.filters % s_.groups == 0 &&
                   (s_.groups == 1 || s_.kind == Kind::kConv1D || s_.kind == Kind::kConv2D ||
                    s_.kind == Kind::kConv3D),
               InvalidArgument)
        << layer_label(*this) << ": groups (" << s_.groups << ") must be at least 1 and divide "
        << "filters (" << s_.filters << "); only Conv1D, Conv2D and Conv3D take groups";
    WEFT_CHECK(s_.depth_multiplier >= 1, InvalidArgument)
        << layer_label(*this) << ": depth_multiplier must be positive, got " << s_.depth_multiplier;
  }

  void build(const Shape& input_shape) override {
    const int rank = rank_of(s_.kind);
    internal::check_rank(*this, input_shape, rank + 2,
                         rank == 1   ? "(batch, steps, channels)"
                         : rank == 2 ? "(batch, height, width, channels)"
                                     : "(batch, depth, height, width, channels)");
    const int64_t c = input_shape.back();
    WEFT_CHECK(c % s_.groups == 0, InvalidArgument)
        << layer_label(*this) << ": " << s_.groups << " groups must divide the " << c
        << " input channels";
    const int64_t kd = s_.kernel[0], kh = s_.kernel[1], kw = s_.kernel[2], m = s_.depth_multiplier;
    if (padding_ == "VALID" && !causal_ && s_.kind != Kind::kTranspose) {
      for (int axis = 3 - rank; axis < 3; ++axis) {
        int64_t in = input_shape[1 + axis - (3 - rank)];
        int64_t reach = (s_.kernel[axis] - 1) * s_.dilation[axis] + 1;
        WEFT_CHECK(in >= reach, InvalidArgument)
            << layer_label(*this) << ": input of shape " << shape_str(input_shape)
            << " is smaller than the kernel (dilated: " << reach << ") with \"valid\" padding";
      }
    }
    auto weight = [&](const char* name, const Shape& shape, const Initializer& init,
                      const Regularizer& r, const Constraint& k) {
      return add_weight(name, shape, init, true, {}, VariableAggregation::NONE, r, k);
    };
    auto kernel = [&](const char* name, const Shape& shape) {
      return weight(name, shape, kernel_init_, s_.kernel_reg, s_.kernel_con);
    };
    switch (s_.kind) {
      case Kind::kConv1D:
        kernel_ = kernel("kernel", {kw, c / s_.groups, s_.filters});
        break;
      case Kind::kConv2D:
        kernel_ = kernel("kernel", {kh, kw, c / s_.groups, s_.filters});
        break;
      case Kind::kConv3D:
        kernel_ = kernel("kernel", {kd, kh, kw, c / s_.groups, s_.filters});
        break;
      case Kind::kTranspose:
        kernel_ = kernel("kernel", {kh, kw, s_.filters, c});
        break;
      case Kind::kDepthwise:
        kernel_ = kernel("depthwise_kernel", {kh, kw, c, m});
        out_channels_ = c * m;
        break;
      case Kind::kSeparable:
        kernel_ = kernel("depthwise_kernel", {kh, kw, c, m});
        pointwise_ = weight("pointwise_kernel", {1, 1, c * m, s_.filters}, pointwise_init_,
                            s_.pointwise_reg, s_.pointwise_con);
        break;
    }
    if (s_.kind != Kind::kDepthwise) out_channels_ = s_.filters;
    if (s_.use_bias) bias_ = weight("bias", {out_channels_}, bias_init_, s_.bias_reg, s_.bias_con);
  }

  Tensor call(const Tensor& x_in, bool training) override {
    Tensor k = cast_variable(kernel_), y;
    switch (s_.kind) {
      case Kind::kConv1D: {
        Tensor x = x_in;
        // Causal: pad the start so that output t sees inputs up to t.
        if (causal_) x = pad(x, {{0, 0}, {(s_.kernel[2] - 1) * s_.dilation[2], 0}, {0, 0}});
        y = conv1d(x, k, s_.strides[2], padding_, s_.dilation[2]);
        break;
      }
      case Kind::kConv2D:
        y = conv2d(x_in, k, hw(s_.strides), padding_, hw(s_.dilation));
        break;
      case Kind::kConv3D:
        y = conv3d(x_in, k, s_.strides, padding_, s_.dilation);
        break;
      case Kind::kTranspose:
        y = conv2d_transpose(x_in, k, hw(s_.strides), padding_, hw(s_.dilation));
        break;
      case Kind::kDepthwise:
        y = depthwise_conv2d(x_in, k, hw(s_.strides), padding_, hw(s_.dilation));
        break;
      case Kind::kSeparable:
        y = conv2d(depthwise_conv2d(x_in, k, hw(s_.strides), padding_, hw(s_.dilation)),
                   cast_variable(pointwise_));
        break;
    }
    if (s_.use_bias) y = add(y, cast_variable(bias_));
    return activation_(y);
  }

  std::string describe() const override { return s_.activation; }

  ConfigDict get_config() const override {
    ConfigDict c = LayerImpl::get_config();
    const int rank = rank_of(s_.kind);
    auto size = [&](const Size3& v) { return std::vector<int64_t>(v.end() - rank, v.end()); };
    if (s_.kind != Kind::kDepthwise) c.set("filters", s_.filters);
    c.set("kernel_size", size(s_.kernel)).set("strides", size(s_.strides));
    c.set("padding", s_.padding).set("dilation_rate", size(s_.dilation));
    if (s_.kind == Kind::kConv1D || s_.kind == Kind::kConv2D || s_.kind == Kind::kConv3D) {
      c.set("groups", s_.groups);
    }
    if (s_.kind == Kind::kDepthwise || s_.kind == Kind::kSeparable) {
      c.set("depth_multiplier", s_.depth_multiplier);
    }
    c.set("activation", s_.activation).set("use_bias", s_.use_bias);
    c.set(kernel_argument(), s_.kernel_init);
    if (s_.kind == Kind::kSeparable) c.set("pointwise_initializer", s_.pointwise_init);
    c.set("bias_initializer", s_.bias_init);
    const std::string kernel = depthwise() ? "depthwise" : "kernel";
    internal::set_config_fn(c, kernel + "_regularizer", s_.kernel_reg);
    internal::set_config_fn(c, kernel + "_constraint", s_.kernel_con);
    if (s_.kind == Kind::kSeparable) {
      internal::set_config_fn(c, "pointwise_regularizer", s_.pointwise_reg);
      internal::set_config_fn(c, "pointwise_constraint", s_.pointwise_con);
    }
    internal::set_config_fn(c, "bias_regularizer", s_.bias_reg);
    internal::set_config_fn(c, "bias_constraint", s_.bias_con);
    return c;
  }

 private:
  bool depthwise() const { return s_.kind == Kind::kDepthwise || s_.kind == Kind::kSeparable; }
  const char* kernel_argument() const {
    return depthwise() ? "depthwise_initializer" : "kernel_initializer";
  }

  Spec s_;
  bool causal_;
  std::string padding_;
  activations::Activation activation_;
  Initializer kernel_init_, pointwise_init_, bias_init_;
  Variable kernel_, pointwise_, bias_;
  int64_t out_channels_ = 0;
};

// A convolution with one kernel (Conv1D, Conv2D, Conv3D, Conv2DTranspose): their options share
// these fields' names; the sizes come as {depth, height, width} (2-D: depth 1; 1-D: height 1 too).
template <typename Options>
Spec spec_of(Kind kind, int64_t filters, Size3 kernel, Size3 strides, Size3 dilation,
             const Options& o) {
  return {.kind = kind,
          .filters = filters,
          .kernel = kernel,
          .strides = strides,
          .dilation = dilation,
          .padding = o.padding,
          .groups = o.groups,
          .activation = o.activation,
          .use_bias = o.use_bias,
          .kernel_init = o.kernel_initializer,
          .bias_init = o.bias_initializer,
          .kernel_reg = o.kernel_regularizer,
          .bias_reg = o.bias_regularizer,
          .activity_reg = o.activity_regularizer,
          .kernel_con = o.kernel_constraint,
          .bias_con = o.bias_constraint};
}

Spec spec_2d(Kind kind, int64_t filters, Size2 kernel, const Conv2DOptions& o) {
  return spec_of(kind, filters, lift(kernel), lift(o.strides), lift(o.dilation_rate), o);
}

// The fields Conv1D's and Conv2D's configs share, read into their options.
template <typename Options>
void read_kernel_options(const ConfigDict& c, Options& o) {
  o.padding = c.get_string("padding", o.padding);
  o.groups = c.get_int("groups", 1);
  o.activation = c.get_string("activation", "");
  o.use_bias = c.get_bool("use_bias", true);
  o.kernel_initializer = c.get_string("kernel_initializer", o.kernel_initializer);
  o.bias_initializer = c.get_string("bias_initializer", o.bias_initializer);
  internal::read_kernel_bias_rules(c, o);
}

Spec spec_depthwise(Kind kind, int64_t filters, Size2 kernel, const DepthwiseConv2DOptions& o) {
  return {.kind = kind,
          .filters = filters,
          .kernel = lift(kernel),
          .strides = lift(o.strides),
          .dilation = lift(o.dilation_rate),
          .padding = o.padding,
          .depth_multiplier = o.depth_multiplier,
          .activation = o.activation,
          .use_bias = o.use_bias,
          .kernel_init = o.depthwise_initializer,
          .pointwise_init = o.pointwise_initializer,
          .bias_init = o.bias_initializer,
          .kernel_reg = o.depthwise_regularizer,
          .pointwise_reg = o.pointwise_regularizer,
          .bias_reg = o.bias_regularizer,
          .activity_reg = o.activity_regularizer,
          .kernel_con = o.depthwise_constraint,
          .pointwise_con = o.pointwise_constraint,
          .bias_con = o.bias_constraint};
}

Conv2DOptions conv2d_options(const ConfigDict& c) {
  Conv2DOptions o;
  o.strides = internal::config_size2(c, "strides", o.strides);
  o.dilation_rate = internal::config_size2(c, "dilation_rate", o.dilation_rate);
  read_kernel_options(c, o);
  return o;
}

DepthwiseConv2DOptions depthwise_options(const ConfigDict& c) {
  DepthwiseConv2DOptions o;
  o.strides = internal::config_size2(c, "strides", o.strides);
  o.padding = c.get_string("padding", o.padding);
  o.depth_multiplier = c.get_int("depth_multiplier", 1);
  o.dilation_rate = internal::config_size2(c, "dilation_rate", o.dilation_rate);
  o.activation = c.get_string("activation", "");
  o.use_bias = c.get_bool("use_bias", true);
  o.depthwise_initializer = c.get_string("depthwise_initializer", o.depthwise_initializer);
  o.pointwise_initializer = c.get_string("pointwise_initializer", o.pointwise_initializer);
  o.bias_initializer = c.get_string("bias_initializer", o.bias_initializer);
  o.depthwise_regularizer = internal::config_regularizer(c, "depthwise_regularizer");
  o.pointwise_regularizer = internal::config_regularizer(c, "pointwise_regularizer");
  o.bias_regularizer = internal::config_regularizer(c, "bias_regularizer");
  o.depthwise_constraint = internal::config_constraint(c, "depthwise_constraint");
  o.pointwise_constraint = internal::config_constraint(c, "pointwise_constraint");
  o.bias_constraint = internal::config_constraint(c, "bias_constraint");
  return o;
}

}  // namespace

Conv2D::Conv2D(int64_t filters, Size2 kernel_size, Conv2DOptions o)
    : Layer(std::make_shared<ConvImpl>(spec_2d(Kind::kConv2D, filters, kernel_size, o), o.name,
                                       o.dtype)) {}

Conv2D Conv2D::from_config(const ConfigDict& c) {
  return internal::configured(
      Conv2D(c.get_int("filters"), internal::config_size2(c, "kernel_size", {0, 0}),
             conv2d_options(c)),
      c);
}

Conv3D::Conv3D(int64_t filters, Size3 kernel_size, Conv3DOptions o)
    : Layer(std::make_shared<ConvImpl>(
          spec_of(Kind::kConv3D, filters, kernel_size, o.strides, o.dilation_rate, o), o.name,
          o.dtype)) {}

Conv3D Conv3D::from_config(const ConfigDict& c) {
  Conv3DOptions o;
  o.strides = internal::config_size3(c, "strides", o.strides);
  o.dilation_rate = internal::config_size3(c, "dilation_rate", o.dilation_rate);
  read_kernel_options(c, o);
  return internal::configured(
      Conv3D(c.get_int("filters"), internal::config_size3(c, "kernel_size", {0, 0, 0}), o), c);
}

Conv1D::Conv1D(int64_t filters, int64_t kernel_size, Conv1DOptions o)
    : Layer(std::make_shared<ConvImpl>(spec_of(Kind::kConv1D, filters, {1, 1, kernel_size},
                                               {1, 1, o.strides}, {1, 1, o.dilation_rate}, o),
                                       o.name, o.dtype)) {}

Conv1D Conv1D::from_config(const ConfigDict& c) {
  Conv1DOptions o;
  o.strides = internal::config_size1(c, "strides", 1);
  o.dilation_rate = internal::config_size1(c, "dilation_rate", 1);
  read_kernel_options(c, o);
  return internal::configured(
      Conv1D(c.get_int("filters"), internal::config_size1(c, "kernel_size", 0), o), c);
}

Conv2DTranspose::Conv2DTranspose(int64_t filters, Size2 kernel_size, Conv2DOptions o)
    : Layer(std::make_shared<ConvImpl>(spec_2d(Kind::kTranspose, filters, kernel_size, o), o.name,
                                       o.dtype)) {}

Conv2DTranspose Conv2DTranspose::from_config(const ConfigDict& c) {
  return internal::configured(
      Conv2DTranspose(c.get_int("filters"), internal::config_size2(c, "kernel_size", {0, 0}),
                      conv2d_options(c)),
      c);
}

DepthwiseConv2D::DepthwiseConv2D(Size2 kernel_size, DepthwiseConv2DOptions o)
    : Layer(std::make_shared<ConvImpl>(spec_depthwise(Kind::kDepthwise, 0, kernel_size, o), o.name,
                                       o.dtype)) {}

DepthwiseConv2D DepthwiseConv2D::from_config(const ConfigDict& c) {
  return internal::configured(
      DepthwiseConv2D(internal::config_size2(c, "kernel_size", {0, 0}), depthwise_options(c)), c);
}

SeparableConv2D::SeparableConv2D(int64_t filters, Size2 kernel_size, DepthwiseConv2DOptions o)
    : Layer(std::make_shared<ConvImpl>(spec_depthwise(Kind::kSeparable, filters, kernel_size, o),
                                       o.name, o.dtype)) {}

SeparableConv2D SeparableConv2D::from_config(const ConfigDict& c) {
  return internal::configured(
      SeparableConv2D(c.get_int("filters"), internal::config_size2(c, "kernel_size", {0, 0}),
                      depthwise_options(c)),
      c);
}

}  // namespace weft::nn
