#include "weft/core/tensor.h"

#include <atomic>
#include <cstring>
#include <sstream>

#include "weft/core/internal/strided.h"

namespace weft {

uint64_t next_tensor_id() {
  static std::atomic<uint64_t> counter{1};
  return counter.fetch_add(1, std::memory_order_relaxed);
}

Tensor Tensor::empty(Shape shape, DType dtype, Device device) {
  for (int64_t d : shape) {
    WEFT_CHECK(d >= 0, InvalidArgument)
        << "tensor shape " << shape_str(shape) << " has a negative dimension";
  }
  auto impl = std::make_shared<TensorImpl>();
  impl->storage =
      Storage::allocate(static_cast<size_t>(num_elements(shape) * dtype_size(dtype)), device);
  impl->strides = contiguous_strides(shape);
  impl->shape = std::move(shape);
  impl->dtype = dtype;
  impl->id = next_tensor_id();
  return Tensor(std::move(impl));
}

Tensor Tensor::scalar(Scalar value, DType dtype) {
  Tensor t = empty({}, dtype);
  dispatch_dtype(dtype, [&]<typename T>() {
    *t.data<T>() = static_cast<T>(static_cast<compute_t<T>>(value.value));
  });
  return t;
}

template <typename T>
Tensor Tensor::from_vector(const std::vector<T>& values, const Shape& shape) {
  WEFT_CHECK(num_elements(shape) == static_cast<int64_t>(values.size()), InvalidArgument)
      << "from_vector: " << values.size() << " values do not fill shape " << shape_str(shape)
      << " (" << num_elements(shape) << " elements)";
  Tensor t = empty(shape, dtype_of<T>());
  T* out = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}
template Tensor Tensor::from_vector(const std::vector<bool>&, const Shape&);
template Tensor Tensor::from_vector(const std::vector<uint8_t>&, const Shape&);
template Tensor Tensor::from_vector(const std::vector<int32_t>&, const Shape&);
template Tensor Tensor::from_vector(const std::vector<int64_t>&, const Shape&);
template Tensor Tensor::from_vector(const std::vector<float16>&, const Shape&);
template Tensor Tensor::from_vector(const std::vector<bfloat16>&, const Shape&);
template Tensor Tensor::from_vector(const std::vector<float>&, const Shape&);
template Tensor Tensor::from_vector(const std::vector<double>&, const Shape&);

Tensor Tensor::view(const Tensor& base, const Shape& shape, const Strides& strides,
                    int64_t offset) {
  if (!base.storage()) base.no_storage("view");
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = base.storage();
  impl->offset = offset;
  impl->shape = shape;
  impl->strides = strides;
  impl->dtype = base.dtype();
  impl->id = next_tensor_id();
  return Tensor(std::move(impl));
}

int64_t Tensor::dim(int64_t axis) const {
  return impl_->shape[normalize_axis("Tensor::dim", axis, rank())];
}

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (size_t i = impl_->shape.size(); i-- > 0;) {
    if (impl_->shape[i] == 1) continue;
    if (impl_->strides[i] != expected) return false;
    expected *= impl_->shape[i];
  }
  return true;
}

void Tensor::check_dtype(DType expected, const char* what) const {
  WEFT_CHECK(defined(), FailedPrecondition) << "Tensor::" << what << " on an undefined tensor";
  WEFT_CHECK(dtype() == expected, InvalidArgument)
      << "Tensor::" << what << ": tensor has dtype " << dtype() << ", requested " << expected;
}

void Tensor::no_storage(const char* what) const {
  WEFT_FAIL(InvalidArgument)
      << "Tensor::" << what << ": the tensor is a DTensor (layout " << impl_->parts->describe()
      << "), whose values are in its components on the mesh's devices; an op that has no SPMD "
         "rule cannot read it: relayout it to a replicated layout or read dtensor::unpack";
  __builtin_unreachable();
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  WEFT_CHECK(defined(), FailedPrecondition) << "Tensor::to_vector on an undefined tensor";
  if (parts()) {
    // A fully replicated DTensor reads as its value, as TensorFlow's numpy() does.
    Tensor whole = parts()->replicated_value();
    if (!whole.defined()) no_storage("to_vector");
    return whole.to_vector<T>();
  }
  std::vector<T> out;
  out.reserve(numel());
  dispatch_dtype(dtype(), [&]<typename S>() {
    const S* p = static_cast<const S*>(impl_->storage->data()) + impl_->offset;
    internal::for_each_offset(shape(), strides(), [&](int64_t o) {
      out.push_back(static_cast<T>(static_cast<compute_t<S>>(p[o])));
    });
  });
  return out;
}

template <typename T>
T Tensor::item() const {
  WEFT_CHECK(defined() && numel() == 1, InvalidArgument)
      << "Tensor::item: expected a tensor with one element, got shape "
      << (defined() ? shape_str(shape()) : "undefined");
  return to_vector<T>()[0];
}

#define WEFT_INSTANTIATE(T)                             \
  template std::vector<T> Tensor::to_vector<T>() const; \
  template T Tensor::item<T>() const;
WEFT_INSTANTIATE(bool)
WEFT_INSTANTIATE(uint8_t)
WEFT_INSTANTIATE(int32_t)
WEFT_INSTANTIATE(int64_t)
WEFT_INSTANTIATE(float)
WEFT_INSTANTIATE(double)
#undef WEFT_INSTANTIATE

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.to_string(); }

}  // namespace weft
