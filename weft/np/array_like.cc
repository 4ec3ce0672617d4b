#include "weft/np/array_like.h"

namespace weft::np {

Tensor ArrayLike::tensor() const {
  if (!is_scalar_) return tensor_;
  return Tensor::scalar(scalar_, scalar_.is_float ? kFloat64 : kInt64);
}

Tensor ArrayLike::tensor_next_to(const ArrayLike& other) const {
  if (!is_scalar_) return tensor_;
  if (other.is_scalar_) {
    bool any_float = scalar_.is_float || other.scalar_.is_float;
    return Tensor::scalar(scalar_, any_float ? kFloat64 : kInt64);
  }
  WEFT_CHECK(other.tensor_.defined(), InvalidArgument) << "np: an input tensor is undefined";
  return Tensor::scalar(scalar_, promote_with_scalar(other.tensor_.dtype(), scalar_.is_float));
}

int64_t Axis::single(const char* op) const {
  WEFT_CHECK(!none_ && axes_.size() == 1, InvalidArgument)
      << "np::" << op << ": expected one axis, got " << (none_ ? "None" : "several");
  return axes_[0];
}

std::pair<Tensor, Tensor> operands(const ArrayLike& a, const ArrayLike& b) {
  return {a.tensor_next_to(b), b.tensor_next_to(a)};
}

}  // namespace weft::np
