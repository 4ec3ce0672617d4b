#include "weft/np/linalg.h"

#include "weft/ops/elementwise.h"
#include "weft/ops/linalg.h"
#include "weft/ops/shape_ops.h"

namespace weft::np {

Tensor dot(const Tensor& a, const Tensor& b) {
  WEFT_CHECK(a.defined() && b.defined(), InvalidArgument) << "np::dot: an input is undefined";
  if (a.rank() == 0 || b.rank() == 0) return mul(a, b);
  if (b.rank() <= 2) return weft::matmul(a, b);
  // N-d b: contract a's last axis with b's second-to-last, keeping all other axes of both.
  int64_t k = b.dim(-2);
  std::vector<int64_t> perm;
  perm.push_back(b.rank() - 2);
  for (int64_t i = 0; i < b.rank(); ++i) {
    if (i != b.rank() - 2) perm.push_back(i);
  }
  Tensor b2 = weft::reshape(weft::transpose(b, perm), {k, -1});
  Tensor out = weft::matmul(a, b2);
  Shape shape(a.shape().begin(), a.shape().end() - 1);
  shape.insert(shape.end(), b.shape().begin(), b.shape().end() - 2);
  shape.push_back(b.dim(-1));
  return weft::reshape(out, shape);
}
Tensor matmul(const Tensor& a, const Tensor& b) { return weft::matmul(a, b); }

}  // namespace weft::np
