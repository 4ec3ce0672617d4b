// NumPy indexing on weft tensors: basic slices, newaxis and ellipsis, integer arrays on several
// axes, boolean masks, their combinations, and functional updates. np::at(a, {...}) is a[...]:
//
//   NumPy                      weft::np
//   a[1:3, ::2]                np::at(a, {np::slice(1, 3), np::slice(np::_, np::_, 2)})
//   a[:, 0]                    np::at(a, {np::_, 0})
//   a[..., None]               np::at(a, {np::ellipsis, np::newaxis})
//   a[[0, 2], [1, 3]]          np::at(a, {rows, cols})            (int tensors)
//   a[a > 0]                   np::at(a, {np::greater(a, 0)})     (a bool tensor)
//   b = a.copy(); b[m] = 0     b = np::at(a, {m}).set(0)          (a new tensor; a is unchanged)
//   np.add.at(a, idx, v)       np::at(a, {idx}).add(v)            (repeated indices accumulate)
//
// Reading converts to a Tensor (`weft::Tensor y = np::at(a, {...});` or `.get()`). Results follow
// NumPy's rules: integers drop their axis; advanced indices broadcast together and their result
// axes go where the first of them was when they are adjacent, first otherwise. Everything is
// differentiable (slices and gathers forward, scatters back). Out-of-range indices raise
// OutOfRange naming the axis and its size.
#pragma once

#include <optional>
#include <vector>

#include "weft/core/tensor.h"
#include "weft/np/array_like.h"

namespace weft::np {

// ":" as an index, and an omitted bound in np::slice.
struct Placeholder {};
inline constexpr Placeholder _{};
// None in an index: a new axis of length 1.
struct NewAxis {};
inline constexpr NewAxis newaxis{};
// "..." in an index: as many ":" as the other indices leave.
struct Ellipsis {};
inline constexpr Ellipsis ellipsis{};

// One bound of a slice: an integer (negative counts from the end) or np::_ (omitted).
class Bound {
 public:
  Bound(int64_t v) : value_(v) {}  // NOLINT(google-explicit-constructor)
  Bound(int v) : value_(v) {}      // NOLINT(google-explicit-constructor)
  Bound(Placeholder) {}            // NOLINT(google-explicit-constructor)
  std::optional<int64_t> value() const { return value_; }

 private:
  std::optional<int64_t> value_;
};

struct SliceIndex {
  std::optional<int64_t> start, stop;
  int64_t step = 1;
};
// start:stop:step (NumPy's 1:3 is slice(1, 3); 1: is slice(1); :3 is slice(np::_, 3)).
SliceIndex slice(Bound start, Bound stop = _, int64_t step = 1);

// One entry of an index.
class Index {
 public:
  enum class Kind { kInteger, kSlice, kNewAxis, kEllipsis, kArray };
  Index(int64_t i) : kind_(Kind::kInteger), integer_(i) {}  // NOLINT(google-explicit-constructor)
  Index(int i) : kind_(Kind::kInteger), integer_(i) {}      // NOLINT(google-explicit-constructor)
  Index(Placeholder) : kind_(Kind::kSlice) {}               // NOLINT(google-explicit-constructor)
  Index(SliceIndex s) : kind_(Kind::kSlice), slice_(s) {}   // NOLINT(google-explicit-constructor)
  Index(NewAxis) : kind_(Kind::kNewAxis) {}                 // NOLINT(google-explicit-constructor)
  Index(Ellipsis) : kind_(Kind::kEllipsis) {}               // NOLINT(google-explicit-constructor)
  // An integer array (int32/int64) or a boolean mask.
  Index(const Tensor& array) : kind_(Kind::kArray), array_(array) {}  // NOLINT

  Kind kind() const { return kind_; }
  int64_t integer() const { return integer_; }
  const SliceIndex& slice() const { return slice_; }
  const Tensor& array() const { return array_; }

 private:
  Kind kind_;
  int64_t integer_ = 0;
  SliceIndex slice_;
  Tensor array_;
};

// a[index] as an expression: read it, or make an updated copy of a.
class At {
 public:
  At(Tensor a, std::vector<Index> index) : a_(std::move(a)), index_(std::move(index)) {}
  Tensor get() const;
  operator Tensor() const { return get(); }  // NOLINT(google-explicit-constructor)
  // A copy of a with a[index] = values (broadcast to the selection, cast to a's dtype).
  Tensor set(const ArrayLike& values) const;
  // A copy of a with values added at a[index]; repeated positions accumulate (np.add.at).
  Tensor add(const ArrayLike& values) const;

 private:
  Tensor flat_positions() const;
  Tensor a_;
  std::vector<Index> index_;
};

At at(const Tensor& a, std::vector<Index> index);

}  // namespace weft::np
