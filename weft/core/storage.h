// The memory behind tensors: a 64-byte aligned block, shared by every view of it.
// Blocks are recycled by size (training loops allocate the same sizes every step), so steady-state
// steps neither call the system allocator nor fault in fresh pages.
#pragma once

#include <cstddef>
#include <memory>

#include "weft/core/device.h"

namespace weft {

class Storage {
 public:
  static constexpr size_t kAlignment = 64;
  // Uninitialised memory of at least `bytes` bytes.
  static std::shared_ptr<Storage> allocate(size_t bytes, Device device = {});
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  const Device& device() const { return device_; }

  // Bytes currently handed out to live storages, and the most ever at once (for benchmarks).
  static size_t bytes_in_use();
  static size_t peak_bytes_in_use();
  // Starts a new peak from what is in use now (to measure one phase of a program).
  static void reset_peak_bytes_in_use();

 protected:  // made by allocate() only
  Storage(void* data, size_t bytes, Device device) : data_(data), bytes_(bytes), device_(device) {}

 private:
  void* data_;
  size_t bytes_;
  Device device_;
};

}  // namespace weft
