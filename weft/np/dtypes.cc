#include "weft/np/dtypes.h"

#include <cmath>
#include <limits>

namespace weft::np {

finfo::finfo(DType t) : dtype(t) {
  switch (t) {
    case kFloat16:
      bits = 16, eps = std::ldexp(1.0, -10), max = 65504.0, tiny = std::ldexp(1.0, -14),
      precision = 3;
      break;
    case kBFloat16:
      bits = 16, eps = std::ldexp(1.0, -7), max = 3.3895313892515355e38,
      tiny = std::ldexp(1.0, -126), precision = 2;
      break;
    case kFloat32:
      bits = 32, eps = std::numeric_limits<float>::epsilon(),
      max = std::numeric_limits<float>::max(), tiny = std::numeric_limits<float>::min(),
      precision = 6;
      break;
    case kFloat64:
      bits = 64, eps = std::numeric_limits<double>::epsilon(),
      max = std::numeric_limits<double>::max(), tiny = std::numeric_limits<double>::min(),
      precision = 15;
      break;
    default:
      WEFT_FAIL(InvalidArgument) << "np::finfo: " << t << " is not a floating dtype";
  }
  min = -max;
  resolution = std::pow(10.0, -precision);
}

bool issubdtype(DType arg1, DType arg2) { return arg1 == arg2; }

bool issubdtype(DType t, DTypeKind kind) {
  switch (kind) {
    case DTypeKind::kGeneric:
      return true;
    case DTypeKind::kNumber:
      return t != kBool;
    case DTypeKind::kInteger:
      return is_integral(t);
    case DTypeKind::kSignedInteger:
      return t == kInt32 || t == kInt64;
    case DTypeKind::kUnsignedInteger:
      return t == kUInt8;
    case DTypeKind::kInexact:
    case DTypeKind::kFloating:
      return is_floating(t);
    case DTypeKind::kBool:
      return t == kBool;
  }
  return false;
}

DType promote_types(DType a, DType b) { return weft::promote_types(a, b); }

DType result_type(std::initializer_list<ArrayLike> args) {
  WEFT_CHECK(args.size() > 0, InvalidArgument) << "np::result_type: expected at least one argument";
  bool any_array = false;
  DType t = kBool;
  for (const ArrayLike& a : args) {
    if (a.is_scalar()) continue;
    t = any_array ? weft::promote_types(t, a.tensor().dtype()) : a.tensor().dtype();
    any_array = true;
  }
  for (const ArrayLike& a : args) {
    if (!a.is_scalar()) continue;
    // Next to the arrays a number is weak (ArrayLike's rules); numbers alone promote.
    DType s =
        any_array ? a.tensor_next_to(ArrayLike(Tensor::empty({0}, t))).dtype() : a.tensor().dtype();
    t = weft::promote_types(t, s);
  }
  return t;
}

}  // namespace weft::np
