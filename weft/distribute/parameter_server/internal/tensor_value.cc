#include "weft/distribute/parameter_server/internal/tensor_value.h"

#include <cstring>

#include "weft/core/errors.h"
#include "weft/ops/cast.h"

namespace weft::distribute::parameter_server::internal {

void encode(const Tensor& t, ::weft::ps::TensorValue* out) {
  WEFT_CHECK(t.defined(), InvalidArgument) << "an undefined tensor cannot be sent";
  Tensor c = contiguous(t);
  out->set_dtype(std::string(dtype_name(c.dtype())));
  for (int64_t d : c.shape()) out->add_shape(d);
  out->set_data(static_cast<const char*>(c.raw_data()),
                static_cast<size_t>(c.numel() * dtype_size(c.dtype())));
}

Tensor decode(const ::weft::ps::TensorValue& value, const std::string& what) {
  DType dtype;
  try {
    dtype = dtype_from_name(value.dtype());
  } catch (const Error& e) {
    throw InvalidArgument(what + ": " + e.message());
  }
  Shape shape(value.shape().begin(), value.shape().end());
  for (int64_t d : shape) WEFT_CHECK(d >= 0, InvalidArgument) << what << ": a negative dimension";
  Tensor t = Tensor::empty(shape, dtype);
  const auto bytes = static_cast<size_t>(t.numel() * dtype_size(dtype));
  WEFT_CHECK(value.data().size() == bytes, InvalidArgument)
      << what << ": " << value.data().size() << " bytes for " << value.dtype() << " of "
      << t.numel() << " elements (" << bytes << " bytes)";
  if (bytes > 0) std::memcpy(t.raw_data(), value.data().data(), bytes);
  return t;
}

}  // namespace weft::distribute::parameter_server::internal
