// Comparisons, logical ops and where. Comparisons and logical ops give bool tensors and no
// gradient; where passes the gradient to whichever branch was taken.
#include <utility>

#include "weft/autodiff/tape.h"
#include "weft/core/op_scope.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/internal/loop.h"
#include "weft/ops/reduce.h"

namespace weft {
namespace {

using ops::internal::make_loop;
using ops::internal::run_parallel;

// The three relations every comparison is made of (greater is less with the operands swapped,
// not_equal is equal negated): one kernel per relation and dtype, not one per op.
struct Equal {
  template <typename C>
  bool operator()(C x, C y) const {
    return x == y;
  }
};
struct Less {
  template <typename C>
  bool operator()(C x, C y) const {
    return x < y;
  }
};
struct LessEqual {
  template <typename C>
  bool operator()(C x, C y) const {
    return x <= y;
  }
};

// out[i] = f(u[i], v[i]) != negate, u and v the inputs in their promoted type (the first and
// second operand, or the second and first when `swap`); bool written as bytes of 0 or 1, so the
// fast paths vectorise (as in where below).
template <typename F>
Tensor compare(const char* op, const Tensor& a, const Tensor& b, F f, bool swap = false,
               bool negate = false) {
  OpScope scope(op, a, b);
  if (scope.spmd()) {
    return scope.elementwise(
        {a, b}, [&](const SpmdArgs& c) { return compare(op, c[0], c[1], f, swap, negate); });
  }
  WEFT_CHECK(a.defined() && b.defined(), InvalidArgument) << op << ": an input is undefined";
  Shape shape = broadcast_shapes(op, a.shape(), b.shape());
  DType t = promote_types(a.dtype(), b.dtype());
  Tensor x = cast(a, t), y = cast(b, t);
  if (swap) std::swap(x, y);
  Tensor out = Tensor::empty(shape, kBool);
  auto loop = make_loop<3>(shape, {&out, &x, &y});
  dispatch_dtype(t, [&]<typename T>() {
    using C = compute_t<T>;
    run_parallel(loop, [&](auto p, auto st, int64_t n) {
      auto* __restrict o = reinterpret_cast<unsigned char*>(p[0]);
      const T* __restrict u = reinterpret_cast<const T*>(p[1]);
      const T* __restrict v = reinterpret_cast<const T*>(p[2]);
      auto put = [&](int64_t i, C u_i, C v_i) { o[i] = f(u_i, v_i) != negate ? 1 : 0; };
      if (st[0] == 1 && st[1] == 1 && st[2] == 1) {  // vectorisable fast paths
        for (int64_t i = 0; i < n; ++i) put(i, static_cast<C>(u[i]), static_cast<C>(v[i]));
      } else if (st[0] == 1 && st[1] == 1 && st[2] == 0) {
        C scalar = static_cast<C>(v[0]);
        for (int64_t i = 0; i < n; ++i) put(i, static_cast<C>(u[i]), scalar);
      } else if (st[0] == 1 && st[1] == 0 && st[2] == 1) {  // a swapped scalar operand
        C scalar = static_cast<C>(u[0]);
        for (int64_t i = 0; i < n; ++i) put(i, scalar, static_cast<C>(v[i]));
      } else {
        for (int64_t i = 0; i < n; ++i) {
          o[i * st[0]] =
              f(static_cast<C>(u[i * st[1]]), static_cast<C>(v[i * st[2]])) != negate ? 1 : 0;
        }
      }
    });
  });
  return out;
}

// The logical ops on their operands as bools (nonzero: true), bytes of 0 or 1: one kernel each,
// not one per dtype.
template <typename F>
Tensor logical(const char* op, const Tensor& a, const Tensor& b, F f) {
  OpScope scope(op, a, b);
  if (scope.spmd()) {
    return scope.elementwise({a, b}, [&](const SpmdArgs& c) { return logical(op, c[0], c[1], f); });
  }
  WEFT_CHECK(a.defined() && b.defined(), InvalidArgument) << op << ": an input is undefined";
  Shape shape = broadcast_shapes(op, a.shape(), b.shape());
  Tensor x = cast(a, kBool), y = cast(b, kBool);
  Tensor out = Tensor::empty(shape, kBool);
  auto loop = make_loop<3>(shape, {&out, &x, &y});
  run_parallel(loop, [&](auto p, auto st, int64_t n) {
    auto* o = reinterpret_cast<unsigned char*>(p[0]);
    const auto* u = reinterpret_cast<const unsigned char*>(p[1]);
    const auto* v = reinterpret_cast<const unsigned char*>(p[2]);
    for (int64_t i = 0; i < n; ++i) o[i * st[0]] = f(u[i * st[1]], v[i * st[2]]);
  });
  return out;
}

Tensor scalar_for(Scalar s, const Tensor& t) {
  return Tensor::scalar(s, promote_with_scalar(t.dtype(), s.is_float));
}

}  // namespace

Tensor equal(const Tensor& a, const Tensor& b) { return compare("equal", a, b, Equal{}); }
Tensor not_equal(const Tensor& a, const Tensor& b) {
  return compare("not_equal", a, b, Equal{}, /*swap=*/false, /*negate=*/true);
}
Tensor less(const Tensor& a, const Tensor& b) { return compare("less", a, b, Less{}); }
Tensor less_equal(const Tensor& a, const Tensor& b) {
  return compare("less_equal", a, b, LessEqual{});
}
Tensor greater(const Tensor& a, const Tensor& b) {
  return compare("greater", a, b, Less{}, /*swap=*/true);
}
Tensor greater_equal(const Tensor& a, const Tensor& b) {
  return compare("greater_equal", a, b, LessEqual{}, /*swap=*/true);
}
Tensor equal(const Tensor& a, Scalar b) { return equal(a, scalar_for(b, a)); }
Tensor less(const Tensor& a, Scalar b) { return less(a, scalar_for(b, a)); }
Tensor greater(const Tensor& a, Scalar b) { return greater(a, scalar_for(b, a)); }

Tensor logical_and(const Tensor& a, const Tensor& b) {
  return logical("logical_and", a, b, [](unsigned char x, unsigned char y) { return x & y; });
}
Tensor logical_or(const Tensor& a, const Tensor& b) {
  return logical("logical_or", a, b, [](unsigned char x, unsigned char y) { return x | y; });
}
Tensor logical_xor(const Tensor& a, const Tensor& b) {
  return logical("logical_xor", a, b, [](unsigned char x, unsigned char y) { return x ^ y; });
}
Tensor logical_not(const Tensor& x) { return equal(x, zeros({}, x.dtype())); }

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  OpScope op("where", cond, a, b);
  if (op.spmd()) {
    return op.elementwise({cond, a, b}, [](const SpmdArgs& c) { return where(c[0], c[1], c[2]); });
  }
  WEFT_CHECK(cond.defined() && a.defined() && b.defined(), InvalidArgument)
      << "where: an input is undefined";
  Shape shape =
      broadcast_shapes("where", broadcast_shapes("where", cond.shape(), a.shape()), b.shape());
  DType t = promote_types(a.dtype(), b.dtype());
  Tensor c = cast(cond, kBool), x = cast(a, t), y = cast(b, t);
  Tensor out = Tensor::empty(shape, t);
  auto loop = make_loop<4>(shape, {&out, &c, &x, &y});
  dispatch_dtype(t, [&]<typename T>() {
    run_parallel(loop, [&](auto p, auto st, int64_t n) {
      // Distinct buffers (out is new), and the mask read as bytes (bool is 0 or 1): GCC turns the
      // fast paths below into vector selects only so.
      T* __restrict o = reinterpret_cast<T*>(p[0]);
      const unsigned char* __restrict k = reinterpret_cast<const unsigned char*>(p[1]);
      const T* __restrict u = reinterpret_cast<const T*>(p[2]);
      const T* __restrict v = reinterpret_cast<const T*>(p[3]);
      if (st[0] == 1 && st[1] == 1 && st[2] == 1 && st[3] == 1) {  // vectorisable fast paths
        for (int64_t i = 0; i < n; ++i) {
          T a = u[i], b = v[i];  // both loaded: a select, not a branch on the mask
          o[i] = k[i] ? a : b;
        }
      } else if (st[0] == 1 && st[1] == 1 && st[2] == 1 && st[3] == 0) {
        T scalar = v[0];
        for (int64_t i = 0; i < n; ++i) {
          T a = u[i];
          o[i] = k[i] ? a : scalar;
        }
      } else if (st[0] == 1 && st[1] == 1 && st[2] == 0 && st[3] == 1) {
        T scalar = u[0];
        for (int64_t i = 0; i < n; ++i) {
          T b = v[i];
          o[i] = k[i] ? scalar : b;
        }
      } else {
        for (int64_t i = 0; i < n; ++i) o[i * st[0]] = k[i * st[1]] ? u[i * st[2]] : v[i * st[3]];
      }
    });
  });
  if (autodiff::is_recording() && is_floating(t)) {
    autodiff::record("where", {cond, a, b}, {out}, [c, a, b](const autodiff::Grads& g) {
      Tensor zero = zeros({}, g[0].dtype());
      auto back = [](const Tensor& grad, const Tensor& in) {
        return is_floating(in.dtype()) ? cast(sum_to(grad, in.shape()), in.dtype()) : Tensor();
      };
      return std::vector<Tensor>{Tensor(), back(where(c, g[0], zero), a),
                                 back(where(c, zero, g[0]), b)};
    });
  }
  return out;
}

}  // namespace weft
