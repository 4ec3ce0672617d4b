#include "weft/nn/pooling.h"

#include <algorithm>

#include "weft/nn/internal/layer_util.h"
#include "weft/ops/cast.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"

namespace weft::nn {
namespace {

using internal::layer_label;

const char* layout(int rank) {
  return rank == 1   ? "(batch, steps, channels)"
         : rank == 2 ? "(batch, height, width, channels)"
                     : "(batch, depth, height, width, channels)";
}

// Max or average pooling over 1, 2 or 3 spatial axes; sizes as {depth, height, width} (2-D:
// depth 1; 1-D: height 1 too).
class PoolingImpl : public LayerImpl {
 public:
  PoolingImpl(std::string class_name, bool max, int rank, Size3 pool_size, Size3 strides,
              const std::string& padding, const std::string& dtype, const std::string& name)
      : LayerImpl(std::move(class_name), name, dtype),
        max_(max),
        rank_(rank),
        pool_size_(pool_size),
        strides_(strides == Size3{0, 0, 0} ? pool_size : strides),
        padding_(internal::op_padding(*this, padding)) {
    const int shown = std::max(rank_, 2);  // 1-D sizes print as {1, k}, as they always have
    WEFT_CHECK(*std::min_element(pool_size_.begin(), pool_size_.end()) > 0 &&
                   *std::min_element(strides_.begin(), strides_.end()) > 0,
               InvalidArgument)
        << layer_label(*this) << ": pool_size " << internal::size_str(pool_size_, shown)
        << " and strides " << internal::size_str(strides_, shown) << " must be positive";
  }

  void build(const Shape& shape) override {
    internal::check_rank(*this, shape, rank_ + 2, layout(rank_));
    bool fits = true;
    for (int i = 0; i < rank_; ++i) fits = fits && shape[1 + i] >= pool_size_[3 - rank_ + i];
    WEFT_CHECK(padding_ == "SAME" || fits, InvalidArgument)
        << layer_label(*this) << ": input of shape " << shape_str(shape)
        << " is smaller than the pool " << internal::size_str(pool_size_, std::max(rank_, 2))
        << " with \"valid\" padding";
  }

  Tensor call(const Tensor& x, bool training) override {
    const Size2 k{pool_size_[1], pool_size_[2]}, s{strides_[1], strides_[2]};
    auto pool2d = [&](const Tensor& images) {
      return max_ ? max_pool2d(images, k, s, padding_) : avg_pool2d(images, k, s, padding_);
    };
    switch (rank_) {
      case 1:  // one row of an image
        return squeeze(pool2d(expand_dims(x, 1)), {1});
      case 2:
        return pool2d(x);
      default:
        return max_ ? max_pool3d(x, pool_size_, strides_, padding_)
                    : avg_pool3d(x, pool_size_, strides_, padding_);
    }
  }
  ConfigDict get_config() const override {
    ConfigDict c = LayerImpl::get_config();
    auto size = [&](const Size3& v) { return std::vector<int64_t>(v.end() - rank_, v.end()); };
    c.set("pool_size", size(pool_size_));
    c.set("strides", size(strides_)).set("padding", padding_ == "SAME" ? "same" : "valid");
    return c;
  }

 private:
  bool max_;
  int rank_;
  Size3 pool_size_, strides_;
  std::string padding_;
};

std::shared_ptr<PoolingImpl> pooling_1d(std::string class_name, bool max, int64_t pool_size,
                                        const Pooling1DOptions& o) {
  return std::make_shared<PoolingImpl>(std::move(class_name), max, 1, Size3{1, 1, pool_size},
                                       Size3{1, 1, o.strides > 0 ? o.strides : pool_size},
                                       o.padding, o.dtype, o.name);
}
std::shared_ptr<PoolingImpl> pooling_2d(std::string class_name, bool max, Size2 pool_size,
                                        const Pooling2DOptions& o) {
  Size3 strides = o.strides == Size2{0, 0} ? Size3{0, 0, 0} : Size3{1, o.strides[0], o.strides[1]};
  return std::make_shared<PoolingImpl>(std::move(class_name), max, 2,
                                       Size3{1, pool_size[0], pool_size[1]}, strides, o.padding,
                                       o.dtype, o.name);
}
std::shared_ptr<PoolingImpl> pooling_3d(std::string class_name, bool max, Size3 pool_size,
                                        const Pooling3DOptions& o) {
  return std::make_shared<PoolingImpl>(std::move(class_name), max, 3, pool_size, o.strides,
                                       o.padding, o.dtype, o.name);
}

// The mean or maximum over the spatial axes (1 for 1-D inputs, 1 and 2 for 2-D, 1 to 3 for 3-D).
class GlobalPoolingImpl : public LayerImpl {
 public:
  GlobalPoolingImpl(std::string class_name, bool max, int rank,
                    const GlobalPooling2DOptions& options)
      : LayerImpl(std::move(class_name), options.name, options.dtype), max_(max), rank_(rank) {}
  // The spatial sizes may change from call to call, as Keras's InputSpec(ndim=...).
  bool any_size(size_t axis) const override { return axis < static_cast<size_t>(rank_); }
  void build(const Shape& input_shape) override {
    internal::check_rank(*this, input_shape, rank_ + 2, layout(rank_));
  }
  Tensor call(const Tensor& x, bool training) override {
    std::vector<int64_t> axes;
    for (int i = 1; i <= rank_; ++i) axes.push_back(i);
    Tensor mask = keras_mask(x);
    if (rank_ == 1 && !max_ && mask.defined()) {
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
  bool max_;
  int rank_;
};

}  // namespace

MaxPooling2D::MaxPooling2D(Size2 pool_size, Pooling2DOptions options)
    : Layer(pooling_2d("MaxPooling2D", true, pool_size, options)) {}
AveragePooling2D::AveragePooling2D(Size2 pool_size, Pooling2DOptions options)
    : Layer(pooling_2d("AveragePooling2D", false, pool_size, options)) {}
MaxPooling3D::MaxPooling3D(Size3 pool_size, Pooling3DOptions options)
    : Layer(pooling_3d("MaxPooling3D", true, pool_size, options)) {}
AveragePooling3D::AveragePooling3D(Size3 pool_size, Pooling3DOptions options)
    : Layer(pooling_3d("AveragePooling3D", false, pool_size, options)) {}

GlobalAveragePooling2D::GlobalAveragePooling2D(GlobalPooling2DOptions options)
    : Layer(std::make_shared<GlobalPoolingImpl>("GlobalAveragePooling2D", false, 2, options)) {}
GlobalMaxPooling2D::GlobalMaxPooling2D(GlobalPooling2DOptions options)
    : Layer(std::make_shared<GlobalPoolingImpl>("GlobalMaxPooling2D", true, 2, options)) {}
GlobalAveragePooling1D::GlobalAveragePooling1D(GlobalPooling2DOptions options)
    : Layer(std::make_shared<GlobalPoolingImpl>("GlobalAveragePooling1D", false, 1, options)) {}
GlobalMaxPooling1D::GlobalMaxPooling1D(GlobalPooling2DOptions options)
    : Layer(std::make_shared<GlobalPoolingImpl>("GlobalMaxPooling1D", true, 1, options)) {}
GlobalAveragePooling3D::GlobalAveragePooling3D(GlobalPooling2DOptions options)
    : Layer(std::make_shared<GlobalPoolingImpl>("GlobalAveragePooling3D", false, 3, options)) {}
GlobalMaxPooling3D::GlobalMaxPooling3D(GlobalPooling2DOptions options)
    : Layer(std::make_shared<GlobalPoolingImpl>("GlobalMaxPooling3D", true, 3, options)) {}
MaxPooling1D::MaxPooling1D(int64_t pool_size, Pooling1DOptions options)
    : Layer(pooling_1d("MaxPooling1D", true, pool_size, options)) {}
AveragePooling1D::AveragePooling1D(int64_t pool_size, Pooling1DOptions options)
    : Layer(pooling_1d("AveragePooling1D", false, pool_size, options)) {}

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
GlobalAveragePooling3D GlobalAveragePooling3D::from_config(const ConfigDict& c) {
  return internal::configured(GlobalAveragePooling3D(), c);
}
GlobalMaxPooling3D GlobalMaxPooling3D::from_config(const ConfigDict& c) {
  return internal::configured(GlobalMaxPooling3D(), c);
}

namespace {
template <typename Pooling>
Pooling pooling_3d_from_config(const ConfigDict& c) {
  Pooling3DOptions o;
  o.strides = internal::config_size3(c, "strides", o.strides);
  o.padding = c.get_string("padding", o.padding);
  return internal::configured(Pooling(internal::config_size3(c, "pool_size", {2, 2, 2}), o), c);
}
}  // namespace

MaxPooling3D MaxPooling3D::from_config(const ConfigDict& c) {
  return pooling_3d_from_config<MaxPooling3D>(c);
}
AveragePooling3D AveragePooling3D::from_config(const ConfigDict& c) {
  return pooling_3d_from_config<AveragePooling3D>(c);
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
