// NumPy goldens for weft::nn tests: scripts/make_nn_goldens.py writes, per case, a layer's input,
// weights, upstream gradient, output and gradients as .npy files, per group, once per build
// (goldens.h); these helpers load them and run a layer against them. Header-only; tests include it.
//
//   weft::testing::NnGoldens goldens("conv");              // the files of group "conv"
//   weft::Tensor x = goldens.load("conv_valid", "x");
//   weft::testing::check_layer(goldens, "conv_valid", weft::nn::Conv2D(4, {3, 2}));
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "weft/autodiff/tape.h"
#include "weft/nn/layer.h"
#include "weft/np/np.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"
#include "weft/testing/goldens.h"
#include "weft/testing/gradient_check.h"

namespace weft::testing {

class NnGoldens {
 public:
  // The goldens of `group`, written at build time.
  explicit NnGoldens(const std::string& group) : dir_(golden_dir("make_nn_goldens/" + group)) {}
  NnGoldens(const NnGoldens&) = delete;
  NnGoldens& operator=(const NnGoldens&) = delete;
  Tensor load(const std::string& name, const std::string& array) const {
    return np::load(path(name, array));
  }
  bool has(const std::string& name, const std::string& array) const {
    return std::filesystem::exists(path(name, array));
  }

 private:
  std::string path(const std::string& name, const std::string& array) const {
    return dir_ + "/" + name + "." + array + ".npy";
  }
  std::string dir_;
};

// |actual - expected| <= rtol * (|expected| + max |expected|) elementwise, shapes equal. rtol is
// tight for float64 results and looser for float32 ones (float32 weights give float32 gradients).
inline ::testing::AssertionResult all_close(const Tensor& actual, const Tensor& expected,
                                            double rtol = -1) {
  if (!actual.defined()) return ::testing::AssertionFailure() << "result is undefined";
  if (actual.shape() != expected.shape()) {
    return ::testing::AssertionFailure()
           << "shape " << shape_str(actual.shape()) << ", expected " << shape_str(expected.shape());
  }
  if (rtol < 0) rtol = actual.dtype() == kFloat64 ? 1e-9 : 2e-6;
  std::vector<double> a = actual.to_vector<double>(), e = expected.to_vector<double>();
  double scale = 0;
  for (double v : e) scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < e.size(); ++i) {
    double tol = rtol * (std::fabs(e[i]) + scale);
    if (!(std::fabs(a[i] - e[i]) <= tol)) {
      return ::testing::AssertionFailure()
             << "element " << i << " of shape " << shape_str(expected.shape()) << ": " << a[i]
             << " vs NumPy " << e[i] << " (tolerance " << tol << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

// "w0", "dw1", ...: appending, as GCC 12 warns falsely (-Wrestrict) on "w" + std::to_string(i).
inline std::string indexed(const char* prefix, size_t i) {
  std::string s(prefix);
  s += std::to_string(i);
  return s;
}

// Builds `layer` on the golden input, assigns the golden weights w0, w1, ... (the layer's
// variables in creation order), then checks the output and the gradients of sum(y * dy) with
// respect to the input (when floating) and to every weight that has a golden gradient.
inline void check_layer(const NnGoldens& goldens, const std::string& name, const nn::Layer& layer,
                        bool training = false) {
  SCOPED_TRACE(name);
  Tensor x = goldens.load(name, "x");
  layer(x, false);  // builds
  std::vector<Variable> vars = layer.variables();
  size_t golden_weights = 0;
  while (goldens.has(name, indexed("w", golden_weights))) ++golden_weights;
  ASSERT_EQ(vars.size(), golden_weights) << "the layer's variables";
  for (size_t i = 0; i < vars.size(); ++i) {
    vars[i].assign(goldens.load(name, indexed("w", i)));
  }
  // Integer inputs (Embedding's ids) take no gradient.
  bool floating_input = is_floating(x.dtype());
  GradientTape tape;
  if (floating_input) tape.watch(x);
  Tensor y = layer(x, training);
  Tensor loss = sum(mul(y, goldens.load(name, "dy")));
  std::vector<Tensor> sources;
  if (floating_input) sources.push_back(x);
  for (const Variable& v : vars) sources.push_back(v.value());
  std::vector<Tensor> grads = tape.gradient(loss, sources);
  EXPECT_TRUE(all_close(y, goldens.load(name, "y"))) << "output";
  if (goldens.has(name, "dx")) {
    EXPECT_TRUE(all_close(grads[0], goldens.load(name, "dx"))) << "gradient w.r.t. the input";
  }
  size_t first_weight = floating_input ? 1 : 0;
  for (size_t i = 0; i < vars.size(); ++i) {
    std::string g = indexed("dw", i);
    if (goldens.has(name, g)) {
      EXPECT_TRUE(all_close(grads[first_weight + i], goldens.load(name, g)))
          << "gradient w.r.t. " << vars[i].name();
    }
  }
}

// The tape's gradients of sum(layer(x) * w) with respect to x (when floating) and each of the
// layer's variables, against central differences (x and the variables must be float64: give the
// layer the "float64" dtype policy). Variables are perturbed in place and restored.
inline ::testing::AssertionResult layer_gradient_check(const nn::Layer& layer, const Tensor& x,
                                                       bool training = false,
                                                       double tolerance = 1e-6) {
  layer(x, training);  // builds
  std::vector<Variable> vars = layer.variables();
  GradientTape tape;
  if (is_floating(x.dtype())) tape.watch(x);
  Tensor y = layer(x, training);
  std::vector<double> w = weights_for(y.shape(), 0x5eed).to_vector<double>();
  Tensor target = sum(mul(y, cast(Tensor::from_vector(w, y.shape()), y.dtype())));
  std::vector<Tensor> sources;
  if (is_floating(x.dtype())) sources.push_back(x);
  for (const Variable& v : vars) sources.push_back(v.value());
  std::vector<Tensor> analytic =
      tape.gradient(target, sources, Tensor(), UnconnectedGradients::kZero);
  const double eps = 1e-6;
  double worst = 0;
  std::string where;
  auto compare = [&](const std::string& what, size_t j, double a, double numeric) {
    double err = std::fabs(a - numeric) / std::max(1.0, std::fabs(numeric));
    if (!(err <= worst)) {
      worst = std::isnan(err) ? INFINITY : err;
      where = what + " element " + std::to_string(j) + ": analytic " + std::to_string(a) +
              ", numeric " + std::to_string(numeric);
    }
  };
  size_t k = 0;
  if (is_floating(x.dtype())) {
    std::vector<double> xv = x.to_vector<double>(), a = analytic[k++].to_vector<double>();
    for (size_t j = 0; j < xv.size(); ++j) {
      std::vector<double> v = xv;
      v[j] = xv[j] + eps;
      double plus = internal::weighted_sum(layer(Tensor::from_vector(v, x.shape()), training), w);
      v[j] = xv[j] - eps;
      double minus = internal::weighted_sum(layer(Tensor::from_vector(v, x.shape()), training), w);
      compare("input", j, a[j], (plus - minus) / (2 * eps));
    }
  }
  for (Variable& var : vars) {
    Tensor original = copy(var.value());
    std::vector<double> vv = original.to_vector<double>(), a = analytic[k++].to_vector<double>();
    for (size_t j = 0; j < vv.size(); ++j) {
      std::vector<double> v = vv;
      v[j] = vv[j] + eps;
      var.assign(cast(Tensor::from_vector(v, original.shape()), original.dtype()));
      double plus = internal::weighted_sum(layer(x, training), w);
      v[j] = vv[j] - eps;
      var.assign(cast(Tensor::from_vector(v, original.shape()), original.dtype()));
      double minus = internal::weighted_sum(layer(x, training), w);
      compare(var.name(), j, a[j], (plus - minus) / (2 * eps));
    }
    var.assign(original);
  }
  if (worst <= tolerance) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "layer gradient check failed: relative error " << worst << " at " << where;
}

}  // namespace weft::testing
