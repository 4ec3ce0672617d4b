// Reductions over any set of axes, NumPy-style (an empty axis list means every axis), with
// keepdims. Results are bit-identical for every thread count: each output is combined in a
// fixed order over fixed-size blocks, whoever computes which block.
//
//   weft::Tensor total = weft::sum(x);                    // every element
//   weft::Tensor col_means = weft::mean(x, {0}, true);    // shape (1, n)
#pragma once

#include <vector>

#include "weft/core/tensor.h"

namespace weft {

using Axes = std::vector<int64_t>;

// sum/prod of bool and integer tensors give int64, as NumPy; mean of integers gives float64.
Tensor sum(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
Tensor mean(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
Tensor max(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
Tensor min(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
Tensor prod(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
Tensor logsumexp(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
// Whether every / any element is nonzero (NaN counts as nonzero): bool results. An empty
// reduction gives true for all and false for any.
Tensor all(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
Tensor any(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
// Index (int64) of the first largest/smallest element along `axis`.
Tensor argmax(const Tensor& x, int64_t axis);
Tensor argmin(const Tensor& x, int64_t axis);

// Sums `g` down to `shape`, undoing a broadcast from `shape` to g's shape (gradients use it).
Tensor sum_to(const Tensor& g, const Shape& shape);

}  // namespace weft
