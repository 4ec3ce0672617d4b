// weft::np array creation and shape functions, under NumPy's names and defaults (float64 unless
// told, int64 for integer ranges).
#pragma once

#include <initializer_list>
#include <vector>

#include "weft/core/tensor.h"

namespace weft::np {

// ---- creation ----------------------------------------------------------------------------------
Tensor array(std::initializer_list<double> values, DType dtype = kFloat64);
Tensor array(std::initializer_list<std::initializer_list<double>> rows, DType dtype = kFloat64);
template <typename T>
Tensor array(const std::vector<T>& values, const Shape& shape) {
  return Tensor::from_vector(values, shape);
}
Tensor asarray(const Tensor& t, DType dtype);
Tensor zeros(const Shape& shape, DType dtype = kFloat64);
Tensor ones(const Shape& shape, DType dtype = kFloat64);
Tensor full(const Shape& shape, Scalar value, DType dtype = kFloat64);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor full_like(const Tensor& t, Scalar value);
// numpy.arange: int64 when every bound is an integer, float64 otherwise.
Tensor arange(Scalar stop);
Tensor arange(Scalar start, Scalar stop, Scalar step = 1);
Tensor linspace(double start, double stop, int64_t num = 50, bool endpoint = true);
Tensor eye(int64_t n, int64_t m = -1, DType dtype = kFloat64);

// ---- shape -------------------------------------------------------------------------------------
Tensor reshape(const Tensor& a, const Shape& shape);
Tensor transpose(const Tensor& a, const std::vector<int64_t>& axes = {});
Tensor concatenate(const std::vector<Tensor>& arrays, int64_t axis = 0);
Tensor stack(const std::vector<Tensor>& arrays, int64_t axis = 0);

}  // namespace weft::np
