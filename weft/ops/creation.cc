#include "weft/ops/creation.h"

#include <cmath>

#include "weft/core/op_scope.h"
#include "weft/ops/cast.h"

namespace weft {

Tensor full(const Shape& shape, Scalar value, DType dtype) {
  Tensor t = Tensor::empty(shape, dtype);
  assign_into(t, Tensor::scalar(value, dtype));
  return t;
}
Tensor zeros(const Shape& shape, DType dtype) { return full(shape, 0, dtype); }
Tensor ones(const Shape& shape, DType dtype) { return full(shape, 1, dtype); }
Tensor zeros_like(const Tensor& t) { return full_like(t, 0); }
Tensor ones_like(const Tensor& t) { return full_like(t, 1); }
Tensor full_like(const Tensor& t, Scalar value) {
  OpScope op("full_like", t);
  if (op.spmd())
    return op.elementwise({t}, [value](const SpmdArgs& c) { return full_like(c[0], value); });
  return full(t.shape(), value, t.dtype());
}

Tensor arange(Scalar start, Scalar stop, Scalar step, DType dtype) {
  WEFT_CHECK(step.value != 0, InvalidArgument) << "arange: step must be nonzero";
  auto n = static_cast<int64_t>(std::ceil((stop.value - start.value) / step.value));
  n = std::max<int64_t>(n, 0);
  std::vector<double> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = start.value + static_cast<double>(i) * step.value;
  return cast(Tensor::from_vector(values), dtype);
}

Tensor linspace(double start, double stop, int64_t num, bool endpoint, DType dtype) {
  WEFT_CHECK(num >= 0, InvalidArgument) << "linspace: num must be >= 0, got " << num;
  int64_t div = endpoint ? num - 1 : num;
  double step = div > 0 ? (stop - start) / static_cast<double>(div) : 0.0;
  std::vector<double> values(num);
  for (int64_t i = 0; i < num; ++i) values[i] = start + static_cast<double>(i) * step;
  if (endpoint && num > 1) values[num - 1] = stop;
  return cast(Tensor::from_vector(values), dtype);
}

Tensor eye(int64_t n, int64_t m, DType dtype) {
  if (m < 0) m = n;
  WEFT_CHECK(n >= 0, InvalidArgument) << "eye: n must be >= 0, got " << n;
  std::vector<double> values(n * m, 0.0);
  for (int64_t i = 0; i < std::min(n, m); ++i) values[i * m + i] = 1.0;
  return cast(Tensor::from_vector(values, {n, m}), dtype);
}

}  // namespace weft
