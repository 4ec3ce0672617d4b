// weft::np's dtype helpers: finfo, issubdtype, promote_types, result_type, as NumPy's.
//
//   np::finfo(weft::kFloat32).eps;                          // 1.1920929e-07
//   np::issubdtype(weft::kInt32, np::DTypeKind::kInteger);  // true
//   np::result_type({x_int32, 1.5});                        // float64 (a weak float)
#pragma once

#include <initializer_list>

#include "weft/core/tensor.h"
#include "weft/np/array_like.h"

namespace weft::np {

// Machine limits of a floating dtype (float16, bfloat16, float32, float64).
struct finfo {
  explicit finfo(DType dtype);
  DType dtype;
  int bits;
  double eps;         // the gap between 1 and the next larger value
  double max, min;    // the largest finite value and its negative
  double tiny;        // the smallest positive normal value (smallest_normal)
  int precision;      // decimal digits of precision
  double resolution;  // 10^-precision
};

// NumPy's abstract dtype classes (np.generic, np.number, np.integer, ...).
enum class DTypeKind {
  kGeneric,
  kNumber,
  kInteger,
  kSignedInteger,
  kUnsignedInteger,
  kInexact,
  kFloating,
  kBool
};

bool issubdtype(DType arg1, DType arg2);
bool issubdtype(DType arg1, DTypeKind kind);
DType promote_types(DType a, DType b);
// The dtype NumPy gives an operation on all of `args`: arrays promote, then numbers join weakly.
DType result_type(std::initializer_list<ArrayLike> args);

}  // namespace weft::np
