// 16-bit floating types: IEEE float16 (binary16) and bfloat16 (the top half of a float32).
// Both convert to and from float with round-to-nearest-even; arithmetic happens in float.
#pragma once

#include <cstdint>
#include <cstring>

namespace weft {

struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  bfloat16(float f) : bits(from_float(f)) {}  // NOLINT(google-explicit-constructor)
  operator float() const {                    // NOLINT(google-explicit-constructor)
    uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  static uint16_t from_float(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;  // round to nearest even
    uint32_t quiet_nan = (u >> 16) | 0x40;
    // A select rather than an early return, so that loops converting floats vectorize.
    return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
  }
};

struct float16 {
  uint16_t bits = 0;
  float16() = default;
  float16(float f) {  // NOLINT(google-explicit-constructor)
    _Float16 h = static_cast<_Float16>(f);
    std::memcpy(&bits, &h, 2);
  }
  operator float() const {  // NOLINT(google-explicit-constructor)
    _Float16 h;
    std::memcpy(&h, &bits, 2);
    return static_cast<float>(h);
  }
};

static_assert(sizeof(bfloat16) == 2 && sizeof(float16) == 2);

}  // namespace weft
