#include "weft/distribute/parameter_server/internal/remote_variable.h"

#include <cstring>
#include <set>

#include "weft/core/errors.h"
#include "weft/ops/cast.h"

namespace weft::distribute::parameter_server::internal {
namespace {

// The variables pulled in the thread's snapshot scope, or null outside one.
thread_local std::set<const RemoteVariable*>* snapshot = nullptr;

}  // namespace

SnapshotScope::SnapshotScope() {
  WEFT_ASSERT(snapshot == nullptr) << "snapshot scopes do not nest";
  snapshot = new std::set<const RemoteVariable*>;
}

SnapshotScope::~SnapshotScope() {
  delete snapshot;
  snapshot = nullptr;
}

void RemoteVariable::create() const {
  for (const Shard& s : shards_) s.ps->create({s.spec}, "");
}

void RemoteVariable::refresh(const Tensor& cache) const {
  if (snapshot != nullptr && !snapshot->insert(this).second) return;  // pulled in this closure
  for (const Shard& s : shards_) {
    Tensor piece = s.ps->pull({s.spec})[0];
    std::memcpy(static_cast<char*>(cache.raw_data()) + s.offset, piece.raw_data(), s.spec.bytes());
  }
}

void RemoteVariable::write(const Tensor& value) const {
  Tensor whole = contiguous(value);
  const uint64_t id = ids_->next();
  for (const Shard& s : shards_) {
    Tensor piece = Tensor::empty(s.spec.shape, s.spec.dtype);
    std::memcpy(piece.raw_data(), static_cast<const char*>(whole.raw_data()) + s.offset,
                s.spec.bytes());
    s.ps->push(id, PushKind::kValue, {s.spec}, {piece});
  }
  // Committed only once every shard has the whole of its piece.
  for (const Shard& s : shards_) s.ps->commit(id, {});
}

}  // namespace weft::distribute::parameter_server::internal
