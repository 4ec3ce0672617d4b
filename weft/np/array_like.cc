#include "weft/np/array_like.h"

namespace weft::np {

namespace {

// Whether integer `v` is a value of integer dtype t.
bool fits(double v, DType t) {
  switch (t) {
    case kUInt8:
      return v >= 0 && v <= 255;
    case kInt32:
      return v >= -2147483648.0 && v <= 2147483647.0;
    default:
      return true;
  }
}

}  // namespace

Tensor ArrayLike::tensor() const {
  if (!is_scalar_) return tensor_;
  return Tensor::scalar(scalar_, is_bool_ ? kBool : scalar_.is_float ? kFloat64 : kInt64);
}

Tensor ArrayLike::tensor_next_to(const ArrayLike& other) const {
  if (!is_scalar_) return tensor_;
  if (other.is_scalar_) {
    if (is_bool_ && other.is_bool_) return tensor();
    bool any_float = scalar_.is_float || other.scalar_.is_float;
    return Tensor::scalar(scalar_, any_float ? kFloat64 : kInt64);
  }
  WEFT_CHECK(other.tensor_.defined(), InvalidArgument) << "np: an input tensor is undefined";
  DType t = other.tensor_.dtype();
  if (is_bool_) return Tensor::scalar(scalar_, t);  // a weak bool takes the array's type
  if (!scalar_.is_float && is_integral(t) && !fits(scalar_.value, t)) {
    return Tensor::scalar(scalar_, kInt64);  // too big for the array's type: int64, as NumPy 1.x
  }
  return Tensor::scalar(scalar_, promote_with_scalar(t, scalar_.is_float));
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
