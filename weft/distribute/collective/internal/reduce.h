// The element-wise kernels of the collectives, on raw buffers of any of their dtypes.
#pragma once

#include <cstddef>

#include "weft/core/dtype.h"
#include "weft/distribute/collective/communicator.h"

namespace weft::distribute::collective::internal {

// out[i] = a[i] op b[i] (SUM and MEAN add); out may be a or b. Float16 and bfloat16 are combined
// in float32 and rounded once.
void combine(void* out, const void* a, const void* b, std::size_t n, DType dtype, Reduction op);
// data[i] /= divisor (integers: truncating, as NumPy's // would not; TF's integer MEAN truncates).
void divide(void* data, std::size_t n, DType dtype, int divisor);
// InvalidArgument unless `dtype` is one the collectives carry.
void check_collective_dtype(DType dtype, const char* what);

}  // namespace weft::distribute::collective::internal
