#include "weft/ops/shape_ops.h"

#include <algorithm>
#include <numeric>

#include "weft/autodiff/tape.h"
#include "weft/core/op_scope.h"
#include "weft/core/parallel.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/reduce.h"

namespace weft {
namespace {

void check_defined(const char* op, const Tensor& t) {
  WEFT_CHECK(t.defined(), InvalidArgument) << op << ": the input tensor is undefined";
}

Shape infer_shape(const Tensor& x, const Shape& shape) {
  Shape out = shape;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      WEFT_CHECK(infer < 0, InvalidArgument)
          << "reshape: only one dimension can be -1, got " << shape_str(shape);
      infer = static_cast<int64_t>(i);
    } else {
      WEFT_CHECK(out[i] >= 0, InvalidArgument)
          << "reshape: invalid dimension " << out[i] << " in " << shape_str(shape);
      known *= out[i];
    }
  }
  if (infer >= 0) {
    WEFT_CHECK(known > 0 && x.numel() % known == 0, InvalidArgument)
        << "reshape: cannot reshape a tensor of shape " << shape_str(x.shape()) << " (" << x.numel()
        << " elements) into " << shape_str(shape);
    out[infer] = x.numel() / known;
  }
  WEFT_CHECK(num_elements(out) == x.numel(), InvalidArgument)
      << "reshape: cannot reshape a tensor of shape " << shape_str(x.shape()) << " (" << x.numel()
      << " elements) into " << shape_str(shape) << " (" << num_elements(out) << " elements)";
  return out;
}

// Strides that view x with `shape` without copying, if x's layout allows it (as NumPy's
// _attempt_nocopy_reshape): each run of merged old dimensions must be contiguous in itself.
std::optional<Strides> view_strides(const Tensor& x, const Shape& shape) {
  // An empty tensor has no elements to address: any strides view it (and the matching below
  // would run past the end of `shape` on a zero dimension).
  if (x.is_contiguous() || x.numel() == 0) return contiguous_strides(shape);
  Shape old_shape;
  Strides old_strides;
  for (int64_t i = 0; i < x.rank(); ++i) {
    if (x.shape()[i] != 1) {
      old_shape.push_back(x.shape()[i]);
      old_strides.push_back(x.strides()[i]);
    }
  }
  Strides out(shape.size(), 0);
  size_t oi = 0, ni = 0;
  while (ni < shape.size() && oi < old_shape.size()) {
    if (shape[ni] == 1) {
      out[ni++] = 0;
      continue;
    }
    size_t oj = oi + 1, nj = ni + 1;
    int64_t np = shape[ni], op = old_shape[oi];
    while (np != op) {
      if (np < op) {
        np *= shape[nj++];
      } else {
        op *= old_shape[oj++];
      }
    }
    for (size_t k = oi; k + 1 < oj; ++k) {
      if (old_strides[k] != old_strides[k + 1] * old_shape[k + 1]) return std::nullopt;
    }
    out[nj - 1] = old_strides[oj - 1];
    for (size_t k = nj - 1; k > ni; --k) out[k - 1] = out[k] * shape[k];
    ni = nj;
    oi = oj;
  }
  for (; ni < shape.size(); ++ni) out[ni] = 0;
  return out;
}

void record_linear(const char* op, const Tensor& x, const Tensor& out,
                   std::function<Tensor(const Tensor&)> grad) {
  if (!autodiff::is_recording()) return;
  autodiff::record(op, {x}, {out}, [grad = std::move(grad)](const autodiff::Grads& g) {
    return std::vector<Tensor>{grad(g[0])};
  });
}

struct Resolved {
  int64_t start, size, step;
};

Resolved resolve(const Slice& s, int64_t n, int64_t axis) {
  WEFT_CHECK(s.step != 0, InvalidArgument) << "slice: step of axis " << axis << " is zero";
  auto clamp_index = [&](int64_t i, int64_t lo, int64_t hi) {
    if (i < 0) i += n;
    return std::clamp(i, lo, hi);
  };
  int64_t start, stop;
  if (s.step > 0) {
    start = s.start ? clamp_index(*s.start, 0, n) : 0;
    stop = s.stop ? clamp_index(*s.stop, 0, n) : n;
    return {start, std::max<int64_t>(0, (stop - start + s.step - 1) / s.step), s.step};
  }
  start = s.start ? clamp_index(*s.start, -1, n - 1) : n - 1;
  stop = s.stop ? clamp_index(*s.stop, -1, n - 1) : -1;
  return {start, std::max<int64_t>(0, (start - stop - s.step - 1) / -s.step), s.step};
}

// Writes g into a zero tensor of `shape` at the view given by `slices` (slice's adjoint).
Tensor slice_grad(const Tensor& g, const Shape& shape, const std::vector<Slice>& slices) {
  Tensor out = zeros(shape, g.dtype());
  assign_into(slice(out, slices), g);
  record_linear("slice_grad", g, out, [slices](const Tensor& gg) { return slice(gg, slices); });
  return out;
}

}  // namespace

Tensor reshape(const Tensor& x, const Shape& shape) {
  check_defined("reshape", x);
  Shape target = infer_shape(x, shape);
  OpScope op("reshape", x);
  if (op.spmd()) {
    SpmdRule rule{SpmdRule::Kind::kReshape};
    rule.shape = target;
    return op.run(rule, {x}, [](const SpmdArgs& c) { return reshape(c[0], c.local_shape); });
  }
  Tensor out;
  if (auto strides = view_strides(x, target)) {
    out = Tensor::view(x, target, *strides, x.offset());
  } else {
    Tensor c = Tensor::empty(x.shape(), x.dtype());
    assign_into(c, x);
    out = Tensor::view(c, target, contiguous_strides(target), 0);
  }
  Shape in_shape = x.shape();
  record_linear("reshape", x, out, [in_shape](const Tensor& g) { return reshape(g, in_shape); });
  return out;
}

Tensor transpose(const Tensor& x, const std::vector<int64_t>& perm_in) {
  check_defined("transpose", x);
  std::vector<int64_t> perm = perm_in;
  if (perm.empty()) {
    perm.resize(x.rank());
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  WEFT_CHECK(static_cast<int64_t>(perm.size()) == x.rank(), InvalidArgument)
      << "transpose: permutation has " << perm.size() << " axes, the tensor has rank " << x.rank();
  std::vector<bool> seen(x.rank(), false);
  Shape shape(x.rank());
  Strides strides(x.rank());
  std::vector<int64_t> inverse(x.rank());
  for (int64_t i = 0; i < x.rank(); ++i) {
    int64_t a = normalize_axis("transpose", perm[i], x.rank());
    WEFT_CHECK(!seen[a], InvalidArgument)
        << "transpose: axis " << a << " repeats in the permutation";
    seen[a] = true;
    shape[i] = x.shape()[a];
    strides[i] = x.strides()[a];
    inverse[a] = i;
  }
  OpScope op("transpose", x);
  if (op.spmd()) {
    SpmdRule rule{SpmdRule::Kind::kTranspose};
    rule.axes.resize(inverse.size());
    for (size_t a = 0; a < inverse.size(); ++a) rule.axes[static_cast<size_t>(inverse[a])] = a;
    return op.run(rule, {x},
                  [axes = rule.axes](const SpmdArgs& c) { return transpose(c[0], axes); });
  }
  Tensor out = Tensor::view(x, shape, strides, x.offset());
  record_linear("transpose", x, out, [inverse](const Tensor& g) { return transpose(g, inverse); });
  return out;
}

Tensor slice(const Tensor& x, const std::vector<Slice>& slices) {
  check_defined("slice", x);
  WEFT_CHECK(static_cast<int64_t>(slices.size()) <= x.rank(), InvalidArgument)
      << "slice: " << slices.size() << " slices for a tensor of rank " << x.rank();
  OpScope op("slice", x);
  if (op.spmd()) {
    // The axes it cuts whole on each device; the others are taken whole on each device.
    SpmdRule rule{SpmdRule::Kind::kAlongAxis};
    std::vector<Slice> local(slices.size());
    for (size_t i = 0; i < slices.size(); ++i) {
      Resolved r = resolve(slices[i], x.shape()[i], static_cast<int64_t>(i));
      if (r.start == 0 && r.size == x.shape()[i] && r.step == 1) continue;
      rule.axes.push_back(static_cast<int64_t>(i));
      local[i] = slices[i];
    }
    return op.run(rule, {x}, [local](const SpmdArgs& c) { return slice(c[0], local); });
  }
  Shape shape = x.shape();
  Strides strides = x.strides();
  int64_t offset = x.offset();
  for (size_t i = 0; i < slices.size(); ++i) {
    Resolved r = resolve(slices[i], x.shape()[i], static_cast<int64_t>(i));
    if (r.size > 0) offset += r.start * x.strides()[i];
    shape[i] = r.size;
    strides[i] = x.strides()[i] * r.step;
  }
  Tensor out = Tensor::view(x, shape, strides, offset);
  Shape in_shape = x.shape();
  record_linear("slice", x, out,
                [in_shape, slices](const Tensor& g) { return slice_grad(g, in_shape, slices); });
  return out;
}

Tensor select(const Tensor& x, int64_t axis, int64_t index) {
  check_defined("select", x);
  axis = normalize_axis("select", axis, x.rank());
  int64_t n = x.shape()[axis];
  WEFT_CHECK(index >= -n && index < n, OutOfRange)
      << "select: index " << index << " is out of range for axis " << axis << " of size " << n;
  if (index < 0) index += n;
  std::vector<Slice> slices(axis + 1);
  slices[axis] = Slice{index, index + 1, 1};
  return squeeze(slice(x, slices), {axis});
}

Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  check_defined("broadcast_to", x);
  WEFT_CHECK(broadcast_shapes("broadcast_to", x.shape(), shape) == shape, InvalidArgument)
      << "broadcast_to: cannot broadcast shape " << shape_str(x.shape()) << " to "
      << shape_str(shape);
  if (x.shape() == shape) return x;
  OpScope op("broadcast_to", x);
  if (op.spmd()) {
    return op.run(SpmdRule::replicated(), {x},
                  [shape](const SpmdArgs& c) { return broadcast_to(c[0], shape); });
  }
  Strides strides(shape.size(), 0);
  size_t lead = shape.size() - x.shape().size();
  for (size_t i = 0; i < x.shape().size(); ++i) {
    strides[lead + i] = x.shape()[i] == 1 ? 0 : x.strides()[i];
  }
  Tensor out = Tensor::view(x, shape, strides, x.offset());
  Shape in_shape = x.shape();
  record_linear("broadcast_to", x, out,
                [in_shape](const Tensor& g) { return sum_to(g, in_shape); });
  return out;
}

Tensor squeeze(const Tensor& x, const std::vector<int64_t>& axes) {
  check_defined("squeeze", x);
  std::vector<bool> drop(x.rank(), false);
  for (int64_t a : axes) {
    int64_t axis = normalize_axis("squeeze", a, x.rank());
    WEFT_CHECK(x.shape()[axis] == 1, InvalidArgument)
        << "squeeze: axis " << a << " of shape " << shape_str(x.shape()) << " has size "
        << x.shape()[axis] << ", expected 1";
    drop[axis] = true;
  }
  Shape shape;
  for (int64_t i = 0; i < x.rank(); ++i) {
    if (!(axes.empty() ? x.shape()[i] == 1 : drop[i])) shape.push_back(x.shape()[i]);
  }
  return reshape(x, shape);
}

Tensor expand_dims(const Tensor& x, int64_t axis) {
  check_defined("expand_dims", x);
  axis = normalize_axis("expand_dims", axis, x.rank() + 1);
  Shape shape = x.shape();
  shape.insert(shape.begin() + axis, 1);
  return reshape(x, shape);
}

Tensor flatten(const Tensor& x) { return reshape(x, {-1}); }

Tensor concat(const std::vector<Tensor>& xs, int64_t axis) {
  WEFT_CHECK(!xs.empty(), InvalidArgument) << "concat: expected at least one tensor";
  for (const Tensor& x : xs) check_defined("concat", x);
  const Tensor& first = xs[0];
  axis = normalize_axis("concat", axis, first.rank());
  Shape shape = first.shape();
  DType dtype = first.dtype();
  std::vector<int64_t> sizes;
  shape[axis] = 0;
  for (size_t k = 0; k < xs.size(); ++k) {
    const Tensor& x = xs[k];
    bool same = x.rank() == first.rank();
    for (int64_t i = 0; same && i < x.rank(); ++i) {
      same = i == axis || x.shape()[i] == first.shape()[i];
    }
    WEFT_CHECK(same, InvalidArgument)
        << "concat: tensor " << k << " has shape " << shape_str(x.shape())
        << ", which does not match tensor 0's shape " << shape_str(first.shape())
        << " outside axis " << axis;
    dtype = promote_types(dtype, x.dtype());
    sizes.push_back(x.shape()[axis]);
    shape[axis] += x.shape()[axis];
  }
  OpScope op("concat", xs);
  if (op.spmd()) {
    return op.run(SpmdRule{SpmdRule::Kind::kConcat, false, false, {axis}}, xs,
                  [axis](const SpmdArgs& c) { return concat(c.components, axis); });
  }
  Tensor out = Tensor::empty(shape, dtype);
  int64_t at = 0;
  for (const Tensor& x : xs) {
    std::vector<Slice> s(axis + 1);
    s[axis] = Slice{at, at + x.shape()[axis], 1};
    assign_into(slice(out, s), x);
    at += x.shape()[axis];
  }
  if (autodiff::is_recording() && is_floating(dtype)) {
    autodiff::record("concat", xs, {out}, [xs, sizes, axis](const autodiff::Grads& g) {
      std::vector<Tensor> parts = split(g[0], sizes, axis);
      for (size_t k = 0; k < parts.size(); ++k) {
        parts[k] = is_floating(xs[k].dtype()) ? cast(parts[k], xs[k].dtype()) : Tensor();
      }
      return parts;
    });
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& xs, int64_t axis) {
  WEFT_CHECK(!xs.empty(), InvalidArgument) << "stack: expected at least one tensor";
  for (size_t k = 0; k < xs.size(); ++k) {
    check_defined("stack", xs[k]);
    WEFT_CHECK(xs[k].shape() == xs[0].shape(), InvalidArgument)
        << "stack: tensor " << k << " has shape " << shape_str(xs[k].shape())
        << ", tensor 0 has shape " << shape_str(xs[0].shape()) << "; all must be equal";
  }
  axis = normalize_axis("stack", axis, xs[0].rank() + 1);
  std::vector<Tensor> expanded;
  for (const Tensor& x : xs) expanded.push_back(expand_dims(x, axis));
  return concat(expanded, axis);
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t axis) {
  check_defined("split", x);
  axis = normalize_axis("split", axis, x.rank());
  int64_t total = 0;
  for (int64_t s : sizes) {
    WEFT_CHECK(s >= 0, InvalidArgument) << "split: negative size " << s;
    total += s;
  }
  WEFT_CHECK(total == x.shape()[axis], InvalidArgument)
      << "split: sizes sum to " << total << " but axis " << axis << " of shape "
      << shape_str(x.shape()) << " has size " << x.shape()[axis];
  std::vector<Tensor> out;
  int64_t at = 0;
  for (int64_t s : sizes) {
    std::vector<Slice> sl(axis + 1);
    sl[axis] = Slice{at, at + s, 1};
    out.push_back(slice(x, sl));
    at += s;
  }
  return out;
}

std::vector<Tensor> split(const Tensor& x, int64_t num, int64_t axis) {
  check_defined("split", x);
  int64_t a = normalize_axis("split", axis, x.rank());
  WEFT_CHECK(num > 0 && x.shape()[a] % num == 0, InvalidArgument)
      << "split: axis " << a << " of size " << x.shape()[a] << " (shape " << shape_str(x.shape())
      << ") does not divide into " << num << " equal parts";
  return split(x, std::vector<int64_t>(num, x.shape()[a] / num), a);
}

namespace {

// out[outer, i, inner] (+)= in[outer, idx[i], inner], or its adjoint. Indices are visited in
// order for every output, so scatter-adds are deterministic.
template <bool kScatter>
void gather_kernel(const Tensor& src, const std::vector<int64_t>& idx, int64_t outer,
                   int64_t src_axis, int64_t inner, const Tensor& dst) {
  int64_t n = static_cast<int64_t>(idx.size());
  dispatch_dtype(src.dtype(), [&]<typename T>() {
    const T* s = src.data<T>();
    T* d = dst.data<T>();
    parallel_for(outer, 1, [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) {
        for (int64_t i = 0; i < n; ++i) {
          if constexpr (kScatter) {
            T* row = d + (o * src_axis + idx[i]) * inner;
            const T* g = s + (o * n + i) * inner;
            for (int64_t k = 0; k < inner; ++k) {
              row[k] = static_cast<T>(static_cast<compute_t<T>>(row[k]) +
                                      static_cast<compute_t<T>>(g[k]));
            }
          } else {
            std::copy_n(s + (o * src_axis + idx[i]) * inner, inner, d + (o * n + i) * inner);
          }
        }
      }
    });
  });
}

// gather's adjoint: sums g's rows into a zero tensor of `shape` at `idx` along `axis`.
Tensor gather_grad(const Tensor& g, const Tensor& indices, const std::vector<int64_t>& idx,
                   const Shape& shape, int64_t axis) {
  Tensor gc = contiguous(g);
  Tensor out = zeros(shape, g.dtype());
  int64_t outer = num_elements(Shape(shape.begin(), shape.begin() + axis));
  int64_t inner = num_elements(Shape(shape.begin() + axis + 1, shape.end()));
  gather_kernel<true>(gc, idx, outer, shape[axis], inner, out);
  if (autodiff::is_recording()) {
    autodiff::record("gather_grad", {g}, {out},
                     [indices, gshape = g.shape(), axis](const autodiff::Grads& gg) {
                       return std::vector<Tensor>{reshape(gather(gg[0], indices, axis), gshape)};
                     });
  }
  return out;
}

}  // namespace

Tensor gather(const Tensor& params, const Tensor& indices, int64_t axis) {
  check_defined("gather", params);
  check_defined("gather", indices);
  WEFT_CHECK(indices.dtype() == kInt32 || indices.dtype() == kInt64, InvalidArgument)
      << "gather: indices must be int32 or int64, got " << indices.dtype();
  axis = normalize_axis("gather", axis, params.rank());
  OpScope op("gather", params, indices);
  if (op.spmd()) {
    return op.run(SpmdRule{SpmdRule::Kind::kGather, false, false, {axis}}, {params, indices},
                  [axis](const SpmdArgs& c) { return gather(c[0], c[1], axis); });
  }
  int64_t n = params.shape()[axis];
  std::vector<int64_t> idx = indices.to_vector<int64_t>();
  for (size_t i = 0; i < idx.size(); ++i) {
    WEFT_CHECK(idx[i] >= 0 && idx[i] < n, OutOfRange)
        << "gather: index " << idx[i] << " at position " << i << " is out of range [0, " << n
        << ") for axis " << axis << " of params with shape " << shape_str(params.shape());
  }
  Shape shape(params.shape().begin(), params.shape().begin() + axis);
  shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
  shape.insert(shape.end(), params.shape().begin() + axis + 1, params.shape().end());
  Tensor src = contiguous(params);
  Tensor out = Tensor::empty(shape, params.dtype());
  int64_t outer = num_elements(Shape(params.shape().begin(), params.shape().begin() + axis));
  int64_t inner = num_elements(Shape(params.shape().begin() + axis + 1, params.shape().end()));
  gather_kernel<false>(src, idx, outer, n, inner, out);
  if (autodiff::is_recording() && is_floating(params.dtype())) {
    Shape pshape = params.shape();
    autodiff::record(
        "gather", {params, indices}, {out}, [indices, idx, pshape, axis](const autodiff::Grads& g) {
          return std::vector<Tensor>{gather_grad(g[0], indices, idx, pshape, axis), Tensor()};
        });
  }
  return out;
}

Tensor one_hot(const Tensor& indices, int64_t depth, Scalar on, Scalar off, DType dtype) {
  check_defined("one_hot", indices);
  WEFT_CHECK(!is_floating(indices.dtype()), InvalidArgument)
      << "one_hot: indices must be integers, got " << indices.dtype();
  WEFT_CHECK(depth >= 0, InvalidArgument) << "one_hot: depth must be >= 0, got " << depth;
  OpScope op("one_hot", indices);
  if (op.spmd()) {
    return op.run(SpmdRule{SpmdRule::Kind::kNewAxis, false, false, {indices.rank()}}, {indices},
                  [=](const SpmdArgs& c) { return one_hot(c[0], depth, on, off, dtype); });
  }
  Shape shape = indices.shape();
  shape.push_back(depth);
  Tensor out = full(shape, off, dtype);
  std::vector<int64_t> idx = indices.to_vector<int64_t>();
  Tensor on_value = Tensor::scalar(on, dtype);
  for (size_t i = 0; i < idx.size(); ++i) {
    if (idx[i] < 0 || idx[i] >= depth) continue;
    assign_into(Tensor::view(out, {}, {}, static_cast<int64_t>(i) * depth + idx[i]), on_value);
  }
  return out;
}

Tensor pad(const Tensor& x, const std::vector<std::pair<int64_t, int64_t>>& paddings,
           Scalar value) {
  check_defined("pad", x);
  WEFT_CHECK(static_cast<int64_t>(paddings.size()) == x.rank(), InvalidArgument)
      << "pad: " << paddings.size() << " paddings for a tensor of rank " << x.rank()
      << "; expected one {before, after} pair per axis";
  OpScope op("pad", x);
  if (op.spmd()) {
    SpmdRule rule{SpmdRule::Kind::kAlongAxis};  // the padded axes whole on each device
    for (int64_t i = 0; i < x.rank(); ++i) {
      if (paddings[i].first != 0 || paddings[i].second != 0) rule.axes.push_back(i);
    }
    return op.run(rule, {x}, [=](const SpmdArgs& c) { return pad(c[0], paddings, value); });
  }
  Shape shape = x.shape();
  std::vector<Slice> inner(x.rank());
  for (int64_t i = 0; i < x.rank(); ++i) {
    auto [before, after] = paddings[i];
    WEFT_CHECK(before >= 0 && after >= 0, InvalidArgument)
        << "pad: negative padding {" << before << ", " << after << "} for axis " << i;
    shape[i] += before + after;
    inner[i] = Slice{before, before + x.shape()[i], 1};
  }
  Tensor out = full(shape, value, x.dtype());
  assign_into(slice(out, inner), x);
  if (is_floating(x.dtype())) {
    record_linear("pad", x, out, [inner](const Tensor& g) { return slice(g, inner); });
  }
  return out;
}

}  // namespace weft
