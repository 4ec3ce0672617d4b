// How a strategy combines what its replicas (and micro-batches) computed, in one fixed order so
// that the result does not depend on timing or on how the work was cut: sums in one binary tree
// over the parts in order, and variable updates combined by each variable's aggregation.
#pragma once

#include <vector>

#include "weft/autodiff/variable.h"

namespace weft::distribute {

// values[0] + ... + values[n-1] summed in one fixed binary tree over their order,
// ((v0 + v1) + (v2 + v3)) + ((v4 + v5) + (v6 + v7)): a part that sums a contiguous subtree
// (v0..v3) and passes it on gives the same bits as summing all eight at once.
Tensor tree_sum(const std::vector<Tensor>& values);
// The same sum written into `out` (the values' shape and dtype).
void tree_sum_into(const std::vector<Tensor>& values, const Tensor& out);

// Whether the fixed tree over `leaves` values is the fixed tree over `parts` contiguous equal
// shares of them, each share summed in its own tree first: then summing the shares' sums gives
// tree_sum's bits (8 leaves split into 1, 2, 4 or 8 parts, 6 into 1, 2 or 6, 3 into 3; not 8
// into 3).
bool tree_splits_into(int64_t leaves, int64_t parts);

using Update = autodiff::UpdateCollector::Update;

// Combines the updates the leaves recorded (replicas or micro-batches, in order) into one per
// variable: the tree sum of its values (SUM and MEAN, a SUM variable's assign_add/assign_sub
// changes alike) or the first leaf's value (ONLY_FIRST_REPLICA, as tf.distribute: the first
// replica's, rows or not), with the leaves' counts added up.
// An update of count 0 (made on no rows: a replica with no rows of a short last batch records
// its layers' updates that way, so that every replica makes the same reductions) keeps its place
// and adds nothing to the sum. A leaf that recorded nothing is left out; the others must have
// updated the same variables in the same order (FailedPrecondition naming the first that
// differs).
std::vector<Update> combine_updates(const std::vector<std::vector<Update>>& leaves);

// Passes combined updates up to the calling thread's UpdateCollector when it has one (another
// level combines them), and writes them otherwise: MEAN divides the sum by the count, SUM assigns
// the sum (or adds a change), ONLY_FIRST_REPLICA assigns its value; an update of count 0 changes
// nothing, except an ONLY_FIRST_REPLICA one.
void write_updates(std::vector<Update> updates);

inline void merge_updates(const std::vector<std::vector<Update>>& leaves) {
  write_updates(combine_updates(leaves));
}

}  // namespace weft::distribute
