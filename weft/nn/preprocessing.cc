#include "weft/nn/preprocessing.h"

#include <cmath>

#include "weft/nn/internal/layer_util.h"
#include "weft/ops/cast.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"

namespace weft::nn {
namespace {

using internal::layer_label;

class NormalizationImpl : public LayerImpl {
 public:
  explicit NormalizationImpl(NormalizationOptions o)
      : LayerImpl("Normalization", o.name, o.dtype), axis_(o.axis) {
    WEFT_CHECK(o.mean.has_value() == o.variance.has_value(), InvalidArgument)
        << layer_label(*this) << ": give both mean and variance, or neither";
    if (o.mean) {
      WEFT_CHECK(o.mean->size() == o.variance->size(), InvalidArgument)
          << layer_label(*this) << ": " << o.mean->size() << " means but " << o.variance->size()
          << " variances";
      mean_ = *o.mean;
      variance_ = *o.variance;
    }
  }

  void build(const Shape& shape) override {
    int64_t a = axis_ < 0 ? axis_ + static_cast<int64_t>(shape.size()) : axis_;
    WEFT_CHECK(a >= 1 && a < static_cast<int64_t>(shape.size()), InvalidArgument)
        << layer_label(*this) << ": axis " << axis_ << " is not an axis of inputs of shape "
        << shape_str(shape) << " (other than the batch)";
    resolved_axis_ = a;
    const int64_t n = shape[a];
    if (mean_.empty()) {
      mean_.assign(n, 0.0);
      variance_.assign(n, 1.0);
    }
    WEFT_CHECK(static_cast<int64_t>(mean_.size()) == n, InvalidArgument)
        << layer_label(*this) << ": " << mean_.size() << " statistics for an axis of size " << n
        << " (inputs of shape " << shape_str(shape) << ")";
    mean_var_ = add_weight("mean", {n}, values(mean_), false, kFloat32);
    variance_var_ = add_weight("variance", {n}, values(variance_), false, kFloat32);
    count_var_ = add_weight("count", {}, initializers::constant(count_), false, kInt64);
  }

  Tensor call(const Tensor& x, bool training) override {
    Shape along(x.rank(), 1);
    along[resolved_axis_] = x.dim(resolved_axis_);
    Tensor mean = reshape(cast(mean_var_.value(), x.dtype()), along);
    Tensor stddev = maximum(sqrt(reshape(cast(variance_var_.value(), x.dtype()), along)), 1e-7);
    return div(sub(x, mean), stddev);
  }

  ConfigDict get_config() const override { return LayerImpl::get_config().set("axis", axis_); }

  // Chan et al.'s merge of running (count, mean, M2) with a batch's, per entry of the axis.
  void accumulate(const Tensor& batch) {
    WEFT_CHECK(batch.rank() >= 1, InvalidArgument)
        << layer_label(*this) << ": adapt needs data with a batch axis, got a scalar";
    int64_t a = axis_ < 0 ? axis_ + batch.rank() : axis_;
    WEFT_CHECK(a >= 1 && a < batch.rank(), InvalidArgument)
        << layer_label(*this) << ": axis " << axis_ << " is not an axis of data of shape "
        << shape_str(batch.shape()) << " (other than the batch)";
    std::vector<int64_t> others;
    for (int64_t i = 0; i < batch.rank(); ++i) {
      if (i != a) others.push_back(i);
    }
    Tensor x = cast(batch, kFloat64);
    double n = static_cast<double>(x.numel() / x.dim(a));
    if (n == 0) return;
    std::vector<double> m = mean(x, others).to_vector<double>();
    std::vector<double> m2 = sum(square(sub(x, mean(x, others, true))), others).to_vector<double>();
    if (stats_count_ == 0) {
      stats_mean_ = m;
      stats_m2_ = m2;
    } else {
      WEFT_CHECK(m.size() == stats_mean_.size(), InvalidArgument)
          << layer_label(*this) << ": adapt data of shape " << shape_str(batch.shape()) << " has "
          << m.size() << " entries along axis " << axis_ << ", earlier data " << stats_mean_.size();
      for (size_t i = 0; i < m.size(); ++i) {
        double delta = m[i] - stats_mean_[i], total = stats_count_ + n;
        stats_mean_[i] += delta * n / total;
        stats_m2_[i] += m2[i] + delta * delta * stats_count_ * n / total;
      }
    }
    stats_count_ += n;
  }

  void finish_adapt() {
    WEFT_CHECK(stats_count_ > 0, InvalidArgument) << layer_label(*this) << ": adapt got no data";
    mean_ = stats_mean_;
    variance_.resize(mean_.size());
    for (size_t i = 0; i < mean_.size(); ++i) variance_[i] = stats_m2_[i] / stats_count_;
    count_ = static_cast<double>(stats_count_);
    stats_count_ = 0;
    if (built()) {
      mean_var_.assign(cast(Tensor::from_vector(mean_), kFloat32));
      variance_var_.assign(cast(Tensor::from_vector(variance_), kFloat32));
      count_var_.assign(Tensor::scalar(static_cast<int64_t>(count_), kInt64));
    }
  }

 private:
  static Initializer values(const std::vector<double>& v) {
    return
        [v](const Shape& shape, DType dtype) { return cast(Tensor::from_vector(v, shape), dtype); };
  }

  int64_t axis_, resolved_axis_ = -1;
  std::vector<double> mean_, variance_;  // what build() starts the weights from
  double count_ = 0;
  double stats_count_ = 0;  // adapt's running statistics
  std::vector<double> stats_mean_, stats_m2_;
  Variable mean_var_, variance_var_, count_var_;
};

}  // namespace

Normalization::Normalization(NormalizationOptions options)
    : Layer(std::make_shared<NormalizationImpl>(std::move(options))) {}

void Normalization::adapt(const Tensor& data) const {
  auto& impl = static_cast<NormalizationImpl&>(this->impl());
  impl.accumulate(data);
  impl.finish_adapt();
}

void Normalization::adapt(const data::Dataset& dataset) const {
  auto& impl = static_cast<NormalizationImpl&>(this->impl());
  for (const data::Element& e : dataset) impl.accumulate(e.at(0));
  impl.finish_adapt();
}

Normalization Normalization::from_config(const ConfigDict& c) {
  NormalizationOptions o;
  o.axis = c.get_int("axis", -1);
  return internal::configured(Normalization(o), c);
}

namespace {

class RescalingImpl : public LayerImpl {
 public:
  RescalingImpl(double scale, double offset, const LayerOptions& o)
      : LayerImpl("Rescaling", o.name, o.dtype), scale_(scale), offset_(offset) {}
  Tensor call(const Tensor& x, bool training) override {
    Tensor y = is_floating(x.dtype()) ? x : cast(x, kFloat32);
    return add(mul(y, scale_), offset_);
  }
  ConfigDict get_config() const override {
    return LayerImpl::get_config().set("scale", scale_).set("offset", offset_);
  }

 private:
  double scale_, offset_;
};

}  // namespace

Rescaling::Rescaling(double scale, double offset, LayerOptions options)
    : Layer(std::make_shared<RescalingImpl>(scale, offset, options)) {}

Rescaling Rescaling::from_config(const ConfigDict& c) {
  return internal::configured(Rescaling(c.get_double("scale"), c.get_double("offset", 0)), c);
}

}  // namespace weft::nn
