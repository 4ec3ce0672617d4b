// float16's own conversions against the CPU's (F16C's vcvtps2ph and vcvtph2ps, which every CPU
// weft builds for has, and through which GCC converts a _Float16 there), bit for bit: every
// float16 to float, and float to float16 at every float16 value, the midpoints between
// neighbours (where round-to-nearest-even decides) and float32 steps either side of both,
// plus NaN payloads, infinities, overflow and values far below the smallest subnormal.
#include "weft/core/half.h"

#include <gtest/gtest.h>
#include <immintrin.h>

#include <bit>
#include <cmath>
#include <limits>

namespace {

using weft::float16;

[[gnu::target("f16c")]] uint16_t reference_bits(float f) {
  return _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
}
[[gnu::target("f16c")]] float reference_float(uint16_t bits) { return _cvtsh_ss(bits); }
uint32_t bits_of(float f) { return std::bit_cast<uint32_t>(f); }
float float_of(uint32_t u) { return std::bit_cast<float>(u); }

TEST(Float16, EveryValueWidensExactly) {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    float16 h;
    h.bits = static_cast<uint16_t>(b);
    ASSERT_EQ(bits_of(static_cast<float>(h)), bits_of(reference_float(h.bits))) << "bits " << b;
  }
}

TEST(Float16, NarrowingRoundsAsTheHardwareDoes) {
  auto expect_same = [](float f) {
    ASSERT_EQ(float16(f).bits, reference_bits(f)) << "float bits " << bits_of(f);
  };
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    float v = reference_float(static_cast<uint16_t>(b));
    if (std::isnan(v)) continue;
    uint32_t u = bits_of(v);
    for (uint32_t d = 0; d < 4; ++d) {  // the value and three float32 steps around it
      expect_same(float_of(u + d));
      expect_same(float_of(u - d));
    }
    // The midpoint to the next float16 up in magnitude, and its float32 neighbours.
    float next = reference_float(static_cast<uint16_t>((b & 0x7fffu) == 0x7bffu ? b : b + 1));
    if ((b & 0x7fffu) < 0x7c00u && !std::isnan(next) && !std::isinf(v)) {
      float mid = v + (next - v) / 2;
      if ((b & 0x7fffu) == 0x7bffu) mid = std::copysign(65520.0f, v);  // to infinity from here
      for (int d = -2; d <= 2; ++d) expect_same(float_of(bits_of(mid) + d));
    }
  }
  // NaN payloads (quiet and signalling, both signs), infinities, overflow, tiny values.
  for (uint32_t payload : {0x1u, 0x2000u, 0x3ff000u, 0x400000u, 0x7fffffu, 0x12345u}) {
    expect_same(float_of(0x7f800000u | payload));
    expect_same(float_of(0xff800000u | payload));
  }
  for (float f : {std::numeric_limits<float>::infinity(), 65536.0f, 1e10f,
                  std::numeric_limits<float>::max(), std::numeric_limits<float>::min(),
                  std::numeric_limits<float>::denorm_min(), 1e-30f, 0x1p-25f, 0x1p-26f}) {
    expect_same(f);
    expect_same(-f);
  }
  for (uint32_t u = 0; u < 0x80000000u; u += 0x1001u) {  // a sweep over every exponent
    expect_same(float_of(u));
    expect_same(float_of(u | 0x80000000u));
  }
}

}  // namespace
