#include "weft/np/array.h"

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

}  // namespace weft::np
