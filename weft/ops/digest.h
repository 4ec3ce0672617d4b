// A digest of tensors' values (XXH3, 64 bits, over each one's elements in row-major order), to
// check that two processes hold the same data without sending it.
#pragma once

#include <cstdint>
#include <span>

#include "weft/core/tensor.h"

namespace weft {

uint64_t digest64(std::span<const Tensor> tensors);

}  // namespace weft
