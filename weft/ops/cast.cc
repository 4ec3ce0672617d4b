#include "weft/ops/cast.h"

#include <algorithm>

#include "weft/autodiff/tape.h"
#include "weft/core/op_scope.h"
#include "weft/ops/internal/loop.h"
#include "weft/ops/reduce.h"

namespace weft {
namespace {

template <typename D, typename S>
D convert(S s) {
  if constexpr (std::is_same_v<D, S>) {
    return s;
  } else {
    return static_cast<D>(static_cast<compute_t<D>>(static_cast<compute_t<S>>(s)));
  }
}

}  // namespace

void assign_into(const Tensor& dst, const Tensor& src) {
  OpScope op("assign", dst, src);
  if (op.spmd()) {
    op.run({SpmdRule::Kind::kAssign}, {dst, src}, [](const SpmdArgs& c) {
      // A view of the destination itself is copied first, as Variable::assign does.
      assign_into(c[0], c[1].storage() == c[0].storage() ? copy(c[1]) : c[1]);
      return Tensor();
    });
    return;
  }
  WEFT_CHECK(broadcast_shapes("assign", dst.shape(), src.shape()) == dst.shape(), InvalidArgument)
      << "assign: a value of shape " << shape_str(src.shape())
      << " does not broadcast to the destination shape " << shape_str(dst.shape());
  auto loop = ops::internal::make_loop<2>(dst.shape(), {&dst, &src});
  dispatch_dtype(dst.dtype(), [&]<typename D>() {
    dispatch_dtype(src.dtype(), [&]<typename S>() {
      ops::internal::run_parallel(loop, [](auto p, auto st, int64_t n) {
        D* d = reinterpret_cast<D*>(p[0]);
        const S* s = reinterpret_cast<const S*>(p[1]);
        if (st[0] == 1 && st[1] == 1) {
          for (int64_t i = 0; i < n; ++i) d[i] = convert<D>(s[i]);
        } else if (st[0] == 1 && st[1] == 0) {
          // A fill (zeros, full, a broadcast scalar): converted once, then stored in a loop
          // GCC vectorises; converting per element filled bfloat16 at about 5 GB/s.
          std::fill_n(d, n, convert<D>(s[0]));
        } else {
          for (int64_t i = 0; i < n; ++i) d[i * st[0]] = convert<D>(s[i * st[1]]);
        }
      });
    });
  });
}

Tensor cast(const Tensor& x, DType dtype) {
  WEFT_CHECK(x.defined(), InvalidArgument) << "cast: the input tensor is undefined";
  if (x.dtype() == dtype) return x;
  OpScope op("cast", x);
  if (op.spmd())
    return op.elementwise({x}, [dtype](const SpmdArgs& c) { return cast(c[0], dtype); });
  Tensor out = Tensor::empty(x.shape(), dtype);
  assign_into(out, x);
  if (autodiff::is_recording() && is_floating(dtype)) {
    DType from = x.dtype();
    autodiff::record("cast", {x}, {out}, [from](const autodiff::Grads& g) {
      return std::vector<Tensor>{is_floating(from) ? cast(g[0], from) : Tensor()};
    });
  }
  return out;
}

Tensor contiguous(const Tensor& x) { return x.is_contiguous() ? x : copy(x); }

Tensor copy(const Tensor& x) {
  WEFT_CHECK(x.defined(), InvalidArgument) << "copy: the input tensor is undefined";
  OpScope op("copy", x);
  if (op.spmd()) return op.elementwise({x}, [](const SpmdArgs& c) { return copy(c[0]); });
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  assign_into(out, x);
  if (autodiff::is_recording()) {
    autodiff::record("copy", {x}, {out},
                     [](const autodiff::Grads& g) { return std::vector<Tensor>{g[0]}; });
  }
  return out;
}

}  // namespace weft
