// weft::np products of arrays.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "weft/core/tensor.h"

namespace weft::np {

// ---- linear algebra ----------------------------------------------------------------------------
// numpy.dot: inner product of vectors, matrix product of matrices, and for N-d operands the sum
// over a's last axis and b's second-to-last.
Tensor dot(const Tensor& a, const Tensor& b);
Tensor matmul(const Tensor& a, const Tensor& b);
// Einstein summation, as numpy.einsum: "ij,jk->ik", "bij,bjk->bik", "ii->i", "...ij->...ji",
// implicit outputs ("ij,jk" = "ij,jk->ik"). Operands are contracted pairwise, left to right,
// each pair as one (batched) matrix product through matmul's GEMM; a label repeated within an
// operand takes its diagonal. Differentiable.
Tensor einsum(const std::string& subscripts, const std::vector<Tensor>& operands);
// Sum over the last `axes` axes of a and the first of b.
Tensor tensordot(const Tensor& a, const Tensor& b, int64_t axes = 2);
// Sum over a's axes[0] paired with b's axes[1].
Tensor tensordot(const Tensor& a, const Tensor& b,
                 const std::pair<std::vector<int64_t>, std::vector<int64_t>>& axes);
// Sum over the last axes of both (a product when either is 0-d).
Tensor inner(const Tensor& a, const Tensor& b);
// Every product a[i] * b[j] of the flattened arrays, as an (a.size, b.size) matrix.
Tensor outer(const Tensor& a, const Tensor& b);
// The dot product of the flattened arrays.
Tensor vdot(const Tensor& a, const Tensor& b);
// Cross product of 3-vectors (or 2-vectors, whose result is the z component) along the last axis.
Tensor cross(const Tensor& a, const Tensor& b);
// Kronecker product: blocks of b scaled by each element of a.
Tensor kron(const Tensor& a, const Tensor& b);
// The offset-th diagonal of the (axis1, axis2) planes, as a new last axis.
Tensor diagonal(const Tensor& a, int64_t offset = 0, int64_t axis1 = 0, int64_t axis2 = 1);
Tensor trace(const Tensor& a, int64_t offset = 0, int64_t axis1 = 0, int64_t axis2 = 1);
// p[0] * x^(n-1) + ... + p[n-1], by Horner's rule.
Tensor polyval(const Tensor& p, const Tensor& x);

}  // namespace weft::np
