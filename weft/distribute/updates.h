// How a strategy combines what its replicas (and micro-batches) computed, in one fixed order so
// that the result does not depend on timing or on how the work was cut: sums in one binary tree
// over the parts in order, and variable updates combined by each variable's aggregation.
#pragma once

#include <functional>

#include <vector>

#include "weft/autodiff/variable.h"

namespace weft::distribute {

// values[0] + ... + values[n-1] summed in one fixed binary tree over their order,
// ((v0 + v1) + (v2 + v3)) + ((v4 + v5) + (v6 + v7)): a part that sums a contiguous subtree
// (v0..v3) and passes it on gives the same bits as summing all eight at once.
Tensor tree_sum(const std::vector<Tensor>& values);
// The same sum written into `out` (the values' shape and dtype).
void tree_sum_into(const std::vector<Tensor>& values, const Tensor& out);

// Combines the updates the leaves recorded (replicas or micro-batches, in order): for each
// variable, the tree sum of its values (SUM and MEAN) or the first leaf's (ONLY_FIRST_REPLICA);
// a SUM variable's assign_add/assign_sub changes are summed and added to it.
// A leaf that recorded nothing (a replica with no rows) is left out; the others must have
// updated the same variables in the same order (FailedPrecondition naming the first that
// differs). The result goes up to the calling thread's UpdateCollector when it has one (another
// level combines it), and is written otherwise: MEAN divides the sum by the number of values.
//
// In a cluster, `across_workers` sums a tensor over the workers: the values written are then the
// whole cluster's (for ONLY_FIRST_REPLICA, the first worker's), the same on every worker.
void merge_updates(const std::vector<std::vector<autodiff::UpdateCollector::Update>>& leaves,
                   const std::function<Tensor(const Tensor&)>& across_workers = {},
                   bool first_worker = true);

}  // namespace weft::distribute
