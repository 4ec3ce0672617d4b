#include "weft/nn/pooling.h"

#include "weft/nn/internal/layer_util.h"
#include "weft/ops/reduce.h"

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

  void build(const Shape& input_shape) override {
    internal::check_rank(*this, input_shape, 4, "(batch, height, width, channels)");
    WEFT_CHECK(
        padding_ == "SAME" || (input_shape[1] >= pool_size_[0] && input_shape[2] >= pool_size_[1]),
        InvalidArgument)
        << layer_label(*this) << ": input of shape " << shape_str(input_shape)
        << " is smaller than the pool {" << pool_size_[0] << ", " << pool_size_[1]
        << "} with \"valid\" padding";
  }

  Tensor call(const Tensor& x, bool training) override {
    return pool_(x, pool_size_, strides_, padding_);
  }
  ConfigDict get_config() const override {
    ConfigDict c = LayerImpl::get_config();
    c.set("pool_size", internal::config_pair(pool_size_));
    c.set("strides", internal::config_pair(strides_))
        .set("padding", padding_ == "SAME" ? "same" : "valid");
    return c;
  }

 private:
  PoolFn pool_;
  Size2 pool_size_, strides_;
  std::string padding_;
};

Tensor max_pool(const Tensor& x, Size2 k, Size2 s, std::string_view p) {
  return max_pool2d(x, k, s, p);
}
Tensor avg_pool(const Tensor& x, Size2 k, Size2 s, std::string_view p) {
  return avg_pool2d(x, k, s, p);
}

class GlobalAveragePooling2DImpl : public LayerImpl {
 public:
  explicit GlobalAveragePooling2DImpl(const GlobalPooling2DOptions& options)
      : LayerImpl("GlobalAveragePooling2D", options.name, options.dtype) {}
  void build(const Shape& input_shape) override {
    internal::check_rank(*this, input_shape, 4, "(batch, height, width, channels)");
  }
  Tensor call(const Tensor& x, bool training) override { return mean(x, {1, 2}); }
};

}  // namespace

MaxPooling2D::MaxPooling2D(Size2 pool_size, Pooling2DOptions options)
    : Layer(std::make_shared<Pooling2DImpl>("MaxPooling2D", max_pool, pool_size,
                                            std::move(options))) {}

AveragePooling2D::AveragePooling2D(Size2 pool_size, Pooling2DOptions options)
    : Layer(std::make_shared<Pooling2DImpl>("AveragePooling2D", avg_pool, pool_size,
                                            std::move(options))) {}

GlobalAveragePooling2D::GlobalAveragePooling2D(GlobalPooling2DOptions options)
    : Layer(std::make_shared<GlobalAveragePooling2DImpl>(options)) {}

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

}  // namespace weft::nn
