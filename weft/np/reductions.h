// weft::np reductions, statistics and running totals, with NumPy's axis argument (np::Axis:
// None, one axis or several) and keepdims. Sums and products of integers give int64; means of
// integers float64; var and std are population statistics (ddof = 0) unless told.
#pragma once

#include "weft/core/tensor.h"
#include "weft/np/array_like.h"

namespace weft::np {

Tensor sum(const Tensor& a, const Axis& axis = {}, bool keepdims = false);
Tensor prod(const Tensor& a, const Axis& axis = {}, bool keepdims = false);
Tensor mean(const Tensor& a, const Axis& axis = {}, bool keepdims = false);
Tensor var(const Tensor& a, const Axis& axis = {}, bool keepdims = false, int64_t ddof = 0);
Tensor std(const Tensor& a, const Axis& axis = {}, bool keepdims = false, int64_t ddof = 0);
Tensor max(const Tensor& a, const Axis& axis = {}, bool keepdims = false);
Tensor min(const Tensor& a, const Axis& axis = {}, bool keepdims = false);
Tensor amax(const Tensor& a, const Axis& axis = {}, bool keepdims = false);
Tensor amin(const Tensor& a, const Axis& axis = {}, bool keepdims = false);
// max - min ("peak to peak").
Tensor ptp(const Tensor& a, const Axis& axis = {}, bool keepdims = false);
Tensor all(const Tensor& a, const Axis& axis = {}, bool keepdims = false);
Tensor any(const Tensor& a, const Axis& axis = {}, bool keepdims = false);
Tensor count_nonzero(const Tensor& a, const Axis& axis = {}, bool keepdims = false);
// NaN treated as 0 (sum), 1 (prod) or left out (mean).
Tensor nansum(const Tensor& a, const Axis& axis = {}, bool keepdims = false);
Tensor nanprod(const Tensor& a, const Axis& axis = {}, bool keepdims = false);
Tensor nanmean(const Tensor& a, const Axis& axis = {}, bool keepdims = false);
// sum(a * w) / sum(w); weights undefined = mean. 1-D weights along one axis, or a's shape.
Tensor average(const Tensor& a, const Axis& axis = {}, const Tensor& weights = {});
// Index (int64) of the first largest/smallest element: of the flattened array when axis is None.
Tensor argmax(const Tensor& a, const Axis& axis = {});
Tensor argmin(const Tensor& a, const Axis& axis = {});
// Running totals along one axis; None runs over the flattened array.
Tensor cumsum(const Tensor& a, const Axis& axis = {});
Tensor cumprod(const Tensor& a, const Axis& axis = {});
// The n-th discrete difference along axis (bool arrays: not_equal, as NumPy).
Tensor diff(const Tensor& a, int64_t n = 1, int64_t axis = -1);

}  // namespace weft::np
