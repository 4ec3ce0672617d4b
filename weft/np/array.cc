#include "weft/np/array.h"

#include <algorithm>
#include <cmath>

#include "weft/autodiff/tape.h"
#include "weft/np/internal/check.h"
#include "weft/np/linalg.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/linalg.h"
#include "weft/ops/random.h"
#include "weft/ops/reduce.h"
#include "weft/ops/scatter.h"
#include "weft/ops/shape_ops.h"
#include "weft/ops/sort.h"

namespace weft::np {

Tensor array(std::initializer_list<double> values, DType dtype) {
  return cast(Tensor::from_vector(std::vector<double>(values)), dtype);
}

Tensor array(std::initializer_list<std::initializer_list<double>> rows, DType dtype) {
  std::vector<double> values;
  size_t cols = rows.size() ? rows.begin()->size() : 0;
  for (const auto& row : rows) {
    WEFT_CHECK(row.size() == cols, InvalidArgument)
        << "np::array: ragged rows (" << row.size() << " values where the first row has " << cols
        << ")";
    values.insert(values.end(), row.begin(), row.end());
  }
  return cast(
      Tensor::from_vector(values, {static_cast<int64_t>(rows.size()), static_cast<int64_t>(cols)}),
      dtype);
}

Tensor asarray(const Tensor& t, DType dtype) { return cast(t, dtype); }
Tensor zeros(const Shape& shape, DType dtype) { return weft::zeros(shape, dtype); }
Tensor ones(const Shape& shape, DType dtype) { return weft::ones(shape, dtype); }
Tensor full(const Shape& shape, Scalar value, DType dtype) {
  return weft::full(shape, value, dtype);
}
Tensor zeros_like(const Tensor& t) { return weft::zeros_like(t); }
Tensor ones_like(const Tensor& t) { return weft::ones_like(t); }
Tensor full_like(const Tensor& t, Scalar value) { return weft::full_like(t, value); }

Tensor arange(Scalar stop) { return np::arange(Scalar(0), stop, Scalar(1)); }
Tensor arange(Scalar start, Scalar stop, Scalar step) {
  bool ints = !start.is_float && !stop.is_float && !step.is_float;
  return weft::arange(start, stop, step, ints ? kInt64 : kFloat64);
}
Tensor linspace(double start, double stop, int64_t num, bool endpoint) {
  return weft::linspace(start, stop, num, endpoint, kFloat64);
}
Tensor eye(int64_t n, int64_t m, DType dtype) { return weft::eye(n, m, dtype); }

Tensor reshape(const Tensor& a, const Shape& shape) { return weft::reshape(a, shape); }
Tensor transpose(const Tensor& a, const std::vector<int64_t>& axes) {
  return weft::transpose(a, axes);
}
Tensor concatenate(const std::vector<Tensor>& arrays, int64_t axis) {
  return weft::concat(arrays, axis);
}
Tensor stack(const std::vector<Tensor>& arrays, int64_t axis) { return weft::stack(arrays, axis); }

}  // namespace weft::np

// ---- creation (continued)
// ------------------------------------------------------------------------

namespace weft::np {
namespace {

using internal::check;

// slices selecting [start, stop) with step along `axis`, every earlier axis whole.
std::vector<Slice> along(int64_t axis, Slice s) {
  std::vector<Slice> slices(axis + 1);
  slices[axis] = s;
  return slices;
}

Tensor int_range(int64_t n) { return weft::arange(0, n, 1, kInt64); }

}  // namespace

Tensor identity(int64_t n, DType dtype) { return weft::eye(n, n, dtype); }
Tensor empty(const Shape& shape, DType dtype) { return weft::zeros(shape, dtype); }
Tensor empty_like(const Tensor& t) { return weft::zeros_like(t); }
Tensor copy(const Tensor& a) {
  check("copy", a);
  // A buffer of its own (a Variable's value changes in place when assigned); the gradient passes.
  Tensor out = Tensor::empty(a.shape(), a.dtype());
  assign_into(out, a);
  if (autodiff::is_recording()) {
    autodiff::record("copy", {a}, {out},
                     [](const autodiff::Grads& g) { return std::vector<Tensor>{g[0]}; });
  }
  return out;
}
Tensor asanyarray(const Tensor& a) { return a; }
Tensor ascontiguousarray(const Tensor& a) {
  check("ascontiguousarray", a);
  return a.rank() == 0 ? weft::reshape(a, {1}) : contiguous(a);
}

Tensor logspace(double start, double stop, int64_t num, bool endpoint, double base) {
  return weft::pow(Tensor::scalar(base, kFloat64), linspace(start, stop, num, endpoint));
}

Tensor geomspace(double start, double stop, int64_t num, bool endpoint) {
  WEFT_CHECK(start != 0 && stop != 0, InvalidArgument)
      << "np::geomspace: start and stop must be non-zero, got " << start << " and " << stop;
  WEFT_CHECK((start > 0) == (stop > 0), InvalidArgument)
      << "np::geomspace: start and stop must have the same sign, got " << start << " and " << stop;
  double sign = start > 0 ? 1 : -1;
  Tensor out =
      mul(logspace(std::log10(std::abs(start)), std::log10(std::abs(stop)), num, endpoint), sign);
  if (num == 0) return out;
  std::vector<double> v = out.to_vector<double>();  // the ends exactly, as NumPy
  v.front() = start;
  if (endpoint && num > 1) v.back() = stop;
  return Tensor::from_vector(v);
}

Tensor tri(int64_t n, int64_t m, int64_t k, DType dtype) {
  if (m < 0) m = n;
  Tensor rows = weft::reshape(int_range(n), {n, 1}), cols = weft::reshape(int_range(m), {1, m});
  return cast(weft::greater_equal(weft::add(rows, Tensor::scalar(k, kInt64)), cols), dtype);
}

namespace {
Tensor triangle(const char* op, const Tensor& m, int64_t k, bool lower) {
  check(op, m);
  WEFT_CHECK(m.rank() >= 2, InvalidArgument)
      << "np::" << op << ": expected at least 2 dimensions, got shape " << shape_str(m.shape());
  Tensor mask = cast(tri(m.dim(-2), m.dim(-1), lower ? k : k - 1, kInt64), kBool);
  if (!lower) mask = weft::logical_not(mask);
  return weft::where(mask, m, weft::zeros({}, m.dtype()));
}
}  // namespace

Tensor tril(const Tensor& m, int64_t k) { return triangle("tril", m, k, true); }
Tensor triu(const Tensor& m, int64_t k) { return triangle("triu", m, k, false); }

std::vector<Tensor> meshgrid(const std::vector<Tensor>& xs, const std::string& indexing) {
  WEFT_CHECK(indexing == "xy" || indexing == "ij", InvalidArgument)
      << "np::meshgrid: indexing must be \"xy\" or \"ij\", got \"" << indexing << "\"";
  int64_t n = static_cast<int64_t>(xs.size());
  Shape out_shape;
  for (const Tensor& x : xs) out_shape.push_back(x.numel());
  bool swap = indexing == "xy" && n >= 2;
  if (swap) std::swap(out_shape[0], out_shape[1]);
  std::vector<Tensor> out;
  for (int64_t i = 0; i < n; ++i) {
    int64_t at = swap && i < 2 ? 1 - i : i;
    Shape shape(n, 1);
    shape[at] = xs[i].numel();
    out.push_back(weft::broadcast_to(weft::reshape(xs[i], shape), out_shape));
  }
  return out;
}

Tensor vander(const Tensor& x, int64_t n, bool increasing) {
  check("vander", x);
  WEFT_CHECK(x.rank() == 1, InvalidArgument)
      << "np::vander: x must be 1-D, got shape " << shape_str(x.shape());
  if (n < 0) n = x.dim(0);
  // Columns x^0, x^1, ... by repeated products (pow's gradient at x = 0 for x^0 would be NaN).
  std::vector<Tensor> columns;
  for (int64_t p = 0; p < n; ++p) {
    columns.push_back(p == 0 ? weft::ones_like(x) : weft::mul(columns.back(), x));
  }
  if (!increasing) std::reverse(columns.begin(), columns.end());
  if (columns.empty()) return weft::zeros({x.dim(0), 0}, x.dtype());
  return weft::stack(columns, 1);
}

Tensor diag(const Tensor& v, int64_t k) {
  check("diag", v);
  if (v.rank() == 2) return diagonal(v, k);
  WEFT_CHECK(v.rank() == 1, InvalidArgument)
      << "np::diag: expected a 1-D or 2-D input, got shape " << shape_str(v.shape());
  int64_t n = v.dim(0) + std::abs(k);
  // v[i] at (i, i + k) of an n x n zero matrix: a scatter, so NaN and inf stay where they are.
  std::vector<int64_t> positions;
  for (int64_t i = 0; i < v.dim(0); ++i) {
    positions.push_back((i + (k < 0 ? -k : 0)) * n + i + (k > 0 ? k : 0));
  }
  Tensor square = weft::zeros({n, n}, v.dtype());
  return scatter_flat_update(square, Tensor::from_vector(positions), v);
}

Tensor diagflat(const Tensor& v, int64_t k) { return diag(weft::flatten(v), k); }

std::vector<Tensor> diag_indices(int64_t n, int64_t ndim) {
  return std::vector<Tensor>(static_cast<size_t>(ndim), int_range(n));
}

std::vector<Tensor> ix_(const std::vector<Tensor>& arrays) {
  std::vector<Tensor> out;
  int64_t n = static_cast<int64_t>(arrays.size());
  for (int64_t i = 0; i < n; ++i) {
    WEFT_CHECK(arrays[i].rank() == 1, InvalidArgument)
        << "np::ix_: array " << i << " must be 1-D, got shape " << shape_str(arrays[i].shape());
    Tensor a = arrays[i].dtype() == kBool ? nonzero(arrays[i])[0] : arrays[i];
    Shape shape(n, 1);
    shape[i] = a.dim(0);
    out.push_back(weft::reshape(a, shape));
  }
  return out;
}

// ---- shape (continued)
// ---------------------------------------------------------------------------

Tensor ravel(const Tensor& a) { return weft::flatten(a); }
Tensor flatten(const Tensor& a) { return weft::flatten(a); }
Tensor expand_dims(const Tensor& a, int64_t axis) { return weft::expand_dims(a, axis); }
Tensor squeeze(const Tensor& a, const Axis& axis) { return weft::squeeze(a, axis.axes()); }
Tensor broadcast_to(const Tensor& a, const Shape& shape) { return weft::broadcast_to(a, shape); }

std::vector<Tensor> broadcast_arrays(const std::vector<Tensor>& arrays) {
  Shape shape;
  for (const Tensor& a : arrays) shape = broadcast_shapes("np::broadcast_arrays", shape, a.shape());
  std::vector<Tensor> out;
  for (const Tensor& a : arrays) out.push_back(weft::broadcast_to(a, shape));
  return out;
}

Tensor atleast_1d(const Tensor& a) { return a.rank() >= 1 ? a : weft::reshape(a, {1}); }
Tensor atleast_2d(const Tensor& a) {
  if (a.rank() >= 2) return a;
  return weft::reshape(a, {1, a.rank() == 1 ? a.dim(0) : 1});
}
Tensor atleast_3d(const Tensor& a) {
  if (a.rank() >= 3) return a;
  if (a.rank() == 2) return weft::reshape(a, {a.dim(0), a.dim(1), 1});
  return weft::reshape(a, {1, a.rank() == 1 ? a.dim(0) : 1, 1});
}

Tensor swapaxes(const Tensor& a, int64_t axis1, int64_t axis2) {
  check("swapaxes", a);
  std::vector<int64_t> perm(a.rank());
  for (int64_t i = 0; i < a.rank(); ++i) perm[i] = i;
  std::swap(perm[normalize_axis("np::swapaxes", axis1, a.rank())],
            perm[normalize_axis("np::swapaxes", axis2, a.rank())]);
  return weft::transpose(a, perm);
}

Tensor moveaxis(const Tensor& a, const std::vector<int64_t>& source,
                const std::vector<int64_t>& destination) {
  check("moveaxis", a);
  WEFT_CHECK(source.size() == destination.size(), InvalidArgument)
      << "np::moveaxis: " << source.size() << " source axes but " << destination.size()
      << " destinations";
  int64_t r = a.rank();
  std::vector<int64_t> perm(r, -1);
  std::vector<bool> used(r, false);
  for (size_t i = 0; i < source.size(); ++i) {
    int64_t s = normalize_axis("np::moveaxis", source[i], r);
    int64_t d = normalize_axis("np::moveaxis", destination[i], r);
    WEFT_CHECK(perm[d] < 0 && !used[s], InvalidArgument) << "np::moveaxis: repeated axis";
    perm[d] = s;
    used[s] = true;
  }
  int64_t next = 0;
  for (int64_t& p : perm) {
    if (p >= 0) continue;
    while (used[next]) ++next;
    p = next;
    used[next] = true;
  }
  return weft::transpose(a, perm);
}
Tensor moveaxis(const Tensor& a, int64_t source, int64_t destination) {
  return moveaxis(a, std::vector<int64_t>{source}, std::vector<int64_t>{destination});
}

Tensor flip(const Tensor& a, const Axis& axis) {
  check("flip", a);
  std::vector<Slice> slices(a.rank());
  if (axis.is_none()) {
    for (Slice& s : slices) s.step = -1;
  } else {
    for (int64_t ax : axis.axes()) slices[normalize_axis("np::flip", ax, a.rank())].step = -1;
  }
  return weft::slice(a, slices);
}
Tensor fliplr(const Tensor& a) {
  WEFT_CHECK(a.rank() >= 2, InvalidArgument) << "np::fliplr: expected at least 2 dimensions";
  return flip(a, 1);
}
Tensor flipud(const Tensor& a) {
  WEFT_CHECK(a.rank() >= 1, InvalidArgument) << "np::flipud: expected at least 1 dimension";
  return flip(a, 0);
}

Tensor roll(const Tensor& a, int64_t shift, const Axis& axis) {
  check("roll", a);
  if (axis.is_none()) return weft::reshape(roll(weft::flatten(a), shift, 0), a.shape());
  Tensor out = a;
  for (int64_t ax : axis.axes()) {
    ax = normalize_axis("np::roll", ax, a.rank());
    int64_t n = a.dim(ax);
    if (n == 0) continue;
    int64_t s = ((shift % n) + n) % n;
    if (s == 0) continue;
    out = weft::concat({weft::slice(out, along(ax, Slice{n - s, {}, 1})),
                        weft::slice(out, along(ax, Slice{0, n - s, 1}))},
                       ax);
  }
  return out;
}

Tensor rot90(const Tensor& m, int64_t k, std::pair<int64_t, int64_t> axes) {
  check("rot90", m);
  WEFT_CHECK(m.rank() >= 2, InvalidArgument) << "np::rot90: expected at least 2 dimensions";
  int64_t a0 = normalize_axis("np::rot90", axes.first, m.rank());
  int64_t a1 = normalize_axis("np::rot90", axes.second, m.rank());
  WEFT_CHECK(a0 != a1, InvalidArgument) << "np::rot90: the two axes must differ";
  k = ((k % 4) + 4) % 4;
  if (k == 0) return m;
  if (k == 2) return flip(flip(m, a0), a1);
  if (k == 1) return swapaxes(flip(m, a1), a0, a1);
  return flip(swapaxes(m, a0, a1), a1);
}

Tensor tile(const Tensor& a, const std::vector<int64_t>& reps) {
  check("tile", a);
  int64_t r = std::max<int64_t>(a.rank(), static_cast<int64_t>(reps.size()));
  Shape in(r, 1), rep(r, 1);
  std::copy(a.shape().begin(), a.shape().end(), in.end() - a.rank());
  std::copy(reps.begin(), reps.end(), rep.end() - static_cast<int64_t>(reps.size()));
  // (…, d_i, …) seen as (…, 1, d_i, …), broadcast to (…, rep_i, d_i, …), merged.
  Shape expanded, broadcast, out;
  for (int64_t i = 0; i < r; ++i) {
    WEFT_CHECK(rep[i] >= 0, InvalidArgument) << "np::tile: negative repetition " << rep[i];
    expanded.insert(expanded.end(), {1, in[i]});
    broadcast.insert(broadcast.end(), {rep[i], in[i]});
    out.push_back(rep[i] * in[i]);
  }
  return weft::reshape(contiguous(weft::broadcast_to(weft::reshape(a, expanded), broadcast)), out);
}

Tensor repeat(const Tensor& a, int64_t repeats, const Axis& axis) {
  check("repeat", a);
  WEFT_CHECK(repeats >= 0, InvalidArgument) << "np::repeat: negative repeats " << repeats;
  Tensor x = axis.is_none() ? weft::flatten(a) : a;
  int64_t ax = axis.is_none() ? 0 : normalize_axis("np::repeat", axis.single("repeat"), x.rank());
  Shape expanded = x.shape(), broadcast = x.shape(), out = x.shape();
  expanded.insert(expanded.begin() + ax + 1, 1);
  broadcast.insert(broadcast.begin() + ax + 1, repeats);
  out[ax] *= repeats;
  return weft::reshape(contiguous(weft::broadcast_to(weft::reshape(x, expanded), broadcast)), out);
}

Tensor repeat(const Tensor& a, const std::vector<int64_t>& repeats, const Axis& axis) {
  check("repeat", a);
  Tensor x = axis.is_none() ? weft::flatten(a) : a;
  int64_t ax = axis.is_none() ? 0 : normalize_axis("np::repeat", axis.single("repeat"), x.rank());
  WEFT_CHECK(static_cast<int64_t>(repeats.size()) == x.dim(ax), InvalidArgument)
      << "np::repeat: " << repeats.size() << " repeats for an axis of length " << x.dim(ax);
  std::vector<int64_t> index;
  for (size_t i = 0; i < repeats.size(); ++i) {
    WEFT_CHECK(repeats[i] >= 0, InvalidArgument) << "np::repeat: negative repeats " << repeats[i];
    index.insert(index.end(), repeats[i], static_cast<int64_t>(i));
  }
  return weft::gather(x, Tensor::from_vector(index), ax);
}

Tensor append(const Tensor& arr, const Tensor& values, const Axis& axis) {
  if (axis.is_none()) return weft::concat({weft::flatten(arr), weft::flatten(values)}, 0);
  return weft::concat({arr, values}, axis.single("append"));
}

Tensor hstack(const std::vector<Tensor>& arrays) {
  std::vector<Tensor> xs;
  for (const Tensor& a : arrays) xs.push_back(atleast_1d(a));
  WEFT_CHECK(!xs.empty(), InvalidArgument) << "np::hstack: expected at least one array";
  return weft::concat(xs, xs[0].rank() == 1 ? 0 : 1);
}
Tensor vstack(const std::vector<Tensor>& arrays) {
  std::vector<Tensor> xs;
  for (const Tensor& a : arrays) xs.push_back(atleast_2d(a));
  return weft::concat(xs, 0);
}
Tensor dstack(const std::vector<Tensor>& arrays) {
  std::vector<Tensor> xs;
  for (const Tensor& a : arrays) xs.push_back(atleast_3d(a));
  return weft::concat(xs, 2);
}

std::vector<Tensor> split(const Tensor& a, int64_t sections, int64_t axis) {
  check("split", a);
  int64_t ax = normalize_axis("np::split", axis, a.rank());
  WEFT_CHECK(sections > 0 && a.dim(ax) % sections == 0, InvalidArgument)
      << "np::split: an axis of length " << a.dim(ax) << " does not split into " << sections
      << " equal sections";
  return weft::split(a, sections, ax);
}

std::vector<Tensor> split(const Tensor& a, const std::vector<int64_t>& indices, int64_t axis) {
  check("split", a);
  int64_t ax = normalize_axis("np::split", axis, a.rank());
  // Piece i is a[indices[i-1]:indices[i]] along axis, with Python's slice rules (negative
  // indices count from the end; a piece whose stop is before its start is empty).
  std::vector<Tensor> out;
  for (size_t i = 0; i <= indices.size(); ++i) {
    std::optional<int64_t> start, stop;
    if (i > 0) start = indices[i - 1];
    if (i < indices.size()) stop = indices[i];
    out.push_back(weft::slice(a, along(ax, Slice{start, stop, 1})));
  }
  return out;
}

std::vector<Tensor> hsplit(const Tensor& a, int64_t sections) {
  WEFT_CHECK(a.rank() >= 1, InvalidArgument) << "np::hsplit: expected at least 1 dimension";
  return np::split(a, sections, a.rank() == 1 ? 0 : 1);
}
std::vector<Tensor> vsplit(const Tensor& a, int64_t sections) {
  WEFT_CHECK(a.rank() >= 2, InvalidArgument) << "np::vsplit: expected at least 2 dimensions";
  return np::split(a, sections, 0);
}
std::vector<Tensor> dsplit(const Tensor& a, int64_t sections) {
  WEFT_CHECK(a.rank() >= 3, InvalidArgument) << "np::dsplit: expected at least 3 dimensions";
  return np::split(a, sections, 2);
}

Tensor pad(const Tensor& a, const std::vector<std::pair<int64_t, int64_t>>& pad_width,
           const std::string& mode, double constant_value) {
  check("pad", a);
  std::vector<std::pair<int64_t, int64_t>> widths = pad_width;
  if (widths.size() == 1) widths.assign(a.rank(), pad_width[0]);
  WEFT_CHECK(static_cast<int64_t>(widths.size()) == a.rank(), InvalidArgument)
      << "np::pad: " << widths.size() << " pad widths for " << a.rank() << " dimensions";
  for (const auto& [before, after] : widths) {
    WEFT_CHECK(before >= 0 && after >= 0, InvalidArgument)
        << "np::pad: negative pad width (" << before << ", " << after << ")";
  }
  if (mode == "constant") return weft::pad(a, widths, constant_value);
  WEFT_CHECK(mode == "edge" || mode == "reflect" || mode == "symmetric", InvalidArgument)
      << "np::pad: mode must be \"constant\", \"edge\", \"reflect\" or \"symmetric\", got \""
      << mode << "\"";
  Tensor out = a;
  for (int64_t ax = 0; ax < a.rank(); ++ax) {
    auto [before, after] = widths[ax];
    int64_t n = out.dim(ax);
    if (before == 0 && after == 0) continue;
    WEFT_CHECK(n > 0, InvalidArgument) << "np::pad: can't extend an empty axis in mode " << mode;
    // Index of each padded position in the source axis, then one gather.
    std::vector<int64_t> index;
    for (int64_t i = -before; i < n + after; ++i) {
      int64_t j = i;
      if (mode == "edge") {
        j = std::clamp<int64_t>(i, 0, n - 1);
      } else {
        // reflect: period 2(n-1), edge not repeated; symmetric: period 2n, edge repeated.
        bool sym = mode == "symmetric";
        int64_t period = sym ? 2 * n : 2 * (n - 1);
        if (period == 0) {
          j = 0;
        } else {
          int64_t m = ((i % period) + period) % period;
          j = sym ? (m < n ? m : period - 1 - m) : (m < n ? m : period - m);
        }
      }
      index.push_back(j);
    }
    out = weft::gather(out, Tensor::from_vector(index), ax);
  }
  return out;
}

// ---- indexing helpers
// ----------------------------------------------------------------------------

namespace {
// Negative indices counted from the end, as NumPy (gather then checks the range).
Tensor wrap_negative(const Tensor& indices, int64_t n) {
  WEFT_CHECK(indices.dtype() == kInt32 || indices.dtype() == kInt64, InvalidArgument)
      << "np: indices must be int32 or int64, got " << indices.dtype();
  Tensor idx = cast(indices, kInt64);
  return weft::where(weft::less(idx, Tensor::scalar(0, kInt64)),
                     weft::add(idx, Tensor::scalar(n, kInt64)), idx);
}
}  // namespace

Tensor take(const Tensor& a, const Tensor& indices, const Axis& axis) {
  check("take", a);
  Tensor x = axis.is_none() ? weft::flatten(a) : a;
  int64_t ax = axis.is_none() ? 0 : normalize_axis("np::take", axis.single("take"), x.rank());
  return weft::gather(x, wrap_negative(indices, x.dim(ax)), ax);
}

Tensor take_along_axis(const Tensor& a, const Tensor& indices, int64_t axis) {
  check("take_along_axis", a);
  WEFT_CHECK(indices.rank() == a.rank(), InvalidArgument)
      << "np::take_along_axis: indices of rank " << indices.rank() << " for an array of rank "
      << a.rank();
  int64_t ax = normalize_axis("np::take_along_axis", axis, a.rank());
  // Broadcast every other axis, move `axis` last, and gather from the flattened array at
  // row * n + index.
  Shape a_shape = a.shape(), i_shape = indices.shape();
  a_shape[ax] = 1;
  i_shape[ax] = 1;
  Shape common = broadcast_shapes("np::take_along_axis", a_shape, i_shape);
  Shape a_full = common, i_full = common;
  a_full[ax] = a.dim(ax);
  i_full[ax] = indices.dim(ax);
  int64_t n = a.dim(ax), k = indices.dim(ax);
  Tensor src = moveaxis(weft::broadcast_to(a, a_full), ax, -1);
  Tensor idx = moveaxis(weft::broadcast_to(wrap_negative(indices, n), i_full), ax, -1);
  int64_t rows = k == 0 ? 0 : idx.numel() / k;
  Tensor row_base = weft::mul(weft::reshape(int_range(rows), {rows, 1}), Tensor::scalar(n, kInt64));
  Tensor flat_idx = weft::add(weft::reshape(idx, {rows, k}), row_base);
  for (int64_t i : idx.to_vector<int64_t>()) {
    WEFT_CHECK(i >= 0 && i < n, OutOfRange)
        << "np::take_along_axis: index " << (i < 0 ? i - n : i) << " is out of range [-" << n
        << ", " << n << ") for axis " << ax << " of shape " << shape_str(a.shape());
  }
  Tensor out = weft::gather(weft::flatten(src), weft::flatten(flat_idx), 0);
  Shape moved = idx.shape();
  return moveaxis(weft::reshape(out, moved), -1, ax);
}

Tensor compress(const Tensor& condition, const Tensor& a, const Axis& axis) {
  check("compress", a);
  WEFT_CHECK(condition.rank() == 1, InvalidArgument)
      << "np::compress: condition must be 1-D, got shape " << shape_str(condition.shape());
  Tensor x = axis.is_none() ? weft::flatten(a) : a;
  int64_t ax =
      axis.is_none() ? 0 : normalize_axis("np::compress", axis.single("compress"), x.rank());
  WEFT_CHECK(condition.dim(0) <= x.dim(ax), InvalidArgument)
      << "np::compress: a condition of length " << condition.dim(0) << " for an axis of length "
      << x.dim(ax);
  return weft::gather(x, nonzero(condition)[0], ax);
}

Tensor select(const std::vector<Tensor>& condlist, const std::vector<Tensor>& choicelist,
              double default_value) {
  WEFT_CHECK(condlist.size() == choicelist.size(), InvalidArgument)
      << "np::select: " << condlist.size() << " conditions but " << choicelist.size() << " choices";
  WEFT_CHECK(!choicelist.empty(), InvalidArgument) << "np::select: expected at least one choice";
  DType t = choicelist[0].dtype();
  for (const Tensor& c : choicelist) t = promote_types(t, c.dtype());
  bool is_float = default_value != std::floor(default_value);  // a weak scalar, as NumPy's 0
  Tensor out = Tensor::scalar(default_value, promote_with_scalar(t, is_float));
  for (size_t i = choicelist.size(); i-- > 0;) {
    WEFT_CHECK(condlist[i].dtype() == kBool, InvalidArgument)
        << "np::select: condition " << i << " must be bool, got " << condlist[i].dtype();
    out = weft::where(condlist[i], choicelist[i], out);
  }
  return out;
}

std::vector<Tensor> nonzero(const Tensor& a) {
  check("nonzero", a);
  Tensor flags = contiguous(weft::not_equal(a, weft::zeros({}, a.dtype())));
  const bool* f = flags.data<bool>();
  int64_t r = a.rank(), n = a.numel();
  Strides strides = contiguous_strides(a.shape());
  std::vector<std::vector<int64_t>> coords(std::max<int64_t>(r, 1));
  for (int64_t i = 0; i < n; ++i) {
    if (!f[i]) continue;
    if (r == 0) coords[0].push_back(0);
    for (int64_t d = 0; d < r; ++d) coords[d].push_back((i / strides[d]) % a.dim(d));
  }
  std::vector<Tensor> out;
  for (const auto& c : coords) out.push_back(Tensor::from_vector(c));
  return out;
}

std::vector<Tensor> where(const Tensor& condition) { return nonzero(condition); }

Tensor sort(const Tensor& a, const Axis& axis) {
  check("sort", a);
  if (axis.is_none()) return weft::sort(weft::flatten(a), 0);
  return weft::sort(a, axis.single("sort"));
}
Tensor argsort(const Tensor& a, const Axis& axis) {
  check("argsort", a);
  if (axis.is_none()) return weft::argsort(weft::flatten(a), 0);
  return weft::argsort(a, axis.single("argsort"));
}

int64_t ndim(const Tensor& a) { return a.rank(); }
Shape shape(const Tensor& a) { return a.shape(); }
int64_t size(const Tensor& a) { return a.numel(); }
bool isscalar(const ArrayLike& a) { return a.is_scalar(); }

}  // namespace weft::np
