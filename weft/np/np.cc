#include "weft/np/np.h"

#include <cstring>

#include "weft/np/npy_format.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/linalg.h"
#include "weft/ops/random.h"
#include "weft/ops/shape_ops.h"

namespace weft::np {

Tensor array(std::initializer_list<double> values, DType dtype) {
  return cast(Tensor::from_vector(std::vector<double>(values)), dtype);
}

Tensor array(std::initializer_list<std::initializer_list<double>> rows, DType dtype) {
  std::vector<double> values;
  size_t cols = rows.size() ? rows.begin()->size() : 0;
  for (const auto& row : rows) {
    WEFT_CHECK(row.size() == cols, InvalidArgument)
        << "np::array: ragged rows (" << row.size() << " values where the first row has " << cols
        << ")";
    values.insert(values.end(), row.begin(), row.end());
  }
  return cast(
      Tensor::from_vector(values, {static_cast<int64_t>(rows.size()), static_cast<int64_t>(cols)}),
      dtype);
}

Tensor asarray(const Tensor& t, DType dtype) { return cast(t, dtype); }
Tensor zeros(const Shape& shape, DType dtype) { return weft::zeros(shape, dtype); }
Tensor ones(const Shape& shape, DType dtype) { return weft::ones(shape, dtype); }
Tensor full(const Shape& shape, Scalar value, DType dtype) {
  return weft::full(shape, value, dtype);
}
Tensor zeros_like(const Tensor& t) { return weft::zeros_like(t); }
Tensor ones_like(const Tensor& t) { return weft::ones_like(t); }
Tensor full_like(const Tensor& t, Scalar value) { return weft::full_like(t, value); }

Tensor arange(Scalar stop) { return np::arange(Scalar(0), stop, Scalar(1)); }
Tensor arange(Scalar start, Scalar stop, Scalar step) {
  bool ints = !start.is_float && !stop.is_float && !step.is_float;
  return weft::arange(start, stop, step, ints ? kInt64 : kFloat64);
}
Tensor linspace(double start, double stop, int64_t num, bool endpoint) {
  return weft::linspace(start, stop, num, endpoint, kFloat64);
}
Tensor eye(int64_t n, int64_t m, DType dtype) { return weft::eye(n, m, dtype); }

Tensor reshape(const Tensor& a, const Shape& shape) { return weft::reshape(a, shape); }
Tensor transpose(const Tensor& a, const std::vector<int64_t>& axes) {
  return weft::transpose(a, axes);
}
Tensor concatenate(const std::vector<Tensor>& arrays, int64_t axis) {
  return weft::concat(arrays, axis);
}
Tensor stack(const std::vector<Tensor>& arrays, int64_t axis) { return weft::stack(arrays, axis); }

Tensor dot(const Tensor& a, const Tensor& b) {
  WEFT_CHECK(a.defined() && b.defined(), InvalidArgument) << "np::dot: an input is undefined";
  if (a.rank() == 0 || b.rank() == 0) return mul(a, b);
  if (b.rank() <= 2) return weft::matmul(a, b);
  // N-d b: contract a's last axis with b's second-to-last, keeping all other axes of both.
  int64_t k = b.dim(-2);
  std::vector<int64_t> perm;
  perm.push_back(b.rank() - 2);
  for (int64_t i = 0; i < b.rank(); ++i) {
    if (i != b.rank() - 2) perm.push_back(i);
  }
  Tensor b2 = weft::reshape(weft::transpose(b, perm), {k, -1});
  Tensor out = weft::matmul(a, b2);
  Shape shape(a.shape().begin(), a.shape().end() - 1);
  shape.insert(shape.end(), b.shape().begin(), b.shape().end() - 2);
  shape.push_back(b.dim(-1));
  return weft::reshape(out, shape);
}
Tensor matmul(const Tensor& a, const Tensor& b) { return weft::matmul(a, b); }

Tensor sum(const Tensor& a) { return weft::sum(a); }
Tensor sum(const Tensor& a, int64_t axis, bool keepdims) { return weft::sum(a, {axis}, keepdims); }
Tensor sum(const Tensor& a, const Axes& axes, bool keepdims) {
  return weft::sum(a, axes, keepdims);
}
Tensor mean(const Tensor& a) { return weft::mean(a); }
Tensor mean(const Tensor& a, int64_t axis, bool keepdims) {
  return weft::mean(a, {axis}, keepdims);
}
Tensor mean(const Tensor& a, const Axes& axes, bool keepdims) {
  return weft::mean(a, axes, keepdims);
}

Tensor var(const Tensor& a, const Axes& axes, bool keepdims, int64_t ddof) {
  WEFT_CHECK(a.defined(), InvalidArgument) << "np::var: the input is undefined";
  Tensor x = is_floating(a.dtype()) ? a : cast(a, kFloat64);
  Tensor centered = sub(x, weft::mean(x, axes, true));
  int64_t n = axes.empty() ? x.numel() : 1;
  for (int64_t axis : axes) n *= x.shape()[normalize_axis("np::var", axis, x.rank())];
  return div(weft::sum(square(centered), axes, keepdims), static_cast<double>(n - ddof));
}
Tensor var(const Tensor& a) { return var(a, Axes{}, false, 0); }
Tensor var(const Tensor& a, int64_t axis, bool keepdims, int64_t ddof) {
  return var(a, Axes{axis}, keepdims, ddof);
}
Tensor std(const Tensor& a) { return weft::sqrt(var(a)); }
Tensor std(const Tensor& a, int64_t axis, bool keepdims, int64_t ddof) {
  return weft::sqrt(var(a, axis, keepdims, ddof));
}
Tensor std(const Tensor& a, const Axes& axes, bool keepdims, int64_t ddof) {
  return weft::sqrt(var(a, axes, keepdims, ddof));
}

Tensor max(const Tensor& a) { return weft::max(a); }
Tensor max(const Tensor& a, int64_t axis, bool keepdims) { return weft::max(a, {axis}, keepdims); }
Tensor min(const Tensor& a) { return weft::min(a); }
Tensor min(const Tensor& a, int64_t axis, bool keepdims) { return weft::min(a, {axis}, keepdims); }
Tensor argmax(const Tensor& a) { return weft::argmax(weft::flatten(a), 0); }
Tensor argmax(const Tensor& a, int64_t axis) { return weft::argmax(a, axis); }

Tensor clip(const Tensor& a, Scalar a_min, Scalar a_max) { return weft::clip(a, a_min, a_max); }
Tensor where(const Tensor& condition, const Tensor& x, const Tensor& y) {
  return weft::where(condition, x, y);
}
Tensor abs(const Tensor& a) { return weft::abs(a); }
Tensor exp(const Tensor& a) { return weft::exp(a); }
Tensor log(const Tensor& a) { return weft::log(a); }
Tensor sqrt(const Tensor& a) { return weft::sqrt(a); }

namespace {

NpyArray to_npy(const Tensor& t) {
  WEFT_CHECK(t.defined(), InvalidArgument) << "np::save: the tensor is undefined";
  Tensor c = contiguous(t);
  NpyArray a{c.dtype(), c.shape(), {}};
  auto* p = static_cast<const uint8_t*>(c.raw_data());
  a.data.assign(p, p + c.numel() * dtype_size(c.dtype()));
  return a;
}

Tensor from_npy(const NpyArray& a) {
  Tensor t = Tensor::empty(a.shape, a.dtype);
  if (!a.data.empty()) std::memcpy(t.raw_data(), a.data.data(), a.data.size());
  return t;
}

std::vector<std::pair<std::string, NpyArray>> to_entries(const std::map<std::string, Tensor>& m) {
  std::vector<std::pair<std::string, NpyArray>> entries;
  for (const auto& [name, t] : m) entries.emplace_back(name, to_npy(t));
  return entries;
}

}  // namespace

void save(const std::string& path, const Tensor& a) { write_npy_file(path, to_npy(a)); }
Tensor load(const std::string& path) { return from_npy(read_npy_file(path)); }
void savez(const std::string& path, const std::map<std::string, Tensor>& arrays) {
  write_npz_file(path, to_entries(arrays), false);
}
void savez_compressed(const std::string& path, const std::map<std::string, Tensor>& arrays) {
  write_npz_file(path, to_entries(arrays), true);
}
std::map<std::string, Tensor> load_npz(const std::string& path) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, a] : read_npz_file(path)) out.emplace(name, from_npy(a));
  return out;
}

namespace random {
Tensor randn(const Shape& shape, uint64_t seed) {
  return stateless_random_normal(shape, {static_cast<int64_t>(seed), 0}, 0, 1, kFloat64);
}
Tensor uniform(double low, double high, const Shape& shape, uint64_t seed) {
  return stateless_random_uniform(shape, {static_cast<int64_t>(seed), 0}, low, high, kFloat64);
}
}  // namespace random

}  // namespace weft::np
