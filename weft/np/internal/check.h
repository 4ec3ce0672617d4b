// The check every np:: function makes of its tensor inputs.
#pragma once

#include "weft/core/errors.h"
#include "weft/core/tensor.h"

namespace weft::np::internal {

inline void check(const char* op, const Tensor& a) {
  WEFT_CHECK(a.defined(), InvalidArgument) << "np::" << op << ": an input is undefined";
}

}  // namespace weft::np::internal
