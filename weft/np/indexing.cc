// NumPy indexing in three steps: bool masks become integer arrays (their nonzero positions),
// newaxis entries become length-1 axes and every ":"/slice is applied as one weft::slice; then
// plain integers select (basic indexing), or the advanced entries (arrays, and integers next to
// them) are raveled into one flat index over their axes and gathered.
#include "weft/np/indexing.h"

#include <algorithm>

#include "weft/np/array.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/scatter.h"
#include "weft/ops/shape_ops.h"

namespace weft::np {

SliceIndex slice(Bound start, Bound stop, int64_t step) {
  WEFT_CHECK(step != 0, InvalidArgument) << "np::slice: step cannot be zero";
  return SliceIndex{start.value(), stop.value(), step};
}

namespace {

// One axis of the array being indexed, after masks and newaxis are resolved.
struct AxisIndex {
  enum class Kind { kSlice, kInteger, kArray } kind = Kind::kSlice;
  SliceIndex slice;
  int64_t integer = 0;
  Tensor array;  // int64
  // The place of its entry in the index: advanced entries are adjacent when their slots are
  // consecutive (an ellipsis standing for no axes still takes a slot, and so separates them).
  int64_t slot = 0;
};

// The entries for each axis of `x` (newaxis inserted into x as length-1 axes; each k-dimensional
// bool mask becomes k integer arrays, its nonzero positions).
std::vector<AxisIndex> resolve(Tensor& x, const std::vector<Index>& index) {
  int64_t consumed = 0;
  bool ellipsis = false;
  for (const Index& i : index) {
    if (i.kind() == Index::Kind::kArray) {
      const Tensor& t = i.array();
      WEFT_CHECK(t.defined(), InvalidArgument) << "np::at: an index tensor is undefined";
      WEFT_CHECK(t.dtype() == kBool || t.dtype() == kInt32 || t.dtype() == kInt64, InvalidArgument)
          << "np::at: index arrays must be integers or bool, got " << t.dtype();
      WEFT_CHECK(t.dtype() != kBool || t.rank() >= 1, InvalidArgument)
          << "np::at: a boolean mask needs at least one dimension";
      consumed += t.dtype() == kBool ? t.rank() : 1;
    } else if (i.kind() == Index::Kind::kEllipsis) {
      WEFT_CHECK(!ellipsis, InvalidArgument) << "np::at: an index can only have one ellipsis";
      ellipsis = true;
    } else if (i.kind() != Index::Kind::kNewAxis) {
      ++consumed;
    }
  }
  WEFT_CHECK(consumed <= x.rank(), OutOfRange)
      << "np::at: too many indices: the array is " << x.rank() << "-dimensional, but " << consumed
      << " were indexed";
  std::vector<Index> entries = index;
  if (!ellipsis) entries.emplace_back(np::ellipsis);
  Shape shape;
  std::vector<AxisIndex> axes;
  int64_t src = 0, slot = 0;
  for (const Index& i : entries) {
    size_t first_new = axes.size();
    switch (i.kind()) {
      case Index::Kind::kNewAxis:
        shape.push_back(1);
        axes.push_back({});
        break;
      case Index::Kind::kEllipsis:
        for (int64_t k = 0; k < x.rank() - consumed; ++k) {
          shape.push_back(x.dim(src++));
          axes.push_back({});
        }
        if (x.rank() == consumed) ++slot;  // no axes, but it still separates its neighbours
        break;
      case Index::Kind::kSlice:
        shape.push_back(x.dim(src++));
        axes.push_back({AxisIndex::Kind::kSlice, i.slice(), 0, {}, 0});
        break;
      case Index::Kind::kInteger:
        shape.push_back(x.dim(src++));
        axes.push_back({AxisIndex::Kind::kInteger, {}, i.integer(), {}, 0});
        break;
      case Index::Kind::kArray: {
        const Tensor& t = i.array();
        if (t.dtype() != kBool) {
          shape.push_back(x.dim(src++));
          axes.push_back({AxisIndex::Kind::kArray, {}, 0, cast(t, kInt64), 0});
          break;
        }
        for (int64_t k = 0; k < t.rank(); ++k) {
          WEFT_CHECK(t.dim(k) == x.dim(src + k), OutOfRange)
              << "np::at: boolean index did not match: axis " << src + k << " has size "
              << x.dim(src + k) << " but the mask's dimension " << k << " is " << t.dim(k);
        }
        for (const Tensor& positions : np::nonzero(t)) {
          shape.push_back(x.dim(src++));
          axes.push_back({AxisIndex::Kind::kArray, {}, 0, positions, 0});
        }
        break;
      }
    }
    for (size_t k = first_new; k < axes.size(); ++k) axes[k].slot = slot++;
  }
  x = weft::reshape(x, shape);
  return axes;
}

// An index in [-n, n) made non-negative; OutOfRange naming the axis otherwise.
int64_t wrap(int64_t i, int64_t n, int64_t axis) {
  WEFT_CHECK(i >= -n && i < n, OutOfRange)
      << "np::at: index " << i << " is out of bounds for axis " << axis << " with size " << n;
  return i < 0 ? i + n : i;
}

Tensor wrap(const Tensor& idx, int64_t n, int64_t axis) {
  std::vector<int64_t> v = idx.to_vector<int64_t>();
  for (int64_t& i : v) i = wrap(i, n, axis);
  return Tensor::from_vector(v, idx.shape());
}

}  // namespace

Tensor At::get() const {
  WEFT_CHECK(a_.defined(), InvalidArgument) << "np::at: the array is undefined";
  Tensor x = a_;
  std::vector<AxisIndex> axes = resolve(x, index_);
  // Slices first (integers and arrays keep their axis whole for now).
  std::vector<Slice> slices(axes.size());
  bool advanced = false;
  for (size_t k = 0; k < axes.size(); ++k) {
    if (axes[k].kind == AxisIndex::Kind::kSlice) {
      slices[k] = Slice{axes[k].slice.start, axes[k].slice.stop, axes[k].slice.step};
    }
    advanced |= axes[k].kind == AxisIndex::Kind::kArray;
  }
  x = weft::slice(x, slices);
  if (!advanced) {
    // Basic indexing: integers select, from the last so earlier axes keep their numbers.
    for (size_t k = axes.size(); k-- > 0;) {
      if (axes[k].kind != AxisIndex::Kind::kInteger) continue;
      int64_t axis = static_cast<int64_t>(k);
      x = weft::select(x, axis, wrap(axes[k].integer, x.dim(axis), axis));
    }
    return x;
  }
  // Advanced: integers join the arrays as 0-d arrays; all broadcast to one shape B.
  std::vector<int64_t> adv;
  std::vector<Tensor> arrays;
  for (size_t k = 0; k < axes.size(); ++k) {
    int64_t axis = static_cast<int64_t>(k);
    if (axes[k].kind == AxisIndex::Kind::kArray) {
      adv.push_back(axis);
      arrays.push_back(wrap(axes[k].array, x.dim(axis), axis));
    } else if (axes[k].kind == AxisIndex::Kind::kInteger) {
      adv.push_back(axis);
      arrays.push_back(Tensor::scalar(wrap(axes[k].integer, x.dim(axis), axis), kInt64));
    }
  }
  arrays = np::broadcast_arrays(arrays);
  Shape b_shape = arrays[0].shape();
  // The advanced axes first, raveled into one, and the flat index gathered from it.
  std::vector<int64_t> perm = adv;
  Shape rest;
  for (int64_t k = 0; k < x.rank(); ++k) {
    if (std::find(adv.begin(), adv.end(), k) == adv.end()) {
      perm.push_back(k);
      rest.push_back(x.dim(k));
    }
  }
  Tensor flat_index = weft::zeros(b_shape, kInt64);
  int64_t extent = 1;
  for (size_t j = adv.size(); j-- > 0;) {
    flat_index = weft::add(flat_index, weft::mul(arrays[j], Tensor::scalar(extent, kInt64)));
    extent *= x.dim(adv[j]);
  }
  Shape merged = {extent};
  merged.insert(merged.end(), rest.begin(), rest.end());
  Tensor out = weft::gather(weft::reshape(weft::transpose(x, perm), merged), flat_index, 0);
  // Adjacent advanced indices put B where the first of them was; otherwise B stays first.
  bool adjacent =
      axes[adv.back()].slot - axes[adv.front()].slot + 1 == static_cast<int64_t>(adv.size());
  if (!adjacent || adv.front() == 0) return out;
  std::vector<int64_t> src, dst;
  int64_t nb = static_cast<int64_t>(b_shape.size());
  for (int64_t j = 0; j < nb; ++j) {
    src.push_back(j);
    dst.push_back(adv.front() + j);
  }
  return np::moveaxis(out, src, dst);
}

Tensor At::flat_positions() const {
  Tensor positions = weft::reshape(weft::arange(0, a_.numel(), 1, kInt64), a_.shape());
  return At(positions, index_).get();
}

Tensor At::set(const ArrayLike& values) const {
  WEFT_CHECK(a_.defined(), InvalidArgument) << "np::at: the array is undefined";
  return scatter_flat_update(a_, flat_positions(), values.tensor_next_to(a_));
}

Tensor At::add(const ArrayLike& values) const {
  WEFT_CHECK(a_.defined(), InvalidArgument) << "np::at: the array is undefined";
  return scatter_flat_add(a_, flat_positions(), values.tensor_next_to(a_));
}

At at(const Tensor& a, std::vector<Index> index) { return At(a, std::move(index)); }

}  // namespace weft::np
