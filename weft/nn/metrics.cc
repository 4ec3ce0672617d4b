#include "weft/nn/metrics.h"

#include "weft/autodiff/tape.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"

namespace weft::nn::metrics {
namespace {

// Integer labels with the trailing unit axis Keras allows removed.
Tensor labels_of(const Tensor& y_true, const Tensor& y_pred) {
  Tensor labels = y_true;
  if (labels.rank() == y_pred.rank() && labels.dim(-1) == 1) labels = squeeze(labels, {-1});
  WEFT_CHECK(labels.rank() + 1 == y_pred.rank(), InvalidArgument)
      << "sparse accuracy: labels of shape " << shape_str(y_true.shape())
      << " do not fit predictions of shape " << shape_str(y_pred.shape());
  return cast(labels, kInt64);
}

template <typename F>
std::shared_ptr<Metric::Impl> make(const std::string& name, F batch) {
  struct Impl : Metric::Impl {
    F fn;
    explicit Impl(F f) : fn(std::move(f)) {}
    std::pair<double, double> batch(const Tensor& y_true, const Tensor& y_pred) override {
      return fn(y_true, y_pred);
    }
  };
  auto impl = std::make_shared<Impl>(std::move(batch));
  impl->name = name;
  return impl;
}

std::pair<double, double> fraction(const Tensor& hits) {
  return {sum(cast(hits, kFloat64)).item<double>(), static_cast<double>(hits.numel())};
}

std::pair<double, double> binary_hits(const Tensor& y_true, const Tensor& y_pred,
                                      double threshold) {
  WEFT_CHECK(y_true.numel() == y_pred.numel(), InvalidArgument)
      << "binary accuracy: labels of shape " << shape_str(y_true.shape())
      << " do not fit predictions of shape " << shape_str(y_pred.shape());
  Tensor predicted = cast(greater(reshape(y_pred, {-1}), threshold), kFloat64);
  return fraction(equal(cast(reshape(y_true, {-1}), kFloat64), predicted));
}

std::pair<double, double> categorical_hits(const Tensor& y_true, const Tensor& y_pred) {
  WEFT_CHECK(y_true.shape() == y_pred.shape(), InvalidArgument)
      << "categorical accuracy: one-hot labels of shape " << shape_str(y_true.shape())
      << " do not fit predictions of shape " << shape_str(y_pred.shape());
  return fraction(equal(argmax(y_true, -1), argmax(y_pred, -1)));
}

std::pair<double, double> sparse_hits(const Tensor& y_true, const Tensor& y_pred) {
  return fraction(equal(labels_of(y_true, y_pred), argmax(y_pred, -1)));
}

}  // namespace

void Metric::update_state(const Tensor& y_true, const Tensor& y_pred) {
  merge_state(partial(y_true, y_pred));
}

Partial Metric::partial(const Tensor& y_true, const Tensor& y_pred) const {
  autodiff::NoRecordScope no_record;
  auto [total, count] = impl_->batch(y_true, y_pred);
  return {total, count};
}

void Metric::merge_state(const Partial& partial) {
  std::lock_guard lock(impl_->mu);
  impl_->total += partial.total;
  impl_->count += partial.count;
}

double Metric::result() const {
  std::lock_guard lock(impl_->mu);
  return impl_->count > 0 ? impl_->total / impl_->count : 0.0;
}

void Metric::reset_state() {
  std::lock_guard lock(impl_->mu);
  impl_->total = 0;
  impl_->count = 0;
}

Mean::Mean(const std::string& name)
    : Metric(make(name, [](const Tensor& values, const Tensor&) {
        return std::pair{sum(cast(values, kFloat64)).item<double>(),
                         static_cast<double>(values.numel())};
      })) {}

void Mean::update_state(const Tensor& values) { Metric::update_state(values, values); }

Accuracy::Accuracy(const std::string& name)
    : Metric(make(name, [](const Tensor& y_true, const Tensor& y_pred) {
        return fraction(equal(y_true, y_pred));
      })) {}

BinaryAccuracy::BinaryAccuracy(const std::string& name, double threshold)
    : Metric(make(name, [threshold](const Tensor& y_true, const Tensor& y_pred) {
        return binary_hits(y_true, y_pred, threshold);
      })) {}

CategoricalAccuracy::CategoricalAccuracy(const std::string& name)
    : Metric(make(name, [](const Tensor& y_true, const Tensor& y_pred) {
        return categorical_hits(y_true, y_pred);
      })) {}

SparseCategoricalAccuracy::SparseCategoricalAccuracy(const std::string& name)
    : Metric(make(name, [](const Tensor& y_true, const Tensor& y_pred) {
        return sparse_hits(y_true, y_pred);
      })) {}

SparseTopKCategoricalAccuracy::SparseTopKCategoricalAccuracy(int k, const std::string& name)
    : Metric(make(name, [k](const Tensor& y_true, const Tensor& y_pred) {
        Tensor labels = labels_of(y_true, y_pred);
        Tensor true_score = gather(
            reshape(y_pred, {-1}),
            add(mul(arange(0, labels.numel(), 1, kInt64), y_pred.dim(-1)), reshape(labels, {-1})));
        true_score = reshape(true_score, labels.shape());
        Tensor better = sum(cast(greater(y_pred, expand_dims(true_score, -1)), kInt64), {-1});
        return fraction(less(better, k));
      })) {}

Metric get(const std::string& name, const std::string& loss_name) {
  if (name == "accuracy" || name == "acc") {
    // Keras's compile-time choice (compile_utils.MetricsContainer), made per batch from shapes.
    return Metric(make("accuracy", [](const Tensor& y_true, const Tensor& y_pred) {
      if (y_pred.rank() <= 1 || y_pred.dim(-1) == 1) return binary_hits(y_true, y_pred, 0.5);
      bool sparse = y_true.rank() + 1 == y_pred.rank() ||
                    (y_true.rank() == y_pred.rank() && y_true.dim(-1) == 1);
      return sparse ? sparse_hits(y_true, y_pred) : categorical_hits(y_true, y_pred);
    }));
  }
  if (name == "binary_accuracy") return BinaryAccuracy();
  if (name == "categorical_accuracy") return CategoricalAccuracy();
  if (name == "sparse_categorical_accuracy") return SparseCategoricalAccuracy();
  if (name == "sparse_top_k_categorical_accuracy") return SparseTopKCategoricalAccuracy();
  WEFT_FAIL(InvalidArgument) << "unknown metric \"" << name
                             << "\"; expected one of accuracy, binary_accuracy, "
                                "categorical_accuracy, sparse_categorical_accuracy, "
                                "sparse_top_k_categorical_accuracy";
  return Accuracy();
}

}  // namespace weft::nn::metrics
