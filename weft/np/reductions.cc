#include "weft/np/reductions.h"

#include <algorithm>

#include "weft/np/internal/check.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/cumulative.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/math.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"

namespace weft::np {
namespace {

using internal::check;

// The number of elements each output of a reduction over `axis` combines.
int64_t reduced_count(const char* op, const Tensor& a, const Axis& axis) {
  if (axis.is_none()) return a.numel();
  int64_t n = 1;
  for (int64_t ax : axis.axes()) n *= a.shape()[normalize_axis(op, ax, a.rank())];
  return n;
}

// Elements that are NaN replaced by `fill` (integers have none).
Tensor nan_to(const Tensor& a, double fill) {
  if (!is_floating(a.dtype())) return a;
  return weft::where(weft::isnan(a), weft::full({}, fill, a.dtype()), a);
}

Tensor flat_or(const Tensor& a, const Axis& axis, int64_t* ax, const char* op) {
  if (axis.is_none()) {
    *ax = 0;
    return weft::flatten(a);
  }
  *ax = axis.single(op);
  return a;
}

}  // namespace

Tensor sum(const Tensor& a, const Axis& axis, bool keepdims) {
  check("sum", a);
  return weft::sum(a, axis.axes(), keepdims);
}
Tensor prod(const Tensor& a, const Axis& axis, bool keepdims) {
  check("prod", a);
  return weft::prod(a, axis.axes(), keepdims);
}
Tensor mean(const Tensor& a, const Axis& axis, bool keepdims) {
  check("mean", a);
  return weft::mean(a, axis.axes(), keepdims);
}

Tensor var(const Tensor& a, const Axis& axis, bool keepdims, int64_t ddof) {
  check("var", a);
  Tensor x = is_floating(a.dtype()) ? a : cast(a, kFloat64);
  Tensor centered = sub(x, weft::mean(x, axis.axes(), true));
  // As NumPy: the divisor is max(n - ddof, 0) (0 gives inf or NaN).
  double n = static_cast<double>(std::max<int64_t>(reduced_count("var", x, axis) - ddof, 0));
  return div(weft::sum(weft::square(centered), axis.axes(), keepdims), n);
}
Tensor std(const Tensor& a, const Axis& axis, bool keepdims, int64_t ddof) {
  return weft::sqrt(var(a, axis, keepdims, ddof));
}

Tensor max(const Tensor& a, const Axis& axis, bool keepdims) {
  check("max", a);
  return weft::max(a, axis.axes(), keepdims);
}
Tensor min(const Tensor& a, const Axis& axis, bool keepdims) {
  check("min", a);
  return weft::min(a, axis.axes(), keepdims);
}
Tensor amax(const Tensor& a, const Axis& axis, bool keepdims) { return max(a, axis, keepdims); }
Tensor amin(const Tensor& a, const Axis& axis, bool keepdims) { return min(a, axis, keepdims); }
Tensor ptp(const Tensor& a, const Axis& axis, bool keepdims) {
  return sub(max(a, axis, keepdims), min(a, axis, keepdims));
}

Tensor all(const Tensor& a, const Axis& axis, bool keepdims) {
  check("all", a);
  return weft::all(a, axis.axes(), keepdims);
}
Tensor any(const Tensor& a, const Axis& axis, bool keepdims) {
  check("any", a);
  return weft::any(a, axis.axes(), keepdims);
}
Tensor count_nonzero(const Tensor& a, const Axis& axis, bool keepdims) {
  check("count_nonzero", a);
  return weft::sum(weft::not_equal(a, weft::zeros({}, a.dtype())), axis.axes(), keepdims);
}

Tensor nansum(const Tensor& a, const Axis& axis, bool keepdims) {
  check("nansum", a);
  return weft::sum(nan_to(a, 0), axis.axes(), keepdims);
}
Tensor nanprod(const Tensor& a, const Axis& axis, bool keepdims) {
  check("nanprod", a);
  return weft::prod(nan_to(a, 1), axis.axes(), keepdims);
}
Tensor nanmean(const Tensor& a, const Axis& axis, bool keepdims) {
  check("nanmean", a);
  if (!is_floating(a.dtype())) return mean(a, axis, keepdims);
  Tensor count = weft::sum(weft::logical_not(weft::isnan(a)), axis.axes(), keepdims);
  return div(nansum(a, axis, keepdims), cast(count, a.dtype()));
}

Tensor average(const Tensor& a, const Axis& axis, const Tensor& weights) {
  check("average", a);
  if (!weights.defined()) return mean(a, axis);
  Tensor w = weights;
  if (w.shape() != a.shape()) {
    WEFT_CHECK(w.rank() == 1 && !axis.is_none() && axis.axes().size() == 1, InvalidArgument)
        << "np::average: weights of shape " << shape_str(w.shape()) << " differ from a's shape "
        << shape_str(a.shape()) << "; they must then be 1-D along one given axis";
    int64_t ax = normalize_axis("np::average", axis.axes()[0], a.rank());
    WEFT_CHECK(w.dim(0) == a.dim(ax), InvalidArgument)
        << "np::average: " << w.dim(0) << " weights for an axis of length " << a.dim(ax);
    Shape shape(a.rank(), 1);
    shape[ax] = w.dim(0);
    w = weft::reshape(w, shape);
  }
  Tensor x = is_floating(a.dtype()) ? a : cast(a, kFloat64);
  Tensor weighted = weft::mul(x, w);
  Tensor total = weft::sum(weft::broadcast_to(w, weighted.shape()), axis.axes());
  return div(weft::sum(weighted, axis.axes()), total);
}

Tensor argmax(const Tensor& a, const Axis& axis) {
  check("argmax", a);
  int64_t ax;
  Tensor x = flat_or(a, axis, &ax, "argmax");
  return weft::argmax(x, ax);
}
Tensor argmin(const Tensor& a, const Axis& axis) {
  check("argmin", a);
  int64_t ax;
  Tensor x = flat_or(a, axis, &ax, "argmin");
  return weft::argmin(x, ax);
}

Tensor cumsum(const Tensor& a, const Axis& axis) {
  check("cumsum", a);
  int64_t ax;
  Tensor x = flat_or(a, axis, &ax, "cumsum");
  return weft::cumsum(x, ax);
}
Tensor cumprod(const Tensor& a, const Axis& axis) {
  check("cumprod", a);
  int64_t ax;
  Tensor x = flat_or(a, axis, &ax, "cumprod");
  return weft::cumprod(x, ax);
}

Tensor diff(const Tensor& a, int64_t n, int64_t axis) {
  check("diff", a);
  WEFT_CHECK(n >= 0, InvalidArgument) << "np::diff: order n must be non-negative, got " << n;
  WEFT_CHECK(a.rank() >= 1, InvalidArgument) << "np::diff: needs at least one dimension";
  int64_t ax = normalize_axis("np::diff", axis, a.rank());
  Tensor out = a;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<Slice> head(ax + 1), tail(ax + 1);
    head[ax] = Slice{{}, -1, 1};
    tail[ax] = Slice{1, {}, 1};
    Tensor later = weft::slice(out, tail), earlier = weft::slice(out, head);
    out = out.dtype() == kBool ? weft::not_equal(later, earlier) : sub(later, earlier);
  }
  return out;
}

}  // namespace weft::np
