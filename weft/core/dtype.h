// Element types of weft tensors, NumPy's promotion rules between them, and the C++ type of each.
//
//   weft::DType t = weft::promote_types(weft::kInt32, weft::kFloat32);  // kFloat64, as NumPy
//   weft::dispatch_dtype(t, [&]<typename T>() { ... });                  // T = double
#pragma once

#include <cstdint>
#include <ostream>
#include <string_view>
#include <utility>

#include "weft/core/errors.h"
#include "weft/core/half.h"

namespace weft {

enum class DType : uint8_t {
  kBool,
  kUInt8,
  kInt32,
  kInt64,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64
};

inline constexpr DType kBool = DType::kBool;
inline constexpr DType kUInt8 = DType::kUInt8;
inline constexpr DType kInt32 = DType::kInt32;
inline constexpr DType kInt64 = DType::kInt64;
inline constexpr DType kFloat16 = DType::kFloat16;
inline constexpr DType kBFloat16 = DType::kBFloat16;
inline constexpr DType kFloat32 = DType::kFloat32;
inline constexpr DType kFloat64 = DType::kFloat64;

// "float32", "bfloat16", ... (the NumPy / TensorFlow spelling).
std::string_view dtype_name(DType t);
// Inverse of dtype_name; also accepts "float", "double", "int", "half". Throws InvalidArgument.
DType dtype_from_name(std::string_view name);
std::ostream& operator<<(std::ostream& os, DType t);

constexpr int64_t dtype_size(DType t) {
  switch (t) {
    case DType::kBool:
    case DType::kUInt8:
      return 1;
    case DType::kFloat16:
    case DType::kBFloat16:
      return 2;
    case DType::kInt32:
    case DType::kFloat32:
      return 4;
    case DType::kInt64:
    case DType::kFloat64:
      return 8;
  }
  return 0;
}
constexpr bool is_floating(DType t) {
  return t == kFloat16 || t == kBFloat16 || t == kFloat32 || t == kFloat64;
}
constexpr bool is_integral(DType t) { return t == kUInt8 || t == kInt32 || t == kInt64; }
// Half types are stored in 16 bits but computed in float32.
constexpr bool is_half(DType t) { return t == kFloat16 || t == kBFloat16; }

// NumPy's promote_types for two arrays (bfloat16 behaves like ml_dtypes: with float16 -> float32).
DType promote_types(DType a, DType b);
// The dtype of `tensor op scalar` where the scalar is a C++ number: NumPy's rule for a Python
// scalar, i.e. the tensor keeps its dtype unless a float scalar meets an integer/bool tensor
// (then float64), or an integer scalar meets a bool tensor (then int64).
DType promote_with_scalar(DType tensor, bool scalar_is_float);

template <DType D>
struct CppType;
template <>
struct CppType<kBool> {
  using type = bool;
};
template <>
struct CppType<kUInt8> {
  using type = uint8_t;
};
template <>
struct CppType<kInt32> {
  using type = int32_t;
};
template <>
struct CppType<kInt64> {
  using type = int64_t;
};
template <>
struct CppType<kFloat16> {
  using type = float16;
};
template <>
struct CppType<kBFloat16> {
  using type = bfloat16;
};
template <>
struct CppType<kFloat32> {
  using type = float;
};
template <>
struct CppType<kFloat64> {
  using type = double;
};

template <typename T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<bool>() {
  return kBool;
}
template <>
constexpr DType dtype_of<uint8_t>() {
  return kUInt8;
}
template <>
constexpr DType dtype_of<int32_t>() {
  return kInt32;
}
template <>
constexpr DType dtype_of<int64_t>() {
  return kInt64;
}
template <>
constexpr DType dtype_of<float16>() {
  return kFloat16;
}
template <>
constexpr DType dtype_of<bfloat16>() {
  return kBFloat16;
}
template <>
constexpr DType dtype_of<float>() {
  return kFloat32;
}
template <>
constexpr DType dtype_of<double>() {
  return kFloat64;
}

// dispatch_dtype for a floating dtype only: f is instantiated for the four floating types alone
// (functions whose result is always floating compile half the code). Internal for another dtype.
template <typename F>
decltype(auto) dispatch_float_dtype(DType t, F&& f) {
  switch (t) {
    case DType::kFloat16:
      return f.template operator()<float16>();
    case DType::kBFloat16:
      return f.template operator()<bfloat16>();
    case DType::kFloat32:
      return f.template operator()<float>();
    case DType::kFloat64:
      return f.template operator()<double>();
    default:
      break;
  }
  WEFT_FAIL(Internal) << "dispatch_float_dtype: " << t << " is not a floating dtype";
  return f.template operator()<float>();
}

// Calls f.template operator()<T>() with T the C++ type of `t`.
template <typename F>
decltype(auto) dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::kBool:
      return f.template operator()<bool>();
    case DType::kUInt8:
      return f.template operator()<uint8_t>();
    case DType::kInt32:
      return f.template operator()<int32_t>();
    case DType::kInt64:
      return f.template operator()<int64_t>();
    default:
      return dispatch_float_dtype(t, std::forward<F>(f));
  }
}

// The type arithmetic on T is carried out in: float for the half types, T otherwise.
template <typename T>
struct ComputeType {
  using type = T;
};
template <>
struct ComputeType<float16> {
  using type = float;
};
template <>
struct ComputeType<bfloat16> {
  using type = float;
};
template <typename T>
using compute_t = typename ComputeType<T>::type;

}  // namespace weft
