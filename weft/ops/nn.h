// Neural-network functions on logits: softmax, log_softmax and the sparse softmax cross-entropy
// of tf.nn. Written from primitives (logsumexp, gather-free one_hot products), so they need no
// gradient code of their own and are stable for large logits.
//
//   weft::Tensor loss = weft::mean(weft::sparse_softmax_cross_entropy_with_logits(labels, logits));
#pragma once

#include "weft/core/tensor.h"

namespace weft {

Tensor softmax(const Tensor& logits, int64_t axis = -1);
Tensor log_softmax(const Tensor& logits, int64_t axis = -1);
// tf.math.l2_normalize: x / sqrt(max(sum(x^2 along axis), epsilon)).
Tensor l2_normalize(const Tensor& x, int64_t axis = -1, double epsilon = 1e-12);
// Per-example loss: labels (int32/int64) have logits' shape without its last axis; every label
// must be in [0, num_classes).
Tensor sparse_softmax_cross_entropy_with_logits(const Tensor& labels, const Tensor& logits);

}  // namespace weft
