// weft::np products of arrays.
#pragma once

#include "weft/core/tensor.h"

namespace weft::np {

// ---- linear algebra ----------------------------------------------------------------------------
// numpy.dot: inner product of vectors, matrix product of matrices, and for N-d operands the sum
// over a's last axis and b's second-to-last.
Tensor dot(const Tensor& a, const Tensor& b);
Tensor matmul(const Tensor& a, const Tensor& b);

}  // namespace weft::np
