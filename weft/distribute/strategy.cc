#include "weft/distribute/strategy.h"

#include <functional>

#include "weft/autodiff/tape.h"
#include "weft/distribute/updates.h"
#include "weft/np/array.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"

namespace weft::distribute {
namespace {

class DefaultStrategy : public StrategyImpl {
 public:
  int num_replicas_in_sync() const override { return 1; }
  std::string name() const override { return "default"; }
  void run_replicas(const std::function<void(int)>& fn) override { fn(0); }
};

const std::shared_ptr<StrategyImpl>& default_impl() {
  static const std::shared_ptr<StrategyImpl> impl = std::make_shared<DefaultStrategy>();
  return impl;
}

thread_local std::vector<Strategy>* scopes = nullptr;  // innermost last

}  // namespace

Strategy::Strategy() : impl_(default_impl()) {}

StrategyScope::StrategyScope(const Strategy& strategy) {
  if (scopes == nullptr) scopes = new std::vector<Strategy>;
  scopes->push_back(strategy);
  if (auto creator = strategy.extended().variable_creator()) creator_.emplace(std::move(*creator));
}

StrategyScope::~StrategyScope() {
  creator_.reset();
  scopes->pop_back();
  if (scopes->empty()) {
    delete scopes;
    scopes = nullptr;
  }
}

Strategy get_strategy() {
  return scopes != nullptr && !scopes->empty() ? scopes->back() : Strategy();
}
bool has_strategy() { return scopes != nullptr && !scopes->empty(); }

int64_t InputContext::get_per_replica_batch_size(int64_t global_batch_size) const {
  WEFT_CHECK(num_replicas_in_sync > 0 && global_batch_size % num_replicas_in_sync == 0,
             InvalidArgument)
      << "InputContext: the global batch size " << global_batch_size
      << " is not divisible by num_replicas_in_sync (" << num_replicas_in_sync << ")";
  return global_batch_size / num_replicas_in_sync;
}

Tensor Strategy::reduce(ReduceOp op, const PerReplica<Tensor>& value,
                        std::optional<int64_t> axis) const {
  autodiff::NoRecordScope no_record;
  WEFT_CHECK(value.num_replicas() > 0, InvalidArgument) << "Strategy::reduce: no values";
  if (axis) {
    Tensor all = gather(value, *axis);
    return op == ReduceOp::SUM ? sum(all, {*axis}) : mean(all, {*axis});
  }
  for (int r = 1; r < value.num_replicas(); ++r) {
    WEFT_CHECK(value[r].shape() == value[0].shape(), InvalidArgument)
        << "Strategy::reduce: replica 0's value has shape " << shape_str(value[0].shape())
        << ", replica " << r << "'s " << shape_str(value[r].shape());
  }
  Tensor total = impl_->sum_across_workers(tree_sum(value.values()));
  return op == ReduceOp::SUM ? total : div(total, static_cast<double>(num_replicas_in_sync()));
}

Tensor Strategy::gather(const PerReplica<Tensor>& value, int64_t axis) const {
  autodiff::NoRecordScope no_record;
  WEFT_CHECK(value.num_replicas() > 0, InvalidArgument) << "Strategy::gather: no values";
  // A replica with nothing to add (no rows of a short batch) may pass an undefined tensor.
  std::vector<Tensor> defined;
  for (const Tensor& v : value.values()) {
    if (v.defined()) defined.push_back(v);
  }
  Tensor here = defined.empty() ? Tensor() : concat(defined, axis);
  if (impl_->num_local_replicas() == num_replicas_in_sync()) {
    WEFT_CHECK(here.defined(), InvalidArgument) << "Strategy::gather: every value is undefined";
    return here;
  }
  // Across the workers along axis 0: each worker's replicas are consecutive in global order.
  Tensor all = impl_->all_gather_across_workers(
      here.defined() && axis != 0 ? np::moveaxis(here, axis, 0) : here);
  WEFT_CHECK(all.defined(), InvalidArgument)
      << "Strategy::gather: every value is undefined, on every worker";
  return axis == 0 ? all : np::moveaxis(all, 0, axis);
}

Tensor compute_average_loss(const Tensor& per_example_loss,
                            std::optional<int64_t> global_batch_size) {
  int64_t global = 0;
  if (global_batch_size) {
    global = *global_batch_size;
  } else if (auto slice = current_batch_slice()) {
    global = slice->global_batch_size;
  } else {
    int64_t per_replica = per_example_loss.rank() > 0 ? per_example_loss.dim(0) : 1;
    global = per_replica * get_replica_context().num_replicas_in_sync();
  }
  WEFT_CHECK(global > 0, InvalidArgument)
      << "compute_average_loss: the global batch size must be positive, got " << global;
  return div(sum(per_example_loss), static_cast<double>(global));
}

}  // namespace weft::distribute
