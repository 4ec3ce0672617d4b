#include "weft/ops/scatter.h"

#include <unordered_set>
#include <vector>

#include "weft/autodiff/tape.h"
#include "weft/core/op_scope.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"

namespace weft {
namespace {

// The flat positions, checked against x's size; updates cast to x's dtype and broadcast.
struct Scatter {
  std::vector<int64_t> positions;
  Tensor values;
};

Scatter prepare(const char* op, const Tensor& x, const Tensor& indices, const Tensor& updates) {
  WEFT_CHECK(x.defined() && indices.defined() && updates.defined(), InvalidArgument)
      << op << ": an input is undefined";
  WEFT_CHECK(indices.dtype() == kInt32 || indices.dtype() == kInt64, InvalidArgument)
      << op << ": indices must be int32 or int64, got " << indices.dtype();
  Scatter s{indices.to_vector<int64_t>(),
            contiguous(broadcast_to(cast(updates, x.dtype()), indices.shape()))};
  for (size_t i = 0; i < s.positions.size(); ++i) {
    WEFT_CHECK(s.positions[i] >= 0 && s.positions[i] < x.numel(), OutOfRange)
        << op << ": position " << s.positions[i] << " (index " << i
        << ") is out of range for a tensor of " << x.numel() << " elements, shape "
        << shape_str(x.shape());
  }
  return s;
}

Tensor scatter(const Tensor& x, const Scatter& s, bool add) {
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  assign_into(out, x);
  dispatch_dtype(x.dtype(), [&]<typename T>() {
    T* o = out.data<T>();
    const T* v = s.values.data<T>();
    for (size_t i = 0; i < s.positions.size(); ++i) {
      int64_t p = s.positions[i];
      if (add) {
        o[p] = static_cast<T>(static_cast<compute_t<T>>(o[p]) + static_cast<compute_t<T>>(v[i]));
      } else {
        o[p] = v[i];
      }
    }
  });
  return out;
}

// The gradient reaching `updates`: g at the scattered positions, summed back to its shape. For an
// update only the last write to a position counts (the earlier ones were overwritten).
Tensor updates_grad(const Tensor& g, const Tensor& indices, const Tensor& updates,
                    bool last_write_only) {
  Tensor picked = reshape(gather(flatten(g), flatten(cast(indices, kInt64)), 0), indices.shape());
  if (last_write_only) {
    std::vector<int64_t> positions = indices.to_vector<int64_t>();
    std::vector<uint8_t> last(positions.size(), 0);
    std::unordered_set<int64_t> seen;
    for (size_t i = positions.size(); i-- > 0;) last[i] = seen.insert(positions[i]).second;
    picked = mul(picked, cast(Tensor::from_vector(last, indices.shape()), picked.dtype()));
  }
  return cast(sum_to(picked, updates.shape()), updates.dtype());
}

}  // namespace

Tensor scatter_flat_update(const Tensor& x, const Tensor& indices, const Tensor& updates) {
  OpScope op("scatter_flat_update", x, indices, updates);
  if (op.spmd()) {  // flat positions: on replicated operands only
    return op.run(SpmdRule::replicated(), {x, indices, updates},
                  [](const SpmdArgs& c) { return scatter_flat_update(c[0], c[1], c[2]); });
  }
  Scatter s = prepare("scatter_flat_update", x, indices, updates);
  Tensor out = scatter(x, s, false);
  if (autodiff::is_recording() && is_floating(x.dtype())) {
    autodiff::record("scatter_flat_update", {x, indices, updates}, {out},
                     [indices, updates](const autodiff::Grads& g) {
                       // Overwritten elements of x get no gradient.
                       Tensor dx = scatter_flat_update(g[0], indices, zeros({}, g[0].dtype()));
                       Tensor du = is_floating(updates.dtype())
                                       ? updates_grad(g[0], indices, updates, true)
                                       : Tensor();
                       return std::vector<Tensor>{dx, Tensor(), du};
                     });
  }
  return out;
}

Tensor scatter_flat_add(const Tensor& x, const Tensor& indices, const Tensor& updates) {
  OpScope op("scatter_flat_add", x, indices, updates);
  if (op.spmd()) {  // flat positions: on replicated operands only
    return op.run(SpmdRule::replicated(), {x, indices, updates},
                  [](const SpmdArgs& c) { return scatter_flat_add(c[0], c[1], c[2]); });
  }
  Scatter s = prepare("scatter_flat_add", x, indices, updates);
  Tensor out = scatter(x, s, true);
  if (autodiff::is_recording() && is_floating(x.dtype())) {
    autodiff::record("scatter_flat_add", {x, indices, updates}, {out},
                     [indices, updates](const autodiff::Grads& g) {
                       Tensor du = is_floating(updates.dtype())
                                       ? updates_grad(g[0], indices, updates, false)
                                       : Tensor();
                       return std::vector<Tensor>{g[0], Tensor(), du};
                     });
  }
  return out;
}

}  // namespace weft
