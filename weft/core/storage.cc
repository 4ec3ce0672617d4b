#include "weft/core/storage.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "weft/core/errors.h"

namespace weft {
namespace {

// Free blocks by exact (rounded) size, capped so an unusual run cannot pin much memory.
class BlockCache {
 public:
  static constexpr size_t kMaxCachedBytes = size_t{2} << 30;

  void* take(size_t bytes) {
    std::lock_guard lock(mu_);
    auto it = free_.find(bytes);
    if (it == free_.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    cached_bytes_ -= bytes;
    return p;
  }
  bool give(void* p, size_t bytes) {
    std::lock_guard lock(mu_);
    if (cached_bytes_ + bytes > kMaxCachedBytes) return false;
    free_[bytes].push_back(p);
    cached_bytes_ += bytes;
    return true;
  }

 private:
  std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  size_t cached_bytes_ = 0;
};

BlockCache& cache() {
  static auto* c = new BlockCache;  // never destroyed: storages may outlive static destruction
  return *c;
}

// A thread's own free small blocks, in front of the shared cache: taking or giving one needs no
// lock and no hash. Small tensors are made and dropped on every op, and the shared cache's mutex
// and map cost weft::matmul's bf16 128x500x10 product 2% against raw oneDNN (0.947 -> 0.966 of
// it, median of six matmul_bench runs). Capped per thread; blocks over the cap and large ones go
// to the shared cache, and so does everything a thread holds when it ends.
class LocalBlocks {
 public:
  static constexpr size_t kMaxBlockBytes = 65536;  // small blocks: whole 64-byte units
  static constexpr size_t kMaxHeldBytes = size_t{16} << 20;

  LocalBlocks() { alive() = true; }
  ~LocalBlocks() {
    alive() = false;
    for (size_t i = 0; i < free_.size(); ++i) {
      for (void* p : free_[i]) {
        if (!cache().give(p, bytes_of(i))) std::free(p);
      }
    }
  }
  // False once this thread's LocalBlocks is destroyed: storages freed after that (by later
  // thread-exit or static destructors) go to the shared cache. A trivially destructible flag
  // stays readable to the end.
  static bool& alive() {
    thread_local bool flag = false;
    return flag;
  }

  void* take(size_t bytes) {
    if (bytes > kMaxBlockBytes) return nullptr;
    std::vector<void*>& v = free_[index_of(bytes)];
    if (v.empty()) return nullptr;
    void* p = v.back();
    v.pop_back();
    held_ -= bytes;
    return p;
  }
  bool give(void* p, size_t bytes) {
    if (bytes > kMaxBlockBytes || held_ + bytes > kMaxHeldBytes) return false;
    free_[index_of(bytes)].push_back(p);
    held_ += bytes;
    return true;
  }

 private:
  static size_t index_of(size_t bytes) { return bytes / Storage::kAlignment - 1; }
  static size_t bytes_of(size_t index) { return (index + 1) * Storage::kAlignment; }

  std::array<std::vector<void*>, kMaxBlockBytes / Storage::kAlignment> free_;
  size_t held_ = 0;
};

LocalBlocks* local_blocks() {
  thread_local LocalBlocks blocks;
  return LocalBlocks::alive() ? &blocks : nullptr;
}

std::atomic<size_t> in_use{0};
std::atomic<size_t> peak{0};

size_t round_up(size_t bytes) {
  // Small blocks round to 64 bytes, large ones to 4 KiB, so near sizes share a bucket.
  size_t unit = bytes <= 65536 ? Storage::kAlignment : 4096;
  return std::max<size_t>(unit, (bytes + unit - 1) / unit * unit);
}

}  // namespace

std::shared_ptr<Storage> Storage::allocate(size_t bytes, Device device) {
  size_t rounded = round_up(bytes);
  LocalBlocks* local = local_blocks();
  void* p = local ? local->take(rounded) : nullptr;
  if (p == nullptr) p = cache().take(rounded);
  if (p == nullptr) {
    p = std::aligned_alloc(kAlignment, rounded);
    WEFT_CHECK(p != nullptr, Unavailable)
        << "out of memory allocating " << rounded << " bytes for a tensor";
  }
  size_t now = in_use.fetch_add(rounded) + rounded;
  size_t prev = peak.load();
  while (now > prev && !peak.compare_exchange_weak(prev, now)) {
  }
  // One allocation for the storage and its shared count.
  struct Made : Storage {
    Made(void* p, size_t bytes, Device device) : Storage(p, bytes, device) {}
  };
  return std::make_shared<Made>(p, rounded, device);
}

Storage::~Storage() {
  in_use.fetch_sub(bytes_);
  LocalBlocks* local = local_blocks();
  if (local && local->give(data_, bytes_)) return;
  if (!cache().give(data_, bytes_)) std::free(data_);
}

size_t Storage::bytes_in_use() { return in_use.load(); }
size_t Storage::peak_bytes_in_use() { return peak.load(); }
void Storage::reset_peak_bytes_in_use() { peak.store(in_use.load()); }

}  // namespace weft
