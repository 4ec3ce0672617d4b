#include "weft/nn/pooling.h"

#include "weft/nn/internal/layer_util.h"
#include "weft/ops/cast.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"

namespace weft::nn {
namespace {

using internal::layer_label;

class Pooling2DImpl : public LayerImpl {
 public:
  using PoolFn = Tensor (*)(const Tensor&, Size2, Size2, std::string_view);

  Pooling2DImpl(std::string class_name, PoolFn pool, Size2 pool_size, Pooling2DOptions options)
      : LayerImpl(std::move(class_name), options.name, options.dtype),
        pool_(pool),
        pool_size_(pool_size),
        strides_(options.strides == Size2{0, 0} ? pool_size : options.strides),
        padding_(internal::op_padding(*this, options.padding)) {
    WEFT_CHECK(pool_size[0] > 0 && pool_size[1] > 0 && strides_[0] > 0 && strides_[1] > 0,
               InvalidArgument)
        << layer_label(*this) << ": pool_size {" << pool_size[0] << ", " << pool_size[1]
        << "} and strides {" << strides_[0] << ", " << strides_[1] << "} must be positive";
  }

  void build(const Shape& shape) override {
    if (one_d_) internal::check_rank(*this, shape, 3, "(batch, steps, channels)");
    if (!one_d_) internal::check_rank(*this, shape, 4, "(batch, height, width, channels)");
    Shape input_shape = one_d_ ? Shape{shape[0], 1, shape[1], shape[2]} : shape;
    WEFT_CHECK(
        padding_ == "SAME" || (input_shape[1] >= pool_size_[0] && input_shape[2] >= pool_size_[1]),
        InvalidArgument)
        << layer_label(*this) << ": input of shape " << shape_str(input_shape)
        << " is smaller than the pool {" << pool_size_[0] << ", " << pool_size_[1]
        << "} with \"valid\" padding";
  }

  Tensor call(const Tensor& x, bool training) override {
    if (one_d_) return squeeze(pool_(expand_dims(x, 1), pool_size_, strides_, padding_), {1});
    return pool_(x, pool_size_, strides_, padding_);
  }
  ConfigDict get_config() const override {
    ConfigDict c = LayerImpl::get_config();
    auto size = [&](const Size2& v) {
      return one_d_ ? std::vector<int64_t>{v[1]} : internal::config_pair(v);
    };
    c.set("pool_size", size(pool_size_));
    c.set("strides", size(strides_)).set("padding", padding_ == "SAME" ? "same" : "valid");
    return c;
  }
  // The 1-D form: (batch, steps, channels) pooled as one row of an image.
  void set_one_d() { one_d_ = true; }

 private:
  PoolFn pool_;
  Size2 pool_size_, strides_;
  std::string padding_;
  bool one_d_ = false;
};

std::shared_ptr<Pooling2DImpl> pooling_1d(std::string class_name, Pooling2DImpl::PoolFn pool,
                                          int64_t pool_size, const Pooling1DOptions& o) {
  auto impl = std::make_shared<Pooling2DImpl>(
      std::move(class_name), pool, Size2{1, pool_size},
      Pooling2DOptions{.strides = {1, o.strides > 0 ? o.strides : pool_size},
                       .padding = o.padding,
                       .dtype = o.dtype,
                       .name = o.name});
  impl->set_one_d();
  return impl;
}

Tensor max_pool(const Tensor& x, Size2 k, Size2 s, std::string_view p) {
  return max_pool2d(x, k, s, p);
}
Tensor avg_pool(const Tensor& x, Size2 k, Size2 s, std::string_view p) {
  return avg_pool2d(x, k, s, p);
}

// The mean or maximum over the spatial axes (1 for 1-D inputs, 1 and 2 for 2-D).
class GlobalPoolingImpl : public LayerImpl {
 public:
  GlobalPoolingImpl(std::string class_name, bool max, bool one_d,
                    const GlobalPooling2DOptions& options)
      : LayerImpl(std::move(class_name), options.name, options.dtype), max_(max), one_d_(one_d) {}
  // Steps (or height and width) may change from call to call, as Keras's InputSpec(ndim=...).
  bool any_size(size_t axis) const override { return axis < (one_d_ ? 1u : 2u); }
  void build(const Shape& input_shape) override {
    if (one_d_) internal::check_rank(*this, input_shape, 3, "(batch, steps, channels)");
    if (!one_d_) internal::check_rank(*this, input_shape, 4, "(batch, height, width, channels)");
  }
  Tensor call(const Tensor& x, bool training) override {
    std::vector<int64_t> axes = one_d_ ? std::vector<int64_t>{1} : std::vector<int64_t>{1, 2};
    Tensor mask = keras_mask(x);
    if (one_d_ && !max_ && mask.defined()) {
      // Keras's masked mean over the steps kept: sum(x * mask) / sum(mask) (NaN for a sequence
      // with every step masked, as Keras's).
      WEFT_CHECK(mask.shape() == Shape({x.dim(0), x.dim(1)}), InvalidArgument)
          << internal::layer_label(*this) << ": the input's mask has shape "
          << shape_str(mask.shape()) << "; expected (batch, steps) = (" << x.dim(0) << ", "
          << x.dim(1) << ")";
      Tensor m = expand_dims(cast(mask, x.dtype()), -1);
      return div(sum(mul(x, m), axes), sum(m, axes));
    }
    return max_ ? max(x, axes) : mean(x, axes);
  }

 private:
  bool max_, one_d_;
};

}  // namespace

MaxPooling2D::MaxPooling2D(Size2 pool_size, Pooling2DOptions options)
    : Layer(std::make_shared<Pooling2DImpl>("MaxPooling2D", max_pool, pool_size,
                                            std::move(options))) {}

AveragePooling2D::AveragePooling2D(Size2 pool_size, Pooling2DOptions options)
    : Layer(std::make_shared<Pooling2DImpl>("AveragePooling2D", avg_pool, pool_size,
                                            std::move(options))) {}

GlobalAveragePooling2D::GlobalAveragePooling2D(GlobalPooling2DOptions options)
    : Layer(std::make_shared<GlobalPoolingImpl>("GlobalAveragePooling2D", false, false, options)) {}
GlobalMaxPooling2D::GlobalMaxPooling2D(GlobalPooling2DOptions options)
    : Layer(std::make_shared<GlobalPoolingImpl>("GlobalMaxPooling2D", true, false, options)) {}
GlobalAveragePooling1D::GlobalAveragePooling1D(GlobalPooling2DOptions options)
    : Layer(std::make_shared<GlobalPoolingImpl>("GlobalAveragePooling1D", false, true, options)) {}
GlobalMaxPooling1D::GlobalMaxPooling1D(GlobalPooling2DOptions options)
    : Layer(std::make_shared<GlobalPoolingImpl>("GlobalMaxPooling1D", true, true, options)) {}
MaxPooling1D::MaxPooling1D(int64_t pool_size, Pooling1DOptions options)
    : Layer(pooling_1d("MaxPooling1D", max_pool, pool_size, options)) {}
AveragePooling1D::AveragePooling1D(int64_t pool_size, Pooling1DOptions options)
    : Layer(pooling_1d("AveragePooling1D", avg_pool, pool_size, options)) {}

namespace {
template <typename Pooling>
Pooling pooling_from_config(const ConfigDict& c) {
  Pooling2DOptions o;
  o.strides = internal::config_size2(c, "strides", o.strides);
  o.padding = c.get_string("padding", o.padding);
  return internal::configured(Pooling(internal::config_size2(c, "pool_size", {2, 2}), o), c);
}
}  // namespace

MaxPooling2D MaxPooling2D::from_config(const ConfigDict& c) {
  return pooling_from_config<MaxPooling2D>(c);
}
AveragePooling2D AveragePooling2D::from_config(const ConfigDict& c) {
  return pooling_from_config<AveragePooling2D>(c);
}
GlobalAveragePooling2D GlobalAveragePooling2D::from_config(const ConfigDict& c) {
  return internal::configured(GlobalAveragePooling2D(), c);
}
GlobalMaxPooling2D GlobalMaxPooling2D::from_config(const ConfigDict& c) {
  return internal::configured(GlobalMaxPooling2D(), c);
}
GlobalAveragePooling1D GlobalAveragePooling1D::from_config(const ConfigDict& c) {
  return internal::configured(GlobalAveragePooling1D(), c);
}
GlobalMaxPooling1D GlobalMaxPooling1D::from_config(const ConfigDict& c) {
  return internal::configured(GlobalMaxPooling1D(), c);
}

namespace {
template <typename Pooling>
Pooling pooling_1d_from_config(const ConfigDict& c) {
  Pooling1DOptions o;
  o.strides = internal::config_size1(c, "strides", 0);
  o.padding = c.get_string("padding", o.padding);
  return internal::configured(Pooling(internal::config_size1(c, "pool_size", 2), o), c);
}
}  // namespace

MaxPooling1D MaxPooling1D::from_config(const ConfigDict& c) {
  return pooling_1d_from_config<MaxPooling1D>(c);
}
AveragePooling1D AveragePooling1D::from_config(const ConfigDict& c) {
  return pooling_1d_from_config<AveragePooling1D>(c);
}

}  // namespace weft::nn
