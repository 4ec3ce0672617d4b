#include "weft/core/replica_context.h"

#include <algorithm>

#include "weft/core/errors.h"

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

class Reduced : public ReplicaContext::Pending {
 public:
  explicit Reduced(std::vector<Tensor> values) : values_(std::move(values)) {}
  std::vector<Tensor> wait() override { return std::move(values_); }

 private:
  std::vector<Tensor> values_;
};

}  // namespace

std::unique_ptr<ReplicaContext::Pending> ReplicaContext::begin_all_reduce(
    ReduceOp op, const std::vector<Tensor>& values) {
  for (size_t i = 0; i < values.size(); ++i) {
    WEFT_CHECK(values[i].defined(), InvalidArgument)
        << "begin_all_reduce: value " << i << " is undefined; every value must be defined";
  }
  return std::make_unique<Reduced>(all_reduce(op, values));
}

std::pair<int64_t, int64_t> element_part(int64_t n, int parts, int part) {
  constexpr int64_t kLine = 16;
  const int64_t lines = (n + kLine - 1) / kLine;
  auto start = [&](int64_t k) { return std::min(n, lines * k / parts * kLine); };
  return {start(part), start(part + 1)};
}

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
