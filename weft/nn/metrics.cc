#include "weft/nn/metrics.h"

#include <algorithm>
#include <cmath>

#include "weft/autodiff/tape.h"
#include "weft/nn/losses.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"
#include "weft/ops/sort.h"

namespace weft::nn::metrics {

Partial& Partial::operator+=(const Partial& o) {
  if (o.sums.empty()) return *this;
  if (sums.empty()) {
    sums = o.sums;
    return *this;
  }
  WEFT_CHECK(sums.size() == o.sums.size(), InvalidArgument)
      << "metrics::Partial: cannot add a partial of " << o.sums.size() << " sums to one of "
      << sums.size();
  for (size_t i = 0; i < sums.size(); ++i) sums[i] += o.sums[i];
  return *this;
}

namespace {

double ratio(const std::vector<double>& s) { return s[1] != 0 ? s[0] / s[1] : 0.0; }

// The sums of a weighted mean of `values`: sum(values * w) and sum(w), the weights broadcast to
// the values as a loss's are (every value weighs 1 without them).
std::vector<double> weighted_sums(const Tensor& values, const Tensor& sample_weight) {
  Tensor v = cast(values, kFloat64);
  if (!sample_weight.defined()) {
    return {sum(v).item<double>(), static_cast<double>(v.numel())};
  }
  Tensor w = losses::apply_sample_weight(ones_like(v), sample_weight);
  return {sum(mul(v, w)).item<double>(), sum(w).item<double>()};
}

using Values = std::function<Tensor(const Tensor& y_true, const Tensor& y_pred)>;

// A metric that is the weighted mean of values(y_true, y_pred) (Keras's MeanMetricWrapper).
Metric::Spec mean_of(const std::string& name, Values values) {
  return {
      name, 2,
      [values = std::move(values)](const Tensor& y_true, const Tensor& y_pred, const Tensor& w) {
        auto [t, p] = losses::match_label_shape(y_true, y_pred);
        return weighted_sums(values(t, p), w);
      },
      nullptr};
}

Metric::Spec mean_of_loss(const std::string& name, const losses::Loss& loss, double sign = 1) {
  return mean_of(name, [loss, sign](const Tensor& t, const Tensor& p) {
    Tensor l = loss.per_example(t, p);
    return sign == 1 ? l : neg(l);
  });
}

// Integer labels with the trailing unit axis Keras allows removed.
Tensor labels_of(const char* metric, const Tensor& y_true, const Tensor& y_pred) {
  Tensor labels = y_true;
  if (labels.rank() == y_pred.rank() && labels.dim(-1) == 1) labels = squeeze(labels, {-1});
  WEFT_CHECK(labels.rank() + 1 == y_pred.rank(), InvalidArgument)
      << metric << ": labels of shape " << shape_str(y_true.shape())
      << " do not fit predictions of shape " << shape_str(y_pred.shape());
  return cast(labels, kInt64);
}

void check_same_shape(const char* metric, const char* what, const Tensor& y_true,
                      const Tensor& y_pred) {
  WEFT_CHECK(y_true.shape() == y_pred.shape(), InvalidArgument)
      << metric << ": " << what << " of shape " << shape_str(y_true.shape())
      << " do not fit predictions of shape " << shape_str(y_pred.shape());
}

Tensor binary_hits(const Tensor& y_true, const Tensor& y_pred, double threshold) {
  check_same_shape("binary accuracy", "labels", y_true, y_pred);
  Tensor predicted = cast(greater(y_pred, threshold), kFloat64);
  return mean(cast(equal(cast(y_true, kFloat64), predicted), kFloat64), {-1});
}

Tensor categorical_hits(const Tensor& y_true, const Tensor& y_pred) {
  check_same_shape("categorical accuracy", "one-hot labels", y_true, y_pred);
  return equal(argmax(y_true, -1), argmax(y_pred, -1));
}

Tensor sparse_hits(const Tensor& y_true, const Tensor& y_pred) {
  return equal(labels_of("sparse accuracy", y_true, y_pred), argmax(y_pred, -1));
}

// Whether each label is among the k highest scores (ties at the boundary count as in); a label
// outside [0, classes) is not, as tf.math.in_top_k.
Tensor in_top_k(const Tensor& labels, const Tensor& y_pred, int k) {
  const int64_t classes = y_pred.dim(-1);
  Tensor flat = reshape(y_pred, {-1, classes});
  Tensor flat_labels = reshape(labels, {-1});
  Tensor valid = logical_and(greater_equal(flat_labels, Tensor::scalar(0, kInt64)),
                             less(flat_labels, Tensor::scalar(classes, kInt64)));
  Tensor safe = where(valid, flat_labels, zeros_like(flat_labels));
  Tensor true_score = gather(reshape(flat, {-1}),
                             add(mul(arange(0, flat_labels.numel(), 1, kInt64), classes), safe));
  Tensor better = sum(cast(greater(flat, expand_dims(true_score, -1)), kInt64), {-1});
  return reshape(logical_and(valid, less(better, k)), labels.shape());
}

// ---- counts at thresholds -----------------------------------------------------------------

// Which predictions may count as positive: with top_k > 0, each row's (the last axis's) k highest
// as tf.math.top_k picks them (the lower index first on ties), as Keras's _filter_top_k.
std::vector<char> kept_by_top_k(const std::string& metric, const Tensor& y_pred, int top_k) {
  std::vector<char> kept(static_cast<size_t>(y_pred.numel()), top_k > 0 ? 0 : 1);
  if (top_k <= 0 || y_pred.numel() == 0) return kept;
  Tensor rows = cast(y_pred.rank() == 0 ? reshape(y_pred, {1}) : y_pred, kFloat64);
  const int64_t width = rows.dim(-1);
  WEFT_CHECK(top_k <= width, InvalidArgument)
      << metric << ": top_k " << top_k << " is more than the " << width
      << " predictions per row of shape " << shape_str(y_pred.shape());
  std::vector<int32_t> chosen =
      weft::top_k(rows, top_k, /*sorted=*/false).indices.to_vector<int32_t>();
  for (size_t i = 0; i < chosen.size(); ++i) kept[i / top_k * width + chosen[i]] = 1;
  return kept;
}

// Weighted counts, for each threshold (in the order given), of true positives, false positives,
// true negatives and false negatives, in that order (4 × thresholds sums). A prediction is
// positive when strictly above the threshold and, with top_k > 0, among its row's top_k.
std::vector<double> confusion(const std::string& metric, const Tensor& y_true, const Tensor& y_pred,
                              const Tensor& sample_weight, const std::vector<double>& thresholds,
                              int class_id, int top_k = 0) {
  auto [t, p] = losses::match_label_shape(y_true, y_pred);
  check_same_shape(metric.c_str(), "labels", t, p);
  std::vector<double> labels = cast(t, kFloat64).to_vector<double>();
  std::vector<double> preds = cast(p, kFloat64).to_vector<double>();
  for (size_t i = 0; i < preds.size(); ++i) {
    WEFT_CHECK(preds[i] >= 0 && preds[i] <= 1, InvalidArgument)
        << metric << ": predictions must be in [0, 1] (probabilities), got " << preds[i]
        << " at flat index " << i;
  }
  std::vector<char> kept = kept_by_top_k(metric, y_pred, top_k);
  // The thresholds ascending (at[j] is thresholds[order[j]]); Keras compares float32 predictions
  // with float32 thresholds.
  const size_t n = thresholds.size();
  std::vector<size_t> order(n);
  for (size_t j = 0; j < n; ++j) order[j] = j;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return thresholds[a] < thresholds[b]; });
  std::vector<double> at(n);
  for (size_t j = 0; j < n; ++j) {
    at[j] = p.dtype() == kFloat64 ? thresholds[order[j]]
                                  : static_cast<double>(static_cast<float>(thresholds[order[j]]));
  }
  std::vector<double> weights =
      sample_weight.defined()
          ? losses::apply_sample_weight(ones_like(cast(p, kFloat64)), sample_weight)
                .to_vector<double>()
          : std::vector<double>(preds.size(), 1.0);
  size_t stride = 1, first = 0;
  if (class_id >= 0) {
    WEFT_CHECK(p.rank() >= 1 && class_id < p.dim(-1), InvalidArgument)
        << metric << ": class_id " << class_id << " is not a column of predictions of shape "
        << shape_str(p.shape());
    stride = static_cast<size_t>(p.dim(-1));
    first = static_cast<size_t>(class_id);
  }
  // pos[k], negs[k]: weight of the positive (negative) labels whose prediction is above exactly
  // the k lowest thresholds (none when outside the top_k).
  std::vector<double> pos(n + 1, 0.0), negs(n + 1, 0.0);
  for (size_t i = first; i < preds.size(); i += stride) {
    size_t k = kept[i] ? std::lower_bound(at.begin(), at.end(), preds[i]) - at.begin() : 0;
    (labels[i] != 0 ? pos : negs)[k] += weights[i];
  }
  // Above threshold j: the values above more than j thresholds, summed from the top (so that
  // counts above every value are exactly 0, not the remainder of a subtraction).
  std::vector<double> out(4 * n);
  double tp = 0, fp = 0, tn = 0, fn = 0;
  for (size_t j = n; j-- > 0;) {
    tp += pos[j + 1];
    fp += negs[j + 1];
    out[order[j]] = tp;
    out[n + order[j]] = fp;
  }
  for (size_t j = 0; j < n; ++j) {
    tn += negs[j];
    fn += pos[j];
    out[2 * n + order[j]] = tn;
    out[3 * n + order[j]] = fn;
  }
  return out;
}

enum Count { kTP, kFP, kTN, kFN };

// A metric of the four counts at each of the options' thresholds: value(tp, fp, tn, fn) per
// threshold.
Metric::Spec counts(const std::string& name, ThresholdOptions o,
                    std::function<double(const double* count, size_t stride)> value) {
  WEFT_CHECK(o.top_k >= 0, InvalidArgument)
      << name << ": top_k must be positive (or 0 for none), got " << o.top_k;
  for (double t : o.thresholds) {
    WEFT_CHECK(t >= 0 && t <= 1, InvalidArgument)
        << name << ": thresholds must be in [0, 1], got " << t;
  }
  if (o.thresholds.empty()) o.thresholds = {o.top_k > 0 ? -1e10 : 0.5};
  const size_t n = o.thresholds.size();
  return {name, 4 * n,
          [name, o](const Tensor& y_true, const Tensor& y_pred, const Tensor& w) {
            return confusion(name, y_true, y_pred, w, o.thresholds, o.class_id, o.top_k);
          },
          nullptr,
          [n, value = std::move(value)](const std::vector<double>& s) {
            std::vector<double> out(n);
            for (size_t j = 0; j < n; ++j) out[j] = value(s.data() + j, n);
            return out;
          }};
}

Metric::Spec one_count(const std::string& name, ThresholdOptions o, Count c) {
  return counts(name, std::move(o), [c](const double* s, size_t stride) { return s[c * stride]; });
}

double div_no_nan(double a, double b) { return b != 0 ? a / b : 0.0; }

double auc_of(const std::vector<double>& s, int n, AUCCurve curve, AUCSummation method) {
  auto tp = [&](int i) { return s[i]; };
  auto fp = [&](int i) { return s[n + i]; };
  auto tn = [&](int i) { return s[2 * n + i]; };
  auto fn = [&](int i) { return s[3 * n + i]; };
  double total = 0;
  if (curve == AUCCurve::PR && method == AUCSummation::INTERPOLATION) {
    // Davis and Goadrich (2006): precision interpolated along the change in true positives.
    for (int i = 0; i + 1 < n; ++i) {
      double dtp = tp(i) - tp(i + 1);
      double p0 = tp(i) + fp(i), p1 = tp(i + 1) + fp(i + 1);
      double slope = div_no_nan(dtp, std::max(p0 - p1, 0.0));
      double intercept = tp(i + 1) - slope * p1;
      double safe_ratio = p0 > 0 && p1 > 0 ? div_no_nan(p0, std::max(p1, 0.0)) : 1.0;
      total += div_no_nan(slope * (dtp + intercept * std::log(safe_ratio)),
                          std::max(tp(i + 1) + fn(i + 1), 0.0));
    }
    return total;
  }
  auto x = [&](int i) {
    return curve == AUCCurve::ROC ? div_no_nan(fp(i), fp(i) + tn(i))
                                  : div_no_nan(tp(i), tp(i) + fn(i));
  };
  auto y = [&](int i) {
    return curve == AUCCurve::ROC ? div_no_nan(tp(i), tp(i) + fn(i))
                                  : div_no_nan(tp(i), tp(i) + fp(i));
  };
  for (int i = 0; i + 1 < n; ++i) {
    double height = method == AUCSummation::INTERPOLATION ? (y(i) + y(i + 1)) / 2
                    : method == AUCSummation::MINORING    ? std::min(y(i), y(i + 1))
                                                          : std::max(y(i), y(i + 1));
    total += (x(i) - x(i + 1)) * height;
  }
  return total;
}

}  // namespace

Metric::Metric(Spec spec) : impl_(std::make_shared<Impl>()) {
  if (!spec.result && !spec.results) spec.result = ratio;
  impl_->sums.assign(spec.state_size, 0.0);
  impl_->spec = std::move(spec);
}

void Metric::update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  merge_state(partial(y_true, y_pred, sample_weight));
}

Partial Metric::partial(const Tensor& y_true, const Tensor& y_pred,
                        const Tensor& sample_weight) const {
  autodiff::NoRecordScope no_record;
  return {impl_->spec.batch(y_true, y_pred, sample_weight)};
}

void Metric::merge_state(const Partial& partial) {
  if (partial.sums.empty()) return;
  WEFT_CHECK(partial.sums.size() == impl_->sums.size(), InvalidArgument)
      << "metric \"" << name() << "\": a partial of " << partial.sums.size()
      << " sums does not fit its state of " << impl_->sums.size();
  std::lock_guard lock(impl_->mu);
  for (size_t i = 0; i < partial.sums.size(); ++i) impl_->sums[i] += partial.sums[i];
}

double Metric::result() const {
  std::lock_guard lock(impl_->mu);
  if (!impl_->spec.results) return impl_->spec.result(impl_->sums);
  std::vector<double> all = impl_->spec.results(impl_->sums);
  WEFT_CHECK(all.size() == 1, InvalidArgument)
      << "metric \"" << name() << "\" has " << all.size()
      << " values (one per threshold): read them with results()";
  return all[0];
}

std::vector<double> Metric::results() const {
  std::lock_guard lock(impl_->mu);
  if (impl_->spec.results) return impl_->spec.results(impl_->sums);
  return {impl_->spec.result(impl_->sums)};
}

void Metric::reset_state() {
  std::lock_guard lock(impl_->mu);
  std::fill(impl_->sums.begin(), impl_->sums.end(), 0.0);
}

Mean::Mean(const std::string& name)
    : Metric({name, 2,
              [](const Tensor& values, const Tensor&, const Tensor& w) {
                return weighted_sums(values, w);
              },
              nullptr}) {}

void Mean::update_state(const Tensor& values, const Tensor& sample_weight) {
  Metric::update_state(values, values, sample_weight);
}

Sum::Sum(const std::string& name)
    : Metric({name, 1,
              [](const Tensor& values, const Tensor&, const Tensor& w) {
                return std::vector<double>{weighted_sums(values, w)[0]};
              },
              [](const std::vector<double>& s) { return s[0]; }}) {}

void Sum::update_state(const Tensor& values, const Tensor& sample_weight) {
  Metric::update_state(values, values, sample_weight);
}

Accuracy::Accuracy(const std::string& name)
    : Metric(mean_of(name, [](const Tensor& t, const Tensor& p) {
        check_same_shape("accuracy", "labels", t, p);
        return equal(t, cast(p, t.dtype()));
      })) {}

BinaryAccuracy::BinaryAccuracy(const std::string& name, double threshold)
    : Metric(mean_of(name, [threshold](const Tensor& t, const Tensor& p) {
        return binary_hits(t, p, threshold);
      })) {}

CategoricalAccuracy::CategoricalAccuracy(const std::string& name)
    : Metric(mean_of(name, categorical_hits)) {}

SparseCategoricalAccuracy::SparseCategoricalAccuracy(const std::string& name)
    : Metric(mean_of(name, sparse_hits)) {}

SparseTopKCategoricalAccuracy::SparseTopKCategoricalAccuracy(int k, const std::string& name)
    : Metric(mean_of(name, [k](const Tensor& t, const Tensor& p) {
        return in_top_k(labels_of("sparse top-k accuracy", t, p), p, k);
      })) {}

TopKCategoricalAccuracy::TopKCategoricalAccuracy(int k, const std::string& name)
    : Metric(mean_of(name, [k](const Tensor& t, const Tensor& p) {
        check_same_shape("top-k categorical accuracy", "one-hot labels", t, p);
        return in_top_k(argmax(t, -1), p, k);
      })) {}

MeanSquaredError::MeanSquaredError(const std::string& name)
    : Metric(mean_of_loss(name, losses::MeanSquaredError())) {}
MeanAbsoluteError::MeanAbsoluteError(const std::string& name)
    : Metric(mean_of_loss(name, losses::MeanAbsoluteError())) {}
MeanAbsolutePercentageError::MeanAbsolutePercentageError(const std::string& name)
    : Metric(mean_of_loss(name, losses::MeanAbsolutePercentageError())) {}
MeanSquaredLogarithmicError::MeanSquaredLogarithmicError(const std::string& name)
    : Metric(mean_of_loss(name, losses::MeanSquaredLogarithmicError())) {}

RootMeanSquaredError::RootMeanSquaredError(const std::string& name)
    : Metric({name, 2,
              [](const Tensor& y_true, const Tensor& y_pred, const Tensor& w) {
                auto [t, p] = losses::match_label_shape(y_true, y_pred);
                check_same_shape("root_mean_squared_error", "labels", t, p);
                Tensor pd = cast(p, kFloat64);
                return weighted_sums(square(sub(pd, cast(t, kFloat64))), w);
              },
              [](const std::vector<double>& s) { return std::sqrt(ratio(s)); }}) {}

BinaryCrossentropy::BinaryCrossentropy(const std::string& name, bool from_logits,
                                       double label_smoothing)
    : Metric(mean_of_loss(name, losses::BinaryCrossentropy({from_logits, label_smoothing}))) {}
CategoricalCrossentropy::CategoricalCrossentropy(const std::string& name, bool from_logits,
                                                 double label_smoothing)
    : Metric(mean_of_loss(name, losses::CategoricalCrossentropy({from_logits, label_smoothing}))) {}
SparseCategoricalCrossentropy::SparseCategoricalCrossentropy(const std::string& name,
                                                             bool from_logits)
    : Metric(mean_of_loss(name, losses::SparseCategoricalCrossentropy({from_logits, 0}))) {}
KLDivergence::KLDivergence(const std::string& name)
    : Metric(mean_of_loss(name, losses::KLDivergence())) {}
CosineSimilarity::CosineSimilarity(const std::string& name)
    : Metric(mean_of_loss(name, losses::CosineSimilarity(), -1)) {}
Poisson::Poisson(const std::string& name) : Metric(mean_of_loss(name, losses::Poisson())) {}
LogCoshError::LogCoshError(const std::string& name)
    : Metric(mean_of_loss(name, losses::LogCosh())) {}
Hinge::Hinge(const std::string& name) : Metric(mean_of_loss(name, losses::Hinge())) {}
SquaredHinge::SquaredHinge(const std::string& name)
    : Metric(mean_of_loss(name, losses::SquaredHinge())) {}
CategoricalHinge::CategoricalHinge(const std::string& name)
    : Metric(mean_of_loss(name, losses::CategoricalHinge())) {}

TruePositives::TruePositives(ThresholdOptions o, const std::string& name)
    : Metric(one_count(name, o, kTP)) {}
TrueNegatives::TrueNegatives(ThresholdOptions o, const std::string& name)
    : Metric(one_count(name, o, kTN)) {}
FalsePositives::FalsePositives(ThresholdOptions o, const std::string& name)
    : Metric(one_count(name, o, kFP)) {}
FalseNegatives::FalseNegatives(ThresholdOptions o, const std::string& name)
    : Metric(one_count(name, o, kFN)) {}
Precision::Precision(ThresholdOptions o, const std::string& name)
    : Metric(counts(name, std::move(o), [](const double* s, size_t n) {
        return div_no_nan(s[kTP * n], s[kTP * n] + s[kFP * n]);
      })) {}
Recall::Recall(ThresholdOptions o, const std::string& name)
    : Metric(counts(name, std::move(o), [](const double* s, size_t n) {
        return div_no_nan(s[kTP * n], s[kTP * n] + s[kFN * n]);
      })) {}

namespace {

Metric::Spec auc_spec(const std::string& name, AUCOptions o) {
  WEFT_CHECK(o.num_thresholds > 1, InvalidArgument)
      << "AUC: num_thresholds must be greater than 1, got " << o.num_thresholds;
  WEFT_CHECK(!o.multi_label || o.num_labels > 0, InvalidArgument)
      << "AUC: multi_label needs num_labels (the number of label columns), got " << o.num_labels;
  const bool weighted = !o.label_weights.empty();
  WEFT_CHECK(!weighted || std::all_of(o.label_weights.begin(), o.label_weights.end(),
                                      [](double w) { return w >= 0; }),
             InvalidArgument)
      << "AUC: label_weights must be non-negative";
  WEFT_CHECK(
      !weighted || !o.multi_label || o.label_weights.size() == static_cast<size_t>(o.num_labels),
      InvalidArgument)
      << "AUC: " << o.label_weights.size() << " label_weights for " << o.num_labels << " labels";
  constexpr double kEpsilon = 1e-7;
  const int n = o.num_thresholds;
  std::vector<double> thresholds{-kEpsilon};
  for (int i = 1; i + 1 < n; ++i) thresholds.push_back(static_cast<double>(i) / (n - 1));
  thresholds.push_back(1 + kEpsilon);
  const int labels = o.multi_label ? o.num_labels : 1;
  return {name, 4 * static_cast<size_t>(n) * labels,
          [name, thresholds, o](const Tensor& y_true, const Tensor& y_pred, const Tensor& w) {
            if (!o.multi_label) {
              Tensor weights = w;
              if (!o.label_weights.empty()) {
                // Each column's values weigh its label weight (times the sample weight).
                WEFT_CHECK(y_pred.rank() >= 1 && y_pred.dim(-1) == std::ssize(o.label_weights),
                           InvalidArgument)
                    << name << ": " << o.label_weights.size()
                    << " label_weights do not fit predictions of shape "
                    << shape_str(y_pred.shape());
                Tensor lw = Tensor::from_vector(o.label_weights);
                Tensor base = ones_like(cast(y_pred, kFloat64));
                weights = mul(w.defined() ? losses::apply_sample_weight(base, w) : base, lw);
              }
              return confusion(name, y_true, y_pred, weights, thresholds, -1);
            }
            WEFT_CHECK(y_pred.rank() == 2 && y_pred.dim(1) == o.num_labels, InvalidArgument)
                << name << ": multi_label predictions must be (batch, " << o.num_labels << "), got "
                << shape_str(y_pred.shape());
            std::vector<double> out;
            for (int label = 0; label < o.num_labels; ++label) {
              std::vector<double> c = confusion(name, y_true, y_pred, w, thresholds, label);
              out.insert(out.end(), c.begin(), c.end());
            }
            return out;
          },
          [o, n, labels](const std::vector<double>& s) {
            double total = 0, weights = 0;
            for (int label = 0; label < labels; ++label) {
              std::vector<double> block(s.begin() + 4 * n * label, s.begin() + 4 * n * (label + 1));
              double w = o.multi_label && !o.label_weights.empty() ? o.label_weights[label] : 1.0;
              total += w * auc_of(block, n, o.curve, o.summation_method);
              weights += w;
            }
            return div_no_nan(total, weights);
          }};
}

}  // namespace

AUC::AUC(AUCOptions o, const std::string& name) : Metric(auc_spec(name, o)) {}

namespace {
size_t iou_state_size(int num_classes) {
  WEFT_CHECK(num_classes > 0, InvalidArgument)
      << "MeanIoU: num_classes must be positive, got " << num_classes;
  return static_cast<size_t>(num_classes) * static_cast<size_t>(num_classes);
}
}  // namespace

MeanIoU::MeanIoU(int num_classes, const std::string& name)
    : Metric({name, iou_state_size(num_classes),
              [name, num_classes](const Tensor& y_true, const Tensor& y_pred, const Tensor& w) {
                std::vector<int64_t> t = cast(reshape(y_true, {-1}), kInt64).to_vector<int64_t>();
                std::vector<int64_t> p = cast(reshape(y_pred, {-1}), kInt64).to_vector<int64_t>();
                WEFT_CHECK(t.size() == p.size(), InvalidArgument)
                    << name << ": " << t.size() << " labels but " << p.size() << " predictions";
                std::vector<double> weights =
                    w.defined() ? losses::apply_sample_weight(ones_like(cast(y_true, kFloat64)), w)
                                      .to_vector<double>()
                                : std::vector<double>(t.size(), 1.0);
                std::vector<double> cm(static_cast<size_t>(num_classes) * num_classes, 0.0);
                for (size_t i = 0; i < t.size(); ++i) {
                  WEFT_CHECK(t[i] >= 0 && t[i] < num_classes && p[i] >= 0 && p[i] < num_classes,
                             InvalidArgument)
                      << name << ": class ids must be in [0, " << num_classes << "), got label "
                      << t[i] << " and prediction " << p[i] << " at flat index " << i;
                  cm[t[i] * num_classes + p[i]] += weights[i];
                }
                return cm;
              },
              [num_classes](const std::vector<double>& cm) {
                double total = 0;
                int valid = 0;
                for (int c = 0; c < num_classes; ++c) {
                  double row = 0, col = 0, hit = cm[c * num_classes + c];
                  for (int j = 0; j < num_classes; ++j) {
                    row += cm[c * num_classes + j];
                    col += cm[j * num_classes + c];
                  }
                  double denominator = row + col - hit;
                  if (denominator == 0) continue;
                  total += hit / denominator;
                  ++valid;
                }
                return div_no_nan(total, valid);
              }}) {}

Metric get(const std::string& name, const std::string& loss_name) {
  if (name == "accuracy" || name == "acc") {
    // Keras's compile-time choice (compile_utils.MetricsContainer), made per batch from shapes.
    return Metric(mean_of("accuracy", [](const Tensor& t, const Tensor& p) {
      if (p.rank() <= 1 || p.dim(-1) == 1) return binary_hits(t, p, 0.5);
      bool sparse = t.rank() + 1 == p.rank() || (t.rank() == p.rank() && t.dim(-1) == 1);
      return sparse ? sparse_hits(t, p) : categorical_hits(t, p);
    }));
  }
  // Functions are named by the string given, classes by their default names (as Keras).
  if (name == "binary_accuracy") return BinaryAccuracy(name);
  if (name == "categorical_accuracy") return CategoricalAccuracy(name);
  if (name == "sparse_categorical_accuracy") return SparseCategoricalAccuracy(name);
  if (name == "top_k_categorical_accuracy") return TopKCategoricalAccuracy(5, name);
  if (name == "sparse_top_k_categorical_accuracy") return SparseTopKCategoricalAccuracy(5, name);
  if (name == "mse" || name == "mean_squared_error") return MeanSquaredError(name);
  if (name == "mae" || name == "mean_absolute_error") return MeanAbsoluteError(name);
  if (name == "mape" || name == "mean_absolute_percentage_error")
    return MeanAbsolutePercentageError(name);
  if (name == "msle" || name == "mean_squared_logarithmic_error")
    return MeanSquaredLogarithmicError(name);
  if (name == "binary_crossentropy") return BinaryCrossentropy(name);
  if (name == "categorical_crossentropy") return CategoricalCrossentropy(name);
  if (name == "sparse_categorical_crossentropy") return SparseCategoricalCrossentropy(name);
  if (name == "kld" || name == "kl_divergence" || name == "kullback_leibler_divergence")
    return KLDivergence(name);
  if (name == "cosine_similarity") return CosineSimilarity(name);
  if (name == "poisson") return Poisson(name);
  if (name == "logcosh") return LogCoshError(name);
  if (name == "hinge") return Hinge(name);
  if (name == "squared_hinge") return SquaredHinge(name);
  if (name == "categorical_hinge") return CategoricalHinge(name);
  if (name == "AUC" || name == "auc") return AUC();
  if (name == "Precision" || name == "precision") return Precision();
  if (name == "Recall" || name == "recall") return Recall();
  if (name == "RootMeanSquaredError" || name == "root_mean_squared_error")
    return RootMeanSquaredError();
  if (name == "TruePositives" || name == "true_positives") return TruePositives();
  if (name == "TrueNegatives" || name == "true_negatives") return TrueNegatives();
  if (name == "FalsePositives" || name == "false_positives") return FalsePositives();
  if (name == "FalseNegatives" || name == "false_negatives") return FalseNegatives();
  WEFT_FAIL(InvalidArgument)
      << "unknown metric \"" << name
      << "\"; expected one of accuracy, binary_accuracy, categorical_accuracy, "
         "sparse_categorical_accuracy, top_k_categorical_accuracy, "
         "sparse_top_k_categorical_accuracy, mse, mae, mape, msle, binary_crossentropy, "
         "categorical_crossentropy, sparse_categorical_crossentropy, kld, cosine_similarity, "
         "poisson, logcosh, hinge, squared_hinge, categorical_hinge, AUC, Precision, Recall, "
         "RootMeanSquaredError, TruePositives, TrueNegatives, FalsePositives, FalseNegatives";
  return Accuracy();
}

}  // namespace weft::nn::metrics
