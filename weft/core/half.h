// 16-bit floating types: IEEE float16 (binary16) and bfloat16 (the top half of a float32).
// Both convert to and from float with round-to-nearest-even; arithmetic happens in float.
#pragma once

#include <bit>
#include <cstdint>

namespace weft {

struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  bfloat16(float f) : bits(from_float(f)) {}  // NOLINT(google-explicit-constructor)
  operator float() const {                    // NOLINT(google-explicit-constructor)
    return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
  }
  static uint16_t from_float(float f) {
    auto u = std::bit_cast<uint32_t>(f);
    uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;  // round to nearest even
    uint32_t quiet_nan = (u >> 16) | 0x40;
    // A select rather than an early return, so that loops converting floats vectorize.
    return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
  }
};

// Converted with integer and float32 arithmetic rather than through _Float16. Without
// AVX512-FP16, GCC 12 converts a _Float16 one element at a time, and it turns a NaN test (v != v)
// on a widened float16 back into a float16 comparison, a libgcc call (__nehf2) per element: float16
// max pooling ran 22x slower than bfloat16's. These conversions are bit-identical to the hardware
// ones (half_test.cc checks every float16 and the rounding boundaries between them).
struct float16 {
  uint16_t bits = 0;
  float16() = default;
  float16(float f) : bits(from_float(f)) {}  // NOLINT(google-explicit-constructor)
  operator float() const {                   // NOLINT(google-explicit-constructor)
    uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
    uint32_t magnitude = bits & 0x7fffu;
    uint32_t shifted = magnitude << 13;  // exponent and mantissa in float32's places
    // Normal: rebias the exponent (15 -> 127). Infinity and NaN: exponent 31 -> 255.
    uint32_t normal = shifted + ((127u - 15u) << 23);
    // NaN comes out quiet, as from the hardware conversion.
    uint32_t special = (shifted + ((255u - 31u) << 23)) | (magnitude > 0x7c00u ? 0x400000u : 0u);
    // Subnormal or zero (m * 2^-24): read the mantissa under exponent 2^-14 and take 2^-14 off.
    uint32_t subnormal = std::bit_cast<uint32_t>(std::bit_cast<float>(shifted + (113u << 23)) -
                                                 std::bit_cast<float>(113u << 23));
    uint32_t u = magnitude >= 0x7c00u ? special : magnitude < 0x0400u ? subnormal : normal;
    return std::bit_cast<float>(u | sign);
  }
  static uint16_t from_float(float f) {
    uint32_t u = std::bit_cast<uint32_t>(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7fffffffu;
    // NaN stays NaN (quiet, the payload's top bits kept); 65520 and above round to infinity.
    uint32_t special = a > 0x7f800000u ? 0x7e00u | ((a >> 13) & 0x3ffu) : 0x7c00u;
    // Below 2^-14 (float16 subnormals): adding 0.5 puts the value's float16 mantissa in the low
    // bits, rounded to nearest even by the float32 addition itself.
    uint32_t subnormal =
        std::bit_cast<uint32_t>(std::bit_cast<float>(a) + 0.5f) - std::bit_cast<uint32_t>(0.5f);
    // Normal: rebias, then round the 13 dropped bits to nearest even (a carry may bump the
    // exponent, up to infinity).
    uint32_t normal = (a - ((127u - 15u) << 23) + 0xfffu + ((a >> 13) & 1u)) >> 13;
    uint32_t h = a >= 0x47800000u ? special : a < 0x38800000u ? subnormal : normal;
    return static_cast<uint16_t>(h | sign);
  }
};

static_assert(sizeof(bfloat16) == 2 && sizeof(float16) == 2);

}  // namespace weft
