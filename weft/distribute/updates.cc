#include "weft/distribute/updates.h"

#include "weft/autodiff/tape.h"
#include "weft/ops/elementwise.h"

namespace weft::distribute {
namespace {

Tensor tree(const std::vector<Tensor>& v, size_t lo, size_t hi) {
  if (hi - lo == 1) return v[lo];
  size_t mid = lo + (hi - lo) / 2;
  return add(tree(v, lo, mid), tree(v, mid, hi));
}

}  // namespace

Tensor tree_sum(const std::vector<Tensor>& values) {
  WEFT_ASSERT(!values.empty()) << "tree_sum of nothing";
  return tree(values, 0, values.size());
}

void merge_updates(const std::vector<std::vector<autodiff::UpdateCollector::Update>>& leaves) {
  using Update = autodiff::UpdateCollector::Update;
  std::vector<const std::vector<Update>*> used;
  for (const auto& leaf : leaves) {
    if (!leaf.empty()) used.push_back(&leaf);
  }
  if (used.empty()) return;
  autodiff::NoRecordScope no_record;
  const std::vector<Update>& first = *used[0];
  for (size_t i = 0; i < first.size(); ++i) {
    const Variable& var = first[i].variable;
    std::vector<Tensor> values;
    int64_t count = 0;
    for (const std::vector<Update>* leaf : used) {
      WEFT_CHECK(leaf->size() == first.size() && (*leaf)[i].variable == var, FailedPrecondition)
          << "replicas updated different variables in one step: update " << i << " is \""
          << var.name() << "\" on one, \""
          << (i < leaf->size() ? (*leaf)[i].variable.name() : std::string("nothing"))
          << "\" on another (" << first.size() << " and " << leaf->size()
          << " updates); every replica must run the same layers";
      WEFT_CHECK((*leaf)[i].relative == first[i].relative, FailedPrecondition)
          << "\"" << var.name() << "\" (aggregation SUM) was assigned on one replica and "
          << "assign_add-ed on another in one step; their values cannot be summed";
      values.push_back((*leaf)[i].value);
      count += (*leaf)[i].count;
    }
    Update merged{var, {}, count, first[i].relative};
    if (var.aggregation() == VariableAggregation::ONLY_FIRST_REPLICA) {
      merged = first[i];
    } else {
      merged.value = tree_sum(values);
    }
    if (auto* up = autodiff::UpdateCollector::current()) {
      up->record(std::move(merged));
    } else if (var.aggregation() == VariableAggregation::MEAN) {
      Variable(var).assign(div(merged.value, static_cast<double>(merged.count)));
    } else if (merged.relative) {
      Variable(var).assign_add(merged.value);
    } else {
      Variable(var).assign(merged.value);
    }
  }
}

}  // namespace weft::distribute
