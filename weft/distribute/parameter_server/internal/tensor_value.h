// Tensors in the workers' messages (worker.proto): dtype name, shape and row-major bytes.
#pragma once

#include <string>

#include "weft/core/tensor.h"
#include "weft/distribute/parameter_server/worker.pb.h"

namespace weft::distribute::parameter_server::internal {

void encode(const Tensor& t, ::weft::ps::TensorValue* out);
// InvalidArgument naming `what` for an unknown dtype or bytes that do not fit the shape.
Tensor decode(const ::weft::ps::TensorValue& value, const std::string& what);

}  // namespace weft::distribute::parameter_server::internal
