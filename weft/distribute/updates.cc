#include "weft/distribute/updates.h"

#include "weft/autodiff/tape.h"
#include "weft/core/parallel.h"
#include "weft/distribute/collective/internal/reduce.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"

namespace weft::distribute {
namespace {

Tensor tree(const std::vector<Tensor>& v, size_t lo, size_t hi) {
  if (hi - lo == 1) return v[lo];
  size_t mid = lo + (hi - lo) / 2;
  return add(tree(v, lo, mid), tree(v, mid, hi));
}

// Contiguous floating-point tensors of one shape and dtype, outside a recording tape.
bool fusable(const std::vector<Tensor>& values) {
  if (autodiff::is_recording() || !is_floating(values[0].dtype())) return false;
  for (const Tensor& v : values) {
    if (!v.is_contiguous() || v.shape() != values[0].shape() || v.dtype() != values[0].dtype()) {
      return false;
    }
  }
  return true;
}

}  // namespace

Tensor tree_sum(const std::vector<Tensor>& values) {
  WEFT_ASSERT(!values.empty()) << "tree_sum of nothing";
  if (values.size() == 1) return values[0];
  if (!fusable(values)) return tree(values, 0, values.size());
  Tensor out = Tensor::empty(values[0].shape(), values[0].dtype());
  tree_sum_into(values, out);
  return out;
}

void tree_sum_into(const std::vector<Tensor>& values, const Tensor& out) {
  WEFT_ASSERT(!values.empty()) << "tree_sum of nothing";
  if (values.size() == 1 || !fusable(values) || !out.is_contiguous() ||
      out.shape() != values[0].shape() || out.dtype() != values[0].dtype()) {
    assign_into(out, values.size() == 1 ? values[0] : tree(values, 0, values.size()));
    return;
  }
  // A block of elements at a time (each value read once, out written once), each addition
  // rounded to the dtype as add() rounds it: add()'s bits; blocks shared among the threads.
  constexpr int64_t kBlock = 1024;
  const std::size_t es = dtype_size(out.dtype());
  parallel_for((out.numel() + kBlock - 1) / kBlock, 16, [&](int64_t begin, int64_t end) {
    const int64_t at = begin * kBlock, n = std::min(end * kBlock, out.numel()) - at;
    std::vector<const void*> sources;
    for (const Tensor& v : values)
      sources.push_back(static_cast<const char*>(v.raw_data()) + at * es);
    collective::internal::tree_combine_from(sources, static_cast<char*>(out.raw_data()) + at * es,
                                            static_cast<std::size_t>(n), out.dtype(),
                                            collective::Reduction::SUM);
  });
}

bool tree_splits_into(int64_t leaves, int64_t parts) {
  if (parts == 1) return true;
  if (parts < 1 || leaves % parts != 0) return false;
  // Both trees split at half their count, rounded down (tree()).
  const int64_t left = parts / 2, per = leaves / parts;
  return left * per == leaves / 2 && tree_splits_into(left * per, left) &&
         tree_splits_into(leaves - left * per, parts - left);
}

std::vector<Update> combine_updates(const std::vector<std::vector<Update>>& leaves) {
  std::vector<const std::vector<Update>*> used;
  for (const auto& leaf : leaves) {
    if (!leaf.empty()) used.push_back(&leaf);
  }
  if (used.empty()) return {};
  autodiff::NoRecordScope no_record;
  const std::vector<Update>& first = *used[0];
  std::vector<Update> merged;
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
      if ((*leaf)[i].count > 0) values.push_back((*leaf)[i].value);
      count += (*leaf)[i].count;
    }
    Update m{var, {}, count, first[i].relative};
    if (var.aggregation() == VariableAggregation::ONLY_FIRST_REPLICA) {
      m.value = first[i].value;
    } else {
      // -0.0 where nothing counts: x + -0.0 is x for every x (+0.0 would turn a -0.0 into +0.0).
      m.value = values.empty() ? full(first[i].value.shape(), -0.0, first[i].value.dtype())
                               : tree_sum(values);
    }
    merged.push_back(std::move(m));
  }
  return merged;
}

void write_updates(std::vector<Update> updates) {
  autodiff::NoRecordScope no_record;
  auto* up = autodiff::UpdateCollector::current();
  for (Update& u : updates) {
    Variable var = u.variable;
    if (up != nullptr) {
      up->record(std::move(u));
    } else if (var.aggregation() == VariableAggregation::ONLY_FIRST_REPLICA) {
      var.assign(u.value);
    } else if (u.count == 0) {
      continue;  // made on no rows
    } else if (var.aggregation() == VariableAggregation::MEAN) {
      var.assign(div(u.value, static_cast<double>(u.count)));
    } else if (u.relative) {
      var.assign_add(u.value);
    } else {
      var.assign(u.value);
    }
  }
}

}  // namespace weft::distribute
