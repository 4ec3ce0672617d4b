#include "weft/core/storage.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

TEST(Storage, CountsBytesInUseAndThePeak) {
  size_t base = Storage::bytes_in_use();
  Storage::reset_peak_bytes_in_use();
  EXPECT_EQ(Storage::peak_bytes_in_use(), base);
  {
    auto a = Storage::allocate(1 << 20);
    auto b = Storage::allocate(100);  // rounds up to 64-byte units
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % Storage::kAlignment, 0u);
    EXPECT_EQ(Storage::bytes_in_use(), base + (1 << 20) + 128);
  }
  EXPECT_EQ(Storage::bytes_in_use(), base);
  EXPECT_EQ(Storage::peak_bytes_in_use(), base + (1 << 20) + 128);
  Storage::reset_peak_bytes_in_use();
  EXPECT_EQ(Storage::peak_bytes_in_use(), base);
}

}  // namespace
}  // namespace weft
