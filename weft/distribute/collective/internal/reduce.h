// The element-wise kernels of the collectives, on raw buffers of any of their dtypes.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "weft/core/dtype.h"
#include "weft/distribute/collective/communicator.h"

namespace weft::distribute::collective::internal {

// out[i] = a[i] op b[i] (SUM and MEAN add); out may be a or b. Float16 and bfloat16 are combined
// in float32 and rounded once.
void combine(void* out, const void* a, const void* b, std::size_t n, DType dtype, Reduction op);
// base holds `parts` buffers of n elements (`bytes` each): base[0] becomes their reduction in the
// fixed tree ((b0 op b1) op (b2 op b3)) of DISTRIBUTED.md §2, each part split at half its count
// rounded down (b0 op (b1 op b2) for three: distribute::tree_sum's tree at any count).
void tree_combine(char* base, std::size_t bytes, int parts, std::size_t n, DType dtype,
                  Reduction op);
// out[0, n) = the reduction of n elements at each of `sources` (null: zeros) in that tree, read
// where they lie a block at a time (each source read once, out written once), on this thread.
// out may be one of the sources, not overlap one partly.
void tree_combine_from(std::span<const void* const> sources, void* out, std::size_t n,
                       DType dtype, Reduction op);
// data[i] /= divisor (integers: truncating, as NumPy's // would not; TF's integer MEAN truncates).
void divide(void* data, std::size_t n, DType dtype, int divisor);
// Copies elements [first, first + count) of the concatenation of `pieces` (of `element_bytes`
// each) to `out`; a null piece gives zeros, and a piece already where it would go is not copied.
void gather_pieces(std::span<const Piece> pieces, std::size_t first, std::size_t count,
                   std::size_t element_bytes, void* out);
// The pieces that make elements [first, first + count) of their concatenation.
std::vector<Piece> cut_pieces(std::span<const Piece> pieces, std::size_t first,
                              std::size_t count, std::size_t element_bytes);
// InvalidArgument unless `dtype` is one the collectives carry.
void check_collective_dtype(DType dtype, const char* what);

}  // namespace weft::distribute::collective::internal
