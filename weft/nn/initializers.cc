#include "weft/nn/initializers.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/random.h"

namespace weft::nn::initializers {

std::pair<double, double> fans(const Shape& shape) {
  if (shape.empty()) return {1, 1};
  if (shape.size() == 1) return {static_cast<double>(shape[0]), static_cast<double>(shape[0])};
  double receptive = 1;
  for (size_t i = 0; i + 2 < shape.size(); ++i) receptive *= static_cast<double>(shape[i]);
  return {static_cast<double>(shape[shape.size() - 2]) * receptive,
          static_cast<double>(shape.back()) * receptive};
}

namespace {
Seed resolve(const std::optional<Seed>& seed) { return seed ? *seed : random::next_seed(); }
}  // namespace

Initializer zeros() {
  return [](const Shape& s, DType t) { return weft::zeros(s, t); };
}
Initializer ones() {
  return [](const Shape& s, DType t) { return weft::ones(s, t); };
}
Initializer constant(double value) {
  return [value](const Shape& s, DType t) { return weft::full(s, value, t); };
}

Initializer glorot_uniform(std::optional<Seed> seed) {
  return [seed](const Shape& s, DType t) {
    auto [fan_in, fan_out] = fans(s);
    double limit = std::sqrt(6.0 / (fan_in + fan_out));
    return stateless_random_uniform(s, resolve(seed), -limit, limit, t);
  };
}

Initializer he_normal(std::optional<Seed> seed) {
  return [seed](const Shape& s, DType t) {
    // Keras divides by the stddev of a unit normal truncated at 2 sigma.
    double stddev = std::sqrt(2.0 / fans(s).first) / 0.87962566103423978;
    return stateless_truncated_normal(s, resolve(seed), 0.0, stddev, t);
  };
}

Initializer random_normal(double mean, double stddev, std::optional<Seed> seed) {
  return [=](const Shape& s, DType t) {
    return stateless_random_normal(s, resolve(seed), mean, stddev, t);
  };
}

Initializer random_uniform(double minval, double maxval, std::optional<Seed> seed) {
  return [=](const Shape& s, DType t) {
    return stateless_random_uniform(s, resolve(seed), minval, maxval, t);
  };
}

Initializer orthogonal(double gain, std::optional<Seed> seed) {
  return [=](const Shape& s, DType t) {
    // Keras: QR of a normal (rows x cols) matrix (rows = all axes but the last), Q's columns made
    // unique by the signs of R's diagonal; transposed when there are fewer rows than columns.
    int64_t cols = s.empty() ? 1 : s.back();
    int64_t rows = cols == 0 ? 0 : num_elements(s) / cols;
    int64_t m = std::max(rows, cols), n = std::min(rows, cols);
    std::vector<double> a =
        stateless_random_normal({m, n}, resolve(seed), 0.0, 1.0, kFloat64).to_vector<double>();
    // Householder QR of the m x n matrix a (row-major): q is m x n with orthonormal columns.
    std::vector<double> q(static_cast<size_t>(m * n), 0.0), r_diag(static_cast<size_t>(n));
    std::vector<std::vector<double>> reflectors;
    for (int64_t k = 0; k < n; ++k) {
      double norm = 0;
      for (int64_t i = k; i < m; ++i) norm += a[i * n + k] * a[i * n + k];
      norm = std::sqrt(norm);
      double alpha = a[k * n + k] > 0 ? -norm : norm;
      std::vector<double> v(static_cast<size_t>(m), 0.0);
      for (int64_t i = k; i < m; ++i) v[i] = a[i * n + k];
      v[k] -= alpha;
      double vv = 0;
      for (int64_t i = k; i < m; ++i) vv += v[i] * v[i];
      if (vv > 0) {
        for (int64_t j = k; j < n; ++j) {
          double dot = 0;
          for (int64_t i = k; i < m; ++i) dot += v[i] * a[i * n + j];
          for (int64_t i = k; i < m; ++i) a[i * n + j] -= 2 * dot / vv * v[i];
        }
      }
      r_diag[k] = a[k * n + k];
      reflectors.push_back(std::move(v));
    }
    // Q = H_0 ... H_{n-1} applied to the first n columns of the identity.
    for (int64_t j = 0; j < n; ++j) q[j * n + j] = 1;
    for (int64_t k = n - 1; k >= 0; --k) {
      const std::vector<double>& v = reflectors[k];
      double vv = 0;
      for (int64_t i = k; i < m; ++i) vv += v[i] * v[i];
      if (vv == 0) continue;
      for (int64_t j = 0; j < n; ++j) {
        double dot = 0;
        for (int64_t i = k; i < m; ++i) dot += v[i] * q[i * n + j];
        for (int64_t i = k; i < m; ++i) q[i * n + j] -= 2 * dot / vv * v[i];
      }
    }
    std::vector<double> out(static_cast<size_t>(rows * cols));
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double v = q[i * n + j] * (r_diag[j] < 0 ? -1.0 : 1.0) * gain;
        if (rows >= cols) {
          out[i * cols + j] = v;
        } else {
          out[j * cols + i] = v;  // q is (cols x rows): transpose
        }
      }
    }
    return cast(Tensor::from_vector(out, s), t);
  };
}

Initializer get(const std::string& name) {
  if (name == "orthogonal") return orthogonal();
  if (name == "glorot_uniform") return glorot_uniform();
  if (name == "he_normal") return he_normal();
  if (name == "zeros") return zeros();
  if (name == "ones") return ones();
  if (name == "random_normal") return random_normal();
  if (name == "random_uniform") return random_uniform();
  WEFT_FAIL(InvalidArgument) << "unknown initializer \"" << name
                             << "\"; expected one of glorot_uniform, he_normal, zeros, ones, "
                                "random_normal, random_uniform, orthogonal";
  return zeros();
}

}  // namespace weft::nn::initializers
