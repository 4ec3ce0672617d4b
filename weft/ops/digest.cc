#include "weft/ops/digest.h"

#include <xxhash.h>

#include "weft/ops/cast.h"

namespace weft {

uint64_t digest64(std::span<const Tensor> tensors) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  for (const Tensor& t : tensors) {
    const Tensor c = contiguous(t);
    XXH3_64bits_update(state, c.raw_data(), static_cast<size_t>(c.numel()) * dtype_size(c.dtype()));
  }
  const uint64_t digest = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return digest;
}

}  // namespace weft
