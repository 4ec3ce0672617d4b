#include "weft/core/storage.h"

#include <gtest/gtest.h>

#include <thread>

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

TEST(Storage, ReusesAFreedBlockOfTheSameSize) {
  void* first;
  {
    auto a = Storage::allocate(1000);
    first = a->data();
  }
  auto b = Storage::allocate(1000);
  EXPECT_EQ(b->data(), first);
  auto c = Storage::allocate(1000);  // b holds that block now
  EXPECT_NE(c->data(), first);
}

// A thread keeps its own freed small blocks; when it ends they go to the shared cache, where
// another thread finds them.
TEST(Storage, AThreadsBlocksOutliveIt) {
  constexpr size_t kBytes = 64 * 997;  // a size no other test uses
  void* freed_there = nullptr;
  size_t base = Storage::bytes_in_use();
  std::thread([&] {
    auto a = Storage::allocate(kBytes);
    freed_there = a->data();
    EXPECT_EQ(Storage::bytes_in_use(), base + kBytes);
  }).join();
  EXPECT_EQ(Storage::bytes_in_use(), base);
  auto b = Storage::allocate(kBytes);
  EXPECT_EQ(b->data(), freed_there);
}

}  // namespace
}  // namespace weft
