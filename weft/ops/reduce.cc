#include "weft/ops/reduce.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "weft/autodiff/tape.h"
#include "weft/core/isa.h"
#include "weft/core/op_scope.h"
#include "weft/core/parallel.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/shape_ops.h"

namespace weft {
namespace {

// Elements per block of a long contiguous reduction. Fixed, so that the partial sums and the
// order they are combined in never depend on the thread count.
constexpr int64_t kBlock = 16384;
constexpr int kLanes = 16;
// Pairwise combination (NumPy's pairwise summation): runs of kPairwiseBase elements are combined
// in kLanes accumulators, and their results, like the blocks' results, in a balanced tree, so
// that rounding error grows with the log of the length rather than the length (a float32 mean of
// 131072 values near 1000 came 1.8 ulp off with one accumulator per lane across the block).
constexpr int64_t kPairwiseBase = 128;

// Combines values pushed one at a time in a balanced binary tree by position (the pairwise
// order, fixed by the count alone): at most 64 partial results are held.
template <typename C, typename Op>
class PairwiseCombiner {
 public:
  PairwiseCombiner(C init, Op op) : init_(init), op_(op) {}
  // The k-th value pushed is merged once for each trailing 1 bit of k: with every subtree that
  // is complete below it.
  void push(C v) {
    for (uint64_t k = count_++; k & 1; k >>= 1) v = op_(stack_[--size_], v);
    stack_[size_++] = v;
  }
  C result() const {
    if (size_ == 0) return init_;
    C acc = stack_[size_ - 1];
    for (int i = size_ - 1; i-- > 0;) acc = op_(stack_[i], acc);
    return acc;
  }

 private:
  C init_;
  Op op_;
  C stack_[64];
  int size_ = 0;
  uint64_t count_ = 0;
};

std::vector<bool> reduced_mask(const char* op, const Tensor& x, const Axes& axes) {
  std::vector<bool> mask(x.rank(), axes.empty());
  for (int64_t a : axes) {
    int64_t axis = normalize_axis(op, a, x.rank());
    WEFT_CHECK(!mask[axis], InvalidArgument)
        << op << ": axis " << a << " appears more than once in the axis list";
    mask[axis] = true;
  }
  return mask;
}

Shape reduced_shape(const Tensor& x, const std::vector<bool>& mask, bool keepdims) {
  Shape out;
  for (int64_t i = 0; i < x.rank(); ++i) {
    if (!mask[i]) {
      out.push_back(x.shape()[i]);
    } else if (keepdims) {
      out.push_back(1);
    }
  }
  return out;
}

// Dimensions (size, stride) with unit dimensions dropped and contiguous neighbours merged.
struct Dims {
  std::vector<int64_t> size, stride;
  void push(int64_t n, int64_t s) {
    if (n == 1) return;
    if (!size.empty() && stride.back() == s * n) {
      size.back() *= n;
      stride.back() = s;
    } else {
      size.push_back(n);
      stride.push_back(s);
    }
  }
  int64_t count() const {
    int64_t n = 1;
    for (int64_t d : size) n *= d;
    return n;
  }
  // Offset of the i-th element in C order.
  int64_t offset(int64_t i) const {
    int64_t off = 0;
    for (size_t d = size.size(); d-- > 0;) {
      off += (i % size[d]) * stride[d];
      i /= size[d];
    }
    return off;
  }
};

// x[0], x[stride], ... x[(n - 1) * stride] combined: each run of kPairwiseBase in kLanes
// accumulators folded in a tree, the runs' results pairwise.
template <typename C, typename T, typename Op>
WEFT_HOT_LOOP C reduce_run(const T* x, int64_t n, int64_t stride, C init, Op op) {
  if (n <= 0) return init;
  PairwiseCombiner<C, Op> runs(init, op);
  for (int64_t start = 0; start < n; start += kPairwiseBase) {
    int64_t len = std::min(kPairwiseBase, n - start);
    const T* p = x + start * stride;
    C acc[kLanes];
    std::fill(acc, acc + kLanes, init);
    int64_t i = 0;
    if (stride == 1) {
      for (; i + kLanes <= len; i += kLanes) {
        for (int k = 0; k < kLanes; ++k) acc[k] = op(acc[k], static_cast<C>(p[i + k]));
      }
    }
    for (; i < len; ++i) acc[i % kLanes] = op(acc[i % kLanes], static_cast<C>(p[i * stride]));
    for (int w = kLanes / 2; w > 0; w /= 2) {
      for (int k = 0; k < w; ++k) acc[k] = op(acc[k], acc[k + w]);
    }
    runs.push(acc[0]);
  }
  return runs.result();
}

// acc[k] = op(acc[k], row[k]) for k < width: one row of reduce_rows.
template <typename C, typename T, typename Op>
WEFT_HOT_LOOP void combine_row(C* acc, const T* row, int64_t width, Op op) {
  for (int64_t k = 0; k < width; ++k) acc[k] = op(acc[k], static_cast<C>(row[k]));
}

// The kept elements are one contiguous run (a per-channel sum over NHWC, a bias gradient): rows
// of `width` elements are combined element-wise, so the inner loop is a vector loop. Rows are cut
// into fixed blocks (by shape alone), each reduced in row order, then combined in block order.
template <typename OutT, typename T, typename C, typename Op>
void reduce_rows(const T* base, const Dims& red, int64_t width, OutT* dst, C init, Op op) {
  int64_t rows = red.count();
  int64_t rows_per_block = std::max<int64_t>(1, kBlock / width);
  int64_t blocks =
      std::max<int64_t>(1, (rows + rows_per_block - 1) / rows_per_block);  // 0 rows: init
  auto partial = std::make_unique<C[]>(blocks * width);  // C may be bool: no vector<C>
  std::fill(partial.get(), partial.get() + blocks * width, init);
  parallel_for(blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      C* acc = partial.get() + b * width;
      for (int64_t r = b * rows_per_block; r < std::min(rows, (b + 1) * rows_per_block); ++r) {
        combine_row(acc, base + red.offset(r), width, op);
      }
    }
  });
  parallel_for(width, 1024, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      C acc = partial[k];
      for (int64_t b = 1; b < blocks; ++b) acc = op(acc, partial[b * width + k]);
      dst[k] = static_cast<OutT>(acc);
    }
  });
}

// out[o] = op-combination of every reduced element of output o, in a fixed order: the innermost
// reduced run is cut into kBlock-sized blocks reduced with kLanes accumulators, and block results
// are combined in index order.
template <typename OutT, typename T, typename C, typename Op>
void reduce_kernel(const Tensor& x, const std::vector<bool>& mask, Tensor& out, C init, Op op) {
  Dims kept, red;
  for (int64_t i = 0; i < x.rank(); ++i) {
    (mask[i] ? red : kept).push(x.shape()[i], x.strides()[i]);
  }
  if (kept.size.size() == 1 && kept.stride[0] == 1 && !red.size.empty() && kept.size[0] > 1) {
    reduce_rows<OutT>(x.data<T>(), red, kept.size[0], out.data<OutT>(), init, op);
    return;
  }
  int64_t outputs = kept.count();
  int64_t run = red.size.empty() ? 1 : red.size.back();
  int64_t run_stride = red.size.empty() ? 0 : red.stride.back();
  Dims outer = red;  // reduced dims other than the innermost run
  if (!outer.size.empty()) {
    outer.size.pop_back();
    outer.stride.pop_back();
  }
  int64_t runs = outer.count();
  int64_t blocks = (run + kBlock - 1) / kBlock;
  const T* base = x.data<T>();
  OutT* dst = out.data<OutT>();
  std::vector<C> partial(outputs * runs * blocks);
  // Threads only pay off past ~16K elements of work.
  int64_t grain = std::max<int64_t>(1, kBlock / std::max<int64_t>(1, std::min(kBlock, run)));
  parallel_for(outputs * runs * blocks, grain, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      int64_t b = item % blocks;
      int64_t r = (item / blocks) % runs;
      int64_t o = item / (blocks * runs);
      const T* p = base + kept.offset(o) + outer.offset(r) + b * kBlock * run_stride;
      partial[item] = reduce_run<C>(p, std::min(kBlock, run - b * kBlock), run_stride, init, op);
    }
  });
  parallel_for(outputs, 256, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      PairwiseCombiner<C, Op> all(init, op);
      for (int64_t k = 0; k < runs * blocks; ++k) all.push(partial[o * runs * blocks + k]);
      dst[o] = static_cast<OutT>(all.result());
    }
  });
}

DType accumulate_dtype(DType t) { return is_floating(t) ? t : kInt64; }

enum class Kind { kSum, kProd, kMax, kMin };

Tensor reduce(const char* op, Kind kind, const Tensor& x, const std::vector<bool>& mask,
              bool keepdims) {
  Shape out_shape = reduced_shape(x, mask, keepdims);
  bool sum_like = kind == Kind::kSum || kind == Kind::kProd;
  DType out_dtype = sum_like ? accumulate_dtype(x.dtype()) : x.dtype();
  if (!sum_like) {
    for (int64_t i = 0; i < x.rank(); ++i) {
      WEFT_CHECK(!mask[i] || x.shape()[i] > 0, InvalidArgument)
          << op << ": cannot reduce over axis " << i << " of size 0 (shape " << shape_str(x.shape())
          << "): the reduction has no identity";
    }
  }
  Tensor in = sum_like ? cast(x, out_dtype) : x;
  Tensor out = Tensor::empty(out_shape, out_dtype);
  dispatch_dtype(out_dtype, [&]<typename T>() {
    using C = compute_t<T>;
    constexpr bool kFloat = std::is_floating_point_v<C>;
    const C lowest =
        kFloat ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::lowest();
    const C highest = kFloat ? std::numeric_limits<C>::infinity() : std::numeric_limits<C>::max();
    switch (kind) {
      case Kind::kSum:
        reduce_kernel<T, T>(in, mask, out, C(0), [](C a, C b) { return a + b; });
        break;
      case Kind::kProd:
        reduce_kernel<T, T>(in, mask, out, C(1), [](C a, C b) { return a * b; });
        break;
      case Kind::kMax:  // NaN wins, as in NumPy
        reduce_kernel<T, T>(in, mask, out, lowest,
                            [](C a, C b) { return (a != a || a >= b) ? a : b; });
        break;
      case Kind::kMin:
        reduce_kernel<T, T>(in, mask, out, highest,
                            [](C a, C b) { return (a != a || a <= b) ? a : b; });
        break;
    }
  });
  return out;
}

Axes mask_axes(const std::vector<bool>& mask) {
  Axes axes;
  for (size_t i = 0; i < mask.size(); ++i) {
    if (mask[i]) axes.push_back(static_cast<int64_t>(i));
  }
  return axes;
}

// The gradient g of a reduction output, viewed with x's shape.
Tensor expand_to(const Tensor& g, const Tensor& x, const std::vector<bool>& mask) {
  return broadcast_to(reshape(g, reduced_shape(x, mask, true)), x.shape());
}

// The SPMD rule of a reduction over the axes `mask` marks.
SpmdRule reduce_rule(const std::vector<bool>& mask, bool keepdims, SpmdRule::Reduce reduce) {
  SpmdRule rule{SpmdRule::Kind::kReduce};
  for (size_t a = 0; a < mask.size(); ++a) {
    if (mask[a]) rule.axes.push_back(static_cast<int64_t>(a));
  }
  rule.keepdims = keepdims;
  rule.reduce = reduce;
  return rule;
}

Tensor count_reduced(const Tensor& x, const std::vector<bool>& mask) {
  int64_t n = 1;
  for (int64_t i = 0; i < x.rank(); ++i) n *= mask[i] ? x.shape()[i] : 1;
  return Tensor::scalar(static_cast<double>(n), is_floating(x.dtype()) ? x.dtype() : kFloat64);
}

Tensor max_or_min(const char* op, Kind kind, const Tensor& x, const Axes& axes, bool keepdims) {
  WEFT_CHECK(x.defined(), InvalidArgument) << op << ": the input is undefined";
  auto mask = reduced_mask(op, x, axes);
  OpScope scope(op, x);
  if (scope.spmd()) {
    return scope.run(
        reduce_rule(mask, keepdims,
                    kind == Kind::kMax ? SpmdRule::Reduce::kMax : SpmdRule::Reduce::kMin),
        {x}, [&](const SpmdArgs& c) { return max_or_min(op, kind, c[0], axes, keepdims); });
  }
  Tensor out = reduce(op, kind, x, mask, keepdims);
  if (autodiff::is_recording() && is_floating(x.dtype())) {
    autodiff::record(op, {x}, {out}, [x, out, mask](const autodiff::Grads& g) {
      // Ties share the gradient equally, as in TensorFlow.
      Tensor hit = cast(equal(x, expand_to(out, x, mask)), x.dtype());
      Tensor ties = broadcast_to(sum(hit, mask_axes(mask), true), x.shape());
      return std::vector<Tensor>{div(mul(hit, expand_to(g[0], x, mask)), ties)};
    });
  }
  return out;
}

// For each element, the product of the other elements reduced with it: prod / x where x != 0,
// computed without dividing by zero (one zero in a slice leaves the rest's product at the zero).
Tensor prod_of_others(const Tensor& x, const std::vector<bool>& mask) {
  Axes axes = mask_axes(mask);
  Tensor is_zero = equal(x, 0);
  Tensor nonzero_prod = broadcast_to(prod(where(is_zero, ones_like(x), x), axes, true), x.shape());
  Tensor zeros_in_slice = broadcast_to(sum(cast(is_zero, kInt64), axes, true), x.shape());
  Tensor safe_x = where(is_zero, ones_like(x), x);
  Tensor none_zero = div(nonzero_prod, safe_x);
  Tensor one_zero = where(is_zero, nonzero_prod, zeros_like(x));
  return where(equal(zeros_in_slice, 0), none_zero,
               where(equal(zeros_in_slice, 1), one_zero, zeros_like(x)));
}

Tensor arg_reduce(const char* op, const Tensor& x, int64_t axis, bool largest) {
  WEFT_CHECK(x.defined(), InvalidArgument) << op << ": the input is undefined";
  axis = normalize_axis(op, axis, x.rank());
  OpScope scope(op, x);
  if (scope.spmd()) {
    SpmdRule rule{SpmdRule::Kind::kAlongAxis};
    rule.axes = {axis};
    rule.drop_axes = true;
    return scope.run(rule, {x},
                     [&](const SpmdArgs& c) { return arg_reduce(op, c[0], axis, largest); });
  }
  int64_t n = x.shape()[axis];
  WEFT_CHECK(n > 0, InvalidArgument)
      << op << ": axis " << axis << " of shape " << shape_str(x.shape()) << " is empty";
  int64_t stride = x.strides()[axis];
  Dims kept;
  Shape out_shape;
  for (int64_t i = 0; i < x.rank(); ++i) {
    if (i == axis) continue;
    kept.push(x.shape()[i], x.strides()[i]);
    out_shape.push_back(x.shape()[i]);
  }
  Tensor out = Tensor::empty(out_shape, kInt64);
  int64_t* dst = out.data<int64_t>();
  dispatch_dtype(x.dtype(), [&]<typename T>() {
    using C = compute_t<T>;
    const T* base = x.data<T>();
    parallel_for(kept.count(), 64, [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) {
        const T* p = base + kept.offset(o);
        int64_t best = 0;
        C best_v = static_cast<C>(p[0]);
        for (int64_t i = 1; i < n && best_v == best_v; ++i) {  // the first NaN wins
          C v = static_cast<C>(p[i * stride]);
          if (v != v || (largest ? v > best_v : v < best_v)) {
            best = i;
            best_v = v;
          }
        }
        dst[o] = best;
      }
    });
  });
  return out;
}

}  // namespace

Tensor sum(const Tensor& x, const Axes& axes, bool keepdims) {
  WEFT_CHECK(x.defined(), InvalidArgument) << "sum: the input is undefined";
  auto mask = reduced_mask("sum", x, axes);
  OpScope op("sum", x);
  if (op.spmd()) {
    return op.run(reduce_rule(mask, keepdims, SpmdRule::Reduce::kSum), {x},
                  [&](const SpmdArgs& c) { return sum(c[0], axes, keepdims); });
  }
  Tensor out = reduce("sum", Kind::kSum, x, mask, keepdims);
  if (autodiff::is_recording() && is_floating(x.dtype())) {
    autodiff::record("sum", {x}, {out}, [x, mask](const autodiff::Grads& g) {
      return std::vector<Tensor>{expand_to(g[0], x, mask)};
    });
  }
  return out;
}

Tensor mean(const Tensor& x, const Axes& axes, bool keepdims) {
  WEFT_CHECK(x.defined(), InvalidArgument) << "mean: the input is undefined";
  auto mask = reduced_mask("mean", x, axes);
  Tensor xf = is_floating(x.dtype()) ? x : cast(x, kFloat64);
  return div(sum(xf, axes, keepdims), count_reduced(xf, mask));
}

Tensor max(const Tensor& x, const Axes& axes, bool keepdims) {
  return max_or_min("max", Kind::kMax, x, axes, keepdims);
}
Tensor min(const Tensor& x, const Axes& axes, bool keepdims) {
  return max_or_min("min", Kind::kMin, x, axes, keepdims);
}

Tensor all(const Tensor& x, const Axes& axes, bool keepdims) {
  WEFT_CHECK(x.defined(), InvalidArgument) << "all: the input is undefined";
  return equal(sum(logical_not(x), axes, keepdims), 0);
}

Tensor any(const Tensor& x, const Axes& axes, bool keepdims) {
  WEFT_CHECK(x.defined(), InvalidArgument) << "any: the input is undefined";
  return greater(sum(not_equal(x, zeros({}, x.dtype())), axes, keepdims), 0);
}

Tensor prod(const Tensor& x, const Axes& axes, bool keepdims) {
  WEFT_CHECK(x.defined(), InvalidArgument) << "prod: the input is undefined";
  auto mask = reduced_mask("prod", x, axes);
  Tensor out = reduce("prod", Kind::kProd, x, mask, keepdims);
  if (autodiff::is_recording() && is_floating(x.dtype())) {
    autodiff::record("prod", {x}, {out}, [x, mask](const autodiff::Grads& g) {
      // d prod / d x_i = prod / x_i; where x_i == 0 it is the product of the other elements.
      return std::vector<Tensor>{mul(expand_to(g[0], x, mask), prod_of_others(x, mask))};
    });
  }
  return out;
}

Tensor logsumexp(const Tensor& x, const Axes& axes, bool keepdims) {
  WEFT_CHECK(x.defined(), InvalidArgument) << "logsumexp: the input is undefined";
  Tensor xf = is_floating(x.dtype()) ? x : cast(x, kFloat64);
  auto mask = reduced_mask("logsumexp", xf, axes);  // axis errors name logsumexp, not max
  // Shift by the (constant) maximum for stability; an all -inf slice shifts by 0.
  Tensor m = stop_gradient(max(xf, axes, true));
  m = where(equal(abs(m), INFINITY), zeros_like(m), m);
  Tensor out = add(log(sum(exp(sub(xf, m)), axes, true)), m);
  if (keepdims) return out;
  return reshape(out, reduced_shape(xf, mask, false));
}

Tensor argmax(const Tensor& x, int64_t axis) { return arg_reduce("argmax", x, axis, true); }
Tensor argmin(const Tensor& x, int64_t axis) { return arg_reduce("argmin", x, axis, false); }

Tensor sum_to(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  int64_t lead = g.rank() - static_cast<int64_t>(shape.size());
  WEFT_ASSERT(lead >= 0) << "sum_to: cannot sum shape " << shape_str(g.shape()) << " to "
                         << shape_str(shape);
  Axes axes;
  for (int64_t i = 0; i < g.rank(); ++i) {
    if (i < lead || (shape[i - lead] == 1 && g.shape()[i] != 1)) axes.push_back(i);
  }
  if (axes.empty()) return reshape(g, shape);
  return reshape(sum(g, axes, true), shape);
}

}  // namespace weft
