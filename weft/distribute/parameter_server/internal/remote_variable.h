// A variable whose value lives on parameter servers (ParameterServerStrategy's variables): the
// binding that pulls it before a read and writes an assignment through, and the snapshot scope
// in which a closure reads each variable once.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "weft/autodiff/variable.h"
#include "weft/distribute/parameter_server/ps_client.h"

namespace weft::distribute::parameter_server::internal {

// Ids of the writes made outside closures (the chief's initial values and assignments): the top
// bit set, then 31 bits drawn per process, then a counter, so that they never meet a
// coordinator's closure ids (which count from 1) nor the writes of an earlier chief.
class WriteIds {
 public:
  explicit WriteIds(uint64_t seed) : prefix_((uint64_t{1} << 63) | ((seed & 0x7fffffff) << 32)) {}
  uint64_t next() { return prefix_ | (counter_++ & 0xffffffffu); }

 private:
  const uint64_t prefix_;
  std::atomic<uint64_t> counter_{0};
};

class RemoteVariable final : public VariableBinding {
 public:
  // One piece along axis 0, `offset` bytes into the whole variable's value.
  struct Shard {
    std::shared_ptr<ParameterServerClient> ps;
    VariableSpec spec;
    std::size_t offset = 0;
  };
  RemoteVariable(std::vector<Shard> shards, std::shared_ptr<WriteIds> ids)
      : shards_(std::move(shards)), ids_(std::move(ids)) {}

  // Creates the shards on their ps tasks (zero-filled until the first write).
  void create() const;
  void refresh(const Tensor& cache) const override;
  void write(const Tensor& value) const override;
  const std::vector<Shard>& shards() const { return shards_; }

 private:
  std::vector<Shard> shards_;
  std::shared_ptr<WriteIds> ids_;
};

// While one lives on a thread, each remote variable read there is pulled once, at its first read
// (a closure's snapshot, TensorFlow's cache_variable_reads), instead of at every read.
class SnapshotScope {
 public:
  SnapshotScope();
  ~SnapshotScope();
  SnapshotScope(const SnapshotScope&) = delete;
  SnapshotScope& operator=(const SnapshotScope&) = delete;
};

}  // namespace weft::distribute::parameter_server::internal
