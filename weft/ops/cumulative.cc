// Scans along one axis: the axis is moved last and made contiguous, and each row is scanned on
// its own (rows in parallel; each row's order is fixed, so results do not depend on threads).
#include "weft/ops/cumulative.h"

#include <numeric>
#include <type_traits>
#include <vector>

#include "weft/autodiff/tape.h"
#include "weft/core/op_scope.h"
#include "weft/core/parallel.h"
#include "weft/ops/cast.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/internal/axis_perms.h"
#include "weft/ops/shape_ops.h"

namespace weft {
namespace {

DType scan_dtype(DType t) { return is_floating(t) ? t : kInt64; }

// What a scan of T accumulates in: integers as unsigned (an overflow wraps, as NumPy's, instead
// of being undefined), floats as themselves.
template <typename T, bool = std::is_integral_v<T>>
struct Accumulator {
  using type = T;
};
template <typename T>
struct Accumulator<T, true> {
  using type = std::make_unsigned_t<T>;
};
template <typename T>
using accumulator_t = typename Accumulator<T>::type;

using ops::internal::last_axis_perms;

// Runs `row(inputs, offset, out, n)` over every row along `axis` of the inputs cast to `dtype`
// (int64, float32 or float64); returns the result in x's layout.
template <typename Row>
Tensor scan_rows(const char* op, const std::vector<Tensor>& inputs, int64_t axis, DType dtype,
                 Row row) {
  const Tensor& x = inputs[0];
  int64_t a = normalize_axis(op, axis, x.rank());
  auto [to_last, back] = last_axis_perms(a, x.rank());
  std::vector<Tensor> moved;
  for (const Tensor& t : inputs) moved.push_back(contiguous(transpose(cast(t, dtype), to_last)));
  Tensor out = Tensor::empty(moved[0].shape(), dtype);
  int64_t n = x.rank() == 0 ? 1 : x.dim(a);
  int64_t rows = n == 0 ? 0 : x.numel() / n;
  auto run = [&]<typename T>() {
    std::vector<const T*> in;
    for (const Tensor& m : moved) in.push_back(m.data<T>());
    T* o = out.data<T>();
    parallel_for(rows, std::max<int64_t>(1, 32768 / std::max<int64_t>(n, 1)),
                 [&](int64_t begin, int64_t end) {
                   for (int64_t r = begin; r < end; ++r) row(in, r * n, o + r * n, n);
                 });
  };
  if (dtype == kInt64) {
    run.template operator()<int64_t>();
  } else if (dtype == kFloat64) {
    run.template operator()<double>();
  } else {
    WEFT_CHECK(dtype == kFloat32, Internal) << op << ": scans run in int64, float32 or float64";
    run.template operator()<float>();
  }
  return x.rank() == 0 ? reshape(out, {}) : transpose(out, back);
}

}  // namespace

Tensor cumsum(const Tensor& x, int64_t axis, bool exclusive, bool reverse) {
  WEFT_CHECK(x.defined(), InvalidArgument) << "cumsum: the input is undefined";
  OpScope op("cumsum", x);
  if (op.spmd()) {  // that axis whole on each device
    const int64_t a = normalize_axis("cumsum", axis, x.rank());
    return op.run(SpmdRule{SpmdRule::Kind::kAlongAxis, false, false, {a}}, {x},
                  [=](const SpmdArgs& c) { return cumsum(c[0], a, exclusive, reverse); });
  }
  DType dtype = scan_dtype(x.dtype());
  DType acc = is_half(dtype) ? kFloat32 : dtype;
  Tensor out =
      scan_rows("cumsum", {x}, axis, acc, [&](const auto& in, int64_t off, auto* o, int64_t n) {
        using T = std::remove_pointer_t<decltype(o)>;
        using A = accumulator_t<T>;
        const T* v = in[0] + off;
        A total = 0;
        for (int64_t j = 0; j < n; ++j) {
          int64_t i = reverse ? n - 1 - j : j;
          if (exclusive) {
            o[i] = static_cast<T>(total);
            total += static_cast<A>(v[i]);
          } else {
            total += static_cast<A>(v[i]);
            o[i] = static_cast<T>(total);
          }
        }
      });
  out = cast(out, dtype);
  if (autodiff::is_recording() && is_floating(x.dtype())) {
    autodiff::record("cumsum", {x}, {out}, [axis, exclusive, reverse, x](const autodiff::Grads& g) {
      return std::vector<Tensor>{cast(cumsum(g[0], axis, exclusive, !reverse), x.dtype())};
    });
  }
  return out;
}

namespace {

// d/dx_i of sum_j g_j * prod_{k<=j} x_k = (prod_{k<i} x_k) * S_i with S_i = g_i + x_{i+1} S_{i+1}:
// no division, so zeros in x are handled exactly.
Tensor cumprod_grad(const Tensor& x, const Tensor& g, int64_t axis) {
  DType acc = is_half(x.dtype()) ? kFloat32 : x.dtype();
  Tensor out =
      scan_rows("cumprod", {x, g}, axis, acc, [](const auto& in, int64_t off, auto* o, int64_t n) {
        using T = std::remove_pointer_t<decltype(o)>;
        const T* v = in[0] + off;
        const T* gv = in[1] + off;
        T s = 0;
        for (int64_t i = n - 1; i >= 0; --i) {
          s = gv[i] + (i + 1 < n ? v[i + 1] * s : T(0));
          o[i] = s;
        }
        T prefix = 1;
        for (int64_t i = 0; i < n; ++i) {
          o[i] *= prefix;
          prefix *= v[i];
        }
      });
  return cast(out, x.dtype());
}

}  // namespace

Tensor cumprod(const Tensor& x, int64_t axis) {
  WEFT_CHECK(x.defined(), InvalidArgument) << "cumprod: the input is undefined";
  OpScope op("cumprod", x);
  if (op.spmd()) {  // that axis whole on each device
    const int64_t a = normalize_axis("cumprod", axis, x.rank());
    return op.run(SpmdRule{SpmdRule::Kind::kAlongAxis, false, false, {a}}, {x},
                  [=](const SpmdArgs& c) { return cumprod(c[0], a); });
  }
  DType dtype = scan_dtype(x.dtype());
  DType acc = is_half(dtype) ? kFloat32 : dtype;
  Tensor out =
      scan_rows("cumprod", {x}, axis, acc, [](const auto& in, int64_t off, auto* o, int64_t n) {
        using T = std::remove_pointer_t<decltype(o)>;
        using A = accumulator_t<T>;
        const T* v = in[0] + off;
        A total = 1;
        for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(total *= static_cast<A>(v[i]));
      });
  out = cast(out, dtype);
  if (autodiff::is_recording() && is_floating(x.dtype())) {
    autodiff::record("cumprod", {x}, {out}, [x, axis](const autodiff::Grads& g) {
      return std::vector<Tensor>{cumprod_grad(x, g[0], axis)};
    });
  }
  return out;
}

}  // namespace weft
