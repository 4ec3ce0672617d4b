// Numerical gradient checks for tests: the tape's gradient of sum(f(inputs) * w), for a fixed
// random weighting w (so every output element sends a different upstream gradient), against
// central differences of the same scalar in float64; and forward mode (ForwardAccumulator) along
// random tangents against the reverse-mode gradients. Header-only; tests include it directly.
//
//   EXPECT_TRUE(weft::testing::gradient_check(
//       [](const std::vector<weft::Tensor>& xs) { return weft::tanh(xs[0]) * xs[1]; },
//       {weft::testing::uniform({3, 4}, 1), weft::testing::uniform({4}, 2)}));
//   EXPECT_TRUE(weft::testing::second_derivative_check(f, {x}));   // Hessian-vector products
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "weft/autodiff/forward.h"
#include "weft/autodiff/tape.h"
#include "weft/core/tensor.h"
#include "weft/ops/cast.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/reduce.h"

namespace weft::testing {

using TensorFn = std::function<Tensor(const std::vector<Tensor>&)>;

struct GradientCheckOptions {
  double eps = 1e-6;
  // An element passes when |analytic - numeric| <= tolerance * max(1, |numeric|).
  double tolerance = 1e-6;
  uint64_t weight_seed = 0x5eed;
  // Also check forward mode: sum(jvp(f) * w) along random tangents v must equal
  // sum_i <gradient_i, v_i> within `tolerance` (relative to max(1, |value|)). Off only for ops
  // whose gradient is a kernel without a derivative (forward mode refuses them).
  bool check_forward = true;
};

struct GradientCheckResult {
  double max_abs_error = 0;
  double max_rel_error = 0;                  // |analytic - numeric| / max(1, |numeric|)
  std::vector<Tensor> analytic;              // per input; undefined for non-floating inputs
  std::vector<std::vector<double>> numeric;  // per input, C order
  std::string worst;                         // where max_rel_error happened
  double forward_rel_error = 0;              // forward mode against reverse mode
  std::string forward;                       // both values
};

// Uniform values in [lo, hi) from a fixed seed (float64 unless asked otherwise).
inline Tensor uniform(const Shape& shape, uint64_t seed, double lo = -1, double hi = 1,
                      DType dtype = kFloat64) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(static_cast<size_t>(num_elements(shape)));
  for (double& e : v) e = dist(gen);
  return cast(Tensor::from_vector(v, shape), dtype);
}

// Uniform values whose magnitude is in [lo, hi), with random signs: keeps inputs away from the
// kinks of abs, relu, sign and from the poles of log, sqrt, div.
inline Tensor away_from_zero(const Shape& shape, uint64_t seed, double lo = 0.2, double hi = 1.5) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::bernoulli_distribution negative(0.5);
  std::vector<double> v(static_cast<size_t>(num_elements(shape)));
  for (double& e : v) e = negative(gen) ? -dist(gen) : dist(gen);
  return Tensor::from_vector(v, shape);
}

// The fixed weighting of an output of `shape`: values in ±[0.5, 1.5), so none is near zero.
inline Tensor weights_for(const Shape& shape, uint64_t seed) {
  return away_from_zero(shape, seed ^ (0x9e3779b97f4a7c15ull * (shape.size() + 1)), 0.5, 1.5);
}

namespace internal {

inline double weighted_sum(const Tensor& y, const std::vector<double>& w) {
  std::vector<double> v = y.to_vector<double>();
  double s = 0;
  for (size_t i = 0; i < v.size(); ++i) s += v[i] * w[i];
  return s;
}

}  // namespace internal

// Compares the tape's gradients of sum(f(inputs) * w) with central differences. Floating inputs
// must be float64; other inputs (indices, conditions) are passed through and not differentiated.
// Non-contiguous inputs are given to f as they are for the analytic part.
inline GradientCheckResult compute_gradient_error(const TensorFn& f,
                                                  const std::vector<Tensor>& inputs,
                                                  const GradientCheckOptions& options = {}) {
  GradientCheckResult result;
  std::vector<Tensor> sources;
  for (const Tensor& x : inputs) {
    if (is_floating(x.dtype())) {
      EXPECT_EQ(x.dtype(), kFloat64) << "gradient_check: differentiated inputs must be float64";
    }
  }

  // Analytic.
  Shape out_shape;
  {
    GradientTape tape;
    tape.watch(inputs);
    Tensor y = f(inputs);
    out_shape = y.shape();
    Tensor w = cast(weights_for(out_shape, options.weight_seed), y.dtype());
    Tensor target = sum(mul(y, w));
    std::vector<Tensor> floating;
    for (const Tensor& x : inputs) {
      if (is_floating(x.dtype())) floating.push_back(x);
    }
    std::vector<Tensor> grads =
        tape.gradient(target, floating, Tensor(), UnconnectedGradients::kZero);
    size_t k = 0;
    for (const Tensor& x : inputs) {
      result.analytic.push_back(is_floating(x.dtype()) ? grads[k++] : Tensor());
    }
  }
  std::vector<double> w = weights_for(out_shape, options.weight_seed).to_vector<double>();

  if (options.check_forward) {
    std::vector<Tensor> primals, tangents;
    double reverse = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!is_floating(inputs[i].dtype())) continue;
      Tensor v = uniform(inputs[i].shape(), options.weight_seed + 7919 * (i + 1));
      primals.push_back(inputs[i]);
      tangents.push_back(v);
      reverse += internal::weighted_sum(result.analytic[i], v.to_vector<double>());
    }
    ForwardAccumulator acc(primals, tangents);
    double forward = internal::weighted_sum(acc.jvp(f(inputs), UnconnectedGradients::kZero), w);
    result.forward_rel_error = std::fabs(forward - reverse) / std::max(1.0, std::fabs(reverse));
    if (std::isnan(result.forward_rel_error)) result.forward_rel_error = INFINITY;
    std::ostringstream os;
    os.precision(17);
    os << "forward mode " << forward << ", reverse mode " << reverse;
    result.forward = os.str();
  }

  // Numeric, on contiguous float64 copies of the inputs.
  std::vector<Tensor> base = inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    result.numeric.emplace_back();
    if (!is_floating(inputs[i].dtype())) continue;
    std::vector<double> values = inputs[i].to_vector<double>();
    std::vector<double> analytic = result.analytic[i].to_vector<double>();
    EXPECT_EQ(result.analytic[i].shape(), inputs[i].shape())
        << "gradient_check: gradient of input " << i << " has the wrong shape";
    for (size_t j = 0; j < values.size(); ++j) {
      std::vector<Tensor> args = base;
      std::vector<double> v = values;
      v[j] = values[j] + options.eps;
      args[i] = Tensor::from_vector(v, inputs[i].shape());
      double plus = internal::weighted_sum(f(args), w);
      v[j] = values[j] - options.eps;
      args[i] = Tensor::from_vector(v, inputs[i].shape());
      double minus = internal::weighted_sum(f(args), w);
      double numeric = (plus - minus) / (2 * options.eps);
      result.numeric[i].push_back(numeric);
      double a = j < analytic.size() ? analytic[j] : NAN;
      double abs_err = std::fabs(a - numeric);
      double rel_err = abs_err / std::max(1.0, std::fabs(numeric));
      if (std::isnan(abs_err)) abs_err = rel_err = INFINITY;
      result.max_abs_error = std::max(result.max_abs_error, abs_err);
      if (rel_err > result.max_rel_error || result.worst.empty()) {
        result.max_rel_error = std::max(result.max_rel_error, rel_err);
        std::ostringstream os;
        os.precision(17);
        os << "input " << i << " " << shape_str(inputs[i].shape()) << " element " << j
           << ": analytic " << a << ", numeric " << numeric;
        result.worst = os.str();
      }
    }
  }
  return result;
}

// gtest assertion: EXPECT_TRUE(gradient_check(f, inputs)).
inline ::testing::AssertionResult gradient_check(const TensorFn& f,
                                                 const std::vector<Tensor>& inputs,
                                                 const GradientCheckOptions& options = {}) {
  GradientCheckResult r = compute_gradient_error(f, inputs, options);
  if (r.forward_rel_error > options.tolerance) {
    return ::testing::AssertionFailure()
           << "forward mode disagrees: relative error " << r.forward_rel_error << " > "
           << options.tolerance << ": " << r.forward;
  }
  if (r.max_rel_error <= options.tolerance) {
    return ::testing::AssertionSuccess() << "max abs error " << r.max_abs_error;
  }
  return ::testing::AssertionFailure()
         << "gradient check failed: max relative error " << r.max_rel_error << " (abs "
         << r.max_abs_error << ") > " << options.tolerance << "; worst at " << r.worst;
}

// The tape's gradient of sum(f(inputs) * w) with respect to input `wrt`, as a function of the
// inputs, computed on an inner tape so an outer tape can differentiate it again.
inline TensorFn gradient_fn(const TensorFn& f, size_t wrt, uint64_t weight_seed = 0xfeed) {
  return [f, wrt, weight_seed](const std::vector<Tensor>& xs) {
    GradientTape tape;
    tape.watch(xs);
    Tensor y = f(xs);
    Tensor target = sum(mul(y, cast(weights_for(y.shape(), weight_seed), y.dtype())));
    return tape.gradient(target, xs[wrt], Tensor(), UnconnectedGradients::kZero);
  };
}

// Second derivatives through nested tapes: checks the gradient of gradient_fn(f, wrt) against
// central differences of it, for every floating input `wrt`.
inline ::testing::AssertionResult second_derivative_check(const TensorFn& f,
                                                          const std::vector<Tensor>& inputs,
                                                          GradientCheckOptions options = {}) {
  if (options.tolerance == GradientCheckOptions{}.tolerance) options.tolerance = 1e-5;
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (!is_floating(inputs[k].dtype())) continue;
    ::testing::AssertionResult r = gradient_check(gradient_fn(f, k), inputs, options);
    if (!r) return r << " (second derivative through the gradient of input " << k << ")";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace weft::testing
