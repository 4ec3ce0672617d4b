// weft::np array creation and shape functions, under NumPy's names and defaults (float64 unless
// told, int64 for integer ranges).
#pragma once

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "weft/core/tensor.h"
#include "weft/np/array_like.h"

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
Tensor identity(int64_t n, DType dtype = kFloat64);
// weft never hands out uninitialised memory: empty and empty_like are zero-filled (as TF's).
Tensor empty(const Shape& shape, DType dtype = kFloat64);
Tensor empty_like(const Tensor& t);
Tensor copy(const Tensor& a);
Tensor asanyarray(const Tensor& a);
Tensor ascontiguousarray(const Tensor& a);
Tensor logspace(double start, double stop, int64_t num = 50, bool endpoint = true,
                double base = 10.0);
// Geometric progression from start to stop (same sign, non-zero), ends exact.
Tensor geomspace(double start, double stop, int64_t num = 50, bool endpoint = true);
// Ones at and below the k-th diagonal of an n x m matrix (m = -1: square).
Tensor tri(int64_t n, int64_t m = -1, int64_t k = 0, DType dtype = kFloat64);
// The last two axes' lower / upper triangle from the k-th diagonal, the rest zero.
Tensor tril(const Tensor& m, int64_t k = 0);
Tensor triu(const Tensor& m, int64_t k = 0);
// Coordinate grids: "xy" (Cartesian, the default) or "ij" (matrix) indexing.
std::vector<Tensor> meshgrid(const std::vector<Tensor>& xs, const std::string& indexing = "xy");
// Columns are powers of x, decreasing unless `increasing`; n = -1 means len(x) columns.
Tensor vander(const Tensor& x, int64_t n = -1, bool increasing = false);
// 1-D v: a matrix with v on the k-th diagonal; 2-D v: its k-th diagonal.
Tensor diag(const Tensor& v, int64_t k = 0);
Tensor diagflat(const Tensor& v, int64_t k = 0);
// The indices of the main diagonal of an n x ... x n array: ndim equal arange(n) arrays.
std::vector<Tensor> diag_indices(int64_t n, int64_t ndim = 2);
// Open meshes for indexing: the i-th 1-D array reshaped to (1, ..., len, ..., 1).
std::vector<Tensor> ix_(const std::vector<Tensor>& arrays);

// ---- shape -------------------------------------------------------------------------------------
Tensor reshape(const Tensor& a, const Shape& shape);
Tensor transpose(const Tensor& a, const std::vector<int64_t>& axes = {});
Tensor concatenate(const std::vector<Tensor>& arrays, int64_t axis = 0);
Tensor stack(const std::vector<Tensor>& arrays, int64_t axis = 0);
Tensor ravel(const Tensor& a);
Tensor flatten(const Tensor& a);
Tensor expand_dims(const Tensor& a, int64_t axis);
Tensor squeeze(const Tensor& a, const Axis& axis = {});
Tensor broadcast_to(const Tensor& a, const Shape& shape);
std::vector<Tensor> broadcast_arrays(const std::vector<Tensor>& arrays);
Tensor atleast_1d(const Tensor& a);
Tensor atleast_2d(const Tensor& a);
Tensor atleast_3d(const Tensor& a);
Tensor swapaxes(const Tensor& a, int64_t axis1, int64_t axis2);
Tensor moveaxis(const Tensor& a, const std::vector<int64_t>& source,
                const std::vector<int64_t>& destination);
Tensor moveaxis(const Tensor& a, int64_t source, int64_t destination);
// Reversed along the axes (None: every axis).
Tensor flip(const Tensor& a, const Axis& axis = {});
Tensor fliplr(const Tensor& a);
Tensor flipud(const Tensor& a);
// Elements shifted by `shift` along axis, wrapping around (None: the flattened array).
Tensor roll(const Tensor& a, int64_t shift, const Axis& axis = {});
Tensor rot90(const Tensor& m, int64_t k = 1, std::pair<int64_t, int64_t> axes = {0, 1});
Tensor tile(const Tensor& a, const std::vector<int64_t>& reps);
// Each element repeated `repeats` times along axis (None: the flattened array), or element i
// repeats[i] times.
Tensor repeat(const Tensor& a, int64_t repeats, const Axis& axis = {});
Tensor repeat(const Tensor& a, const std::vector<int64_t>& repeats, const Axis& axis = {});
// values appended along axis; with None both are flattened first.
Tensor append(const Tensor& arr, const Tensor& values, const Axis& axis = {});
Tensor hstack(const std::vector<Tensor>& arrays);
Tensor vstack(const std::vector<Tensor>& arrays);
Tensor dstack(const std::vector<Tensor>& arrays);
// Into `sections` equal parts (InvalidArgument if they are not equal), or at the given indices.
std::vector<Tensor> split(const Tensor& a, int64_t sections, int64_t axis = 0);
std::vector<Tensor> split(const Tensor& a, const std::vector<int64_t>& indices, int64_t axis = 0);
std::vector<Tensor> hsplit(const Tensor& a, int64_t sections);
std::vector<Tensor> vsplit(const Tensor& a, int64_t sections);
std::vector<Tensor> dsplit(const Tensor& a, int64_t sections);
// pad_width[i] = {before, after} for axis i (one pair: every axis). Modes: "constant" (with
// constant_value), "edge", "reflect", "symmetric".
Tensor pad(const Tensor& a, const std::vector<std::pair<int64_t, int64_t>>& pad_width,
           const std::string& mode = "constant", double constant_value = 0);

// ---- indexing helpers
// ---------------------------------------------------------------------------- a's elements at
// `indices` along axis (None: of the flattened array); negative indices count from the end.
// Differentiable in a.
Tensor take(const Tensor& a, const Tensor& indices, const Axis& axis = {});
// out[..., j, ...] = a[..., indices[..., j, ...], ...] along axis (indices broadcast against a).
Tensor take_along_axis(const Tensor& a, const Tensor& indices, int64_t axis);
// The slices along axis where condition (1-D) is true (None: of the flattened array).
Tensor compress(const Tensor& condition, const Tensor& a, const Axis& axis = {});
// The first choice whose condition holds, elementwise; `default_value` where none does.
Tensor select(const std::vector<Tensor>& condlist, const std::vector<Tensor>& choicelist,
              double default_value = 0);
// The indices of the non-zero elements, one int64 array per axis (C order).
std::vector<Tensor> nonzero(const Tensor& a);
// One-argument where: nonzero(condition).
std::vector<Tensor> where(const Tensor& condition);

// ---- sorting -----------------------------------------------------------------------------------
// Ascending, NaN last, stable, along axis (None: the flattened array); sort is differentiable
// (the gradient follows the permutation).
Tensor sort(const Tensor& a, const Axis& axis = -1);
Tensor argsort(const Tensor& a, const Axis& axis = -1);

// ---- array facts -------------------------------------------------------------------------------
int64_t ndim(const Tensor& a);
Shape shape(const Tensor& a);
int64_t size(const Tensor& a);
// True for a C++ number, false for a tensor (NumPy: a 0-d array is not a scalar).
bool isscalar(const ArrayLike& a);

}  // namespace weft::np
