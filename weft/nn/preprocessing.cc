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

  // Running statistics of adapt: per entry of the axis, Chan et al.'s merge of (count, mean, M2).
  struct Stats {
    double count = 0;
    std::vector<double> mean, m2;
  };

  void accumulate(Stats& stats, const Tensor& batch) const {
    WEFT_CHECK(batch.rank() >= 1, InvalidArgument)
        << layer_label(*this) << ": adapt needs data with a batch axis, got a scalar";
    int64_t a = axis_ < 0 ? axis_ + batch.rank() : axis_;
    WEFT_CHECK(a >= 1 && a < batch.rank() && batch.dim(a) > 0, InvalidArgument)
        << layer_label(*this) << ": axis " << axis_ << " is not a non-empty axis of data of shape "
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
    if (stats.count == 0) {
      stats.mean = m;
      stats.m2 = m2;
    } else {
      WEFT_CHECK(m.size() == stats.mean.size(), InvalidArgument)
          << layer_label(*this) << ": adapt data of shape " << shape_str(batch.shape()) << " has "
          << m.size() << " entries along axis " << axis_ << ", earlier data " << stats.mean.size();
      for (size_t i = 0; i < m.size(); ++i) {
        double delta = m[i] - stats.mean[i], total = stats.count + n;
        stats.mean[i] += delta * n / total;
        stats.m2[i] += m2[i] + delta * delta * stats.count * n / total;
      }
    }
    stats.count += n;
  }

  // Makes `stats` the layer's mean and variance, or throws leaving the layer as it was.
  void commit(const Stats& stats) {
    WEFT_CHECK(stats.count > 0, InvalidArgument) << layer_label(*this) << ": adapt got no data";
    WEFT_CHECK(!built() || stats.mean.size() == mean_.size(), InvalidArgument)
        << layer_label(*this) << ": adapt data has " << stats.mean.size() << " entries along axis "
        << axis_ << ", the layer was built for " << mean_.size();
    std::vector<double> variance(stats.mean.size());
    for (size_t i = 0; i < variance.size(); ++i) variance[i] = stats.m2[i] / stats.count;
    if (built()) {
      mean_var_.assign(cast(Tensor::from_vector(stats.mean), kFloat32));
      variance_var_.assign(cast(Tensor::from_vector(variance), kFloat32));
      count_var_.assign(Tensor::scalar(static_cast<int64_t>(stats.count), kInt64));
    }
    mean_ = stats.mean;
    variance_ = variance;
    count_ = stats.count;
  }

 private:
  static Initializer values(const std::vector<double>& v) {
    return
        [v](const Shape& shape, DType dtype) { return cast(Tensor::from_vector(v, shape), dtype); };
  }

  int64_t axis_, resolved_axis_ = -1;
  std::vector<double> mean_, variance_;  // what build() starts the weights from
  double count_ = 0;
  Variable mean_var_, variance_var_, count_var_;
};

}  // namespace

Normalization::Normalization(NormalizationOptions options)
    : Layer(std::make_shared<NormalizationImpl>(std::move(options))) {}

void Normalization::adapt(const Tensor& data) const {
  auto& impl = static_cast<NormalizationImpl&>(this->impl());
  NormalizationImpl::Stats stats;
  impl.accumulate(stats, data);
  impl.commit(stats);
}

void Normalization::adapt(const data::Dataset& dataset) const {
  auto& impl = static_cast<NormalizationImpl&>(this->impl());
  NormalizationImpl::Stats stats;
  for (const data::Element& e : dataset) impl.accumulate(stats, e.at(0));
  impl.commit(stats);
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
