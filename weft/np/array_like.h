// weft::np::ArrayLike: what NumPy's binary functions accept, a tensor or a C++ number. A number
// is "weak", as a Python scalar in NumPy 1.x: next to an int32 array, 1 stays int32 and 0.5 makes
// float64; next to a float32 array, 0.5 stays float32; an integer the array's type cannot hold
// makes int64; a bool takes the array's type. Numbers alone give bool, int64 or float64.
//
//   np::add(x, 1);  np::power(2, x);  np::maximum(x, y);
#pragma once

#include <initializer_list>
#include <type_traits>
#include <utility>
#include <vector>

#include "weft/autodiff/variable.h"
#include "weft/core/tensor.h"

namespace weft::np {

class ArrayLike {
 public:
  ArrayLike(const Tensor& t) : tensor_(t) {}            // NOLINT(google-explicit-constructor)
  ArrayLike(const Variable& v) : tensor_(v.value()) {}  // NOLINT(google-explicit-constructor)
  template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
  ArrayLike(T v)  // NOLINT(google-explicit-constructor)
      : scalar_(v), is_scalar_(true), is_bool_(std::is_same_v<T, bool>) {}

  bool is_scalar() const { return is_scalar_; }
  // The tensor itself, or the number as a 0-d tensor of the type NumPy gives it next to `other`.
  Tensor tensor_next_to(const ArrayLike& other) const;
  // The tensor, or the number alone (int64 or float64).
  Tensor tensor() const;

 private:
  Tensor tensor_;
  Scalar scalar_ = 0;
  bool is_scalar_ = false;
  bool is_bool_ = false;
};

// NumPy's axis argument: None (the default: every axis, or the flattened array), one axis, or
// several. Negative axes count from the end.
//
//   np::sum(x);  np::sum(x, 1);  np::sum(x, {0, 2}, /*keepdims=*/true);
class Axis {
 public:
  Axis() = default;
  Axis(int64_t axis) : axes_{axis}, none_(false) {}  // NOLINT(google-explicit-constructor)
  Axis(int axis) : axes_{axis}, none_(false) {}      // NOLINT(google-explicit-constructor)
  Axis(std::initializer_list<int64_t> axes) : axes_(axes), none_(false) {}
  Axis(std::vector<int64_t> axes) : axes_(std::move(axes)), none_(false) {}  // NOLINT

  bool is_none() const { return none_; }
  // The axes as weft's reductions take them (empty = every axis).
  const std::vector<int64_t>& axes() const { return axes_; }
  // The one axis; InvalidArgument naming `op` when there are several (None is not allowed).
  int64_t single(const char* op) const;

 private:
  std::vector<int64_t> axes_;
  bool none_ = true;
};

// Both operands as tensors, with NumPy's weak-scalar promotion between them.
std::pair<Tensor, Tensor> operands(const ArrayLike& a, const ArrayLike& b);

}  // namespace weft::np
