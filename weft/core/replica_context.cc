#include "weft/core/replica_context.h"

namespace weft::distribute {
namespace {

class DefaultReplicaContext : public ReplicaContext {
 public:
  int replica_id_in_sync_group() const override { return 0; }
  int num_replicas_in_sync() const override { return 1; }
  std::vector<Tensor> all_reduce(ReduceOp, const std::vector<Tensor>& values) override {
    return values;
  }
  void merge_call(const std::function<void()>& fn) override { fn(); }
};

thread_local ReplicaContext* current = nullptr;

}  // namespace

ReplicaContext& get_replica_context() {
  static DefaultReplicaContext default_context;
  return current != nullptr ? *current : default_context;
}

bool in_replica_sync_group() { return current != nullptr && current->num_replicas_in_sync() > 1; }

ReplicaContextScope::ReplicaContextScope(ReplicaContext* context) : previous_(current) {
  current = context;
}
ReplicaContextScope::~ReplicaContextScope() { current = previous_; }

}  // namespace weft::distribute
