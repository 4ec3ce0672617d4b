// The strided loop under every elementwise kernel: N operands (operand 0 is the output) over
// one common shape, each with its own strides (0 for broadcast dimensions). Dimensions that are
// contiguous for every operand are merged first, so most calls become one flat loop, which the
// kernel then runs with typed pointers the compiler can vectorise.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "weft/core/isa.h"
#include "weft/core/parallel.h"
#include "weft/core/tensor.h"

namespace weft::ops::internal {

template <size_t N>
struct Loop {
  std::vector<int64_t> shape;                  // merged dimensions
  std::array<std::vector<int64_t>, N> stride;  // in elements, per operand
  std::array<char*, N> base;
  std::array<int64_t, N> elem_size;

  int64_t size() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

// Strides of `t` seen through broadcasting to `shape` (0 where t has size 1 or is missing).
inline std::vector<int64_t> broadcast_strides(const Tensor& t, const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 0);
  size_t off = shape.size() - t.shape().size();
  for (size_t i = 0; i < t.shape().size(); ++i) {
    s[off + i] = t.shape()[i] == 1 ? 0 : t.strides()[i];
  }
  return s;
}

// Builds the loop for `operands` (all already broadcast-compatible with `shape`).
template <size_t N>
Loop<N> make_loop(const Shape& shape, const std::array<const Tensor*, N>& operands) {
  Loop<N> loop;
  std::array<std::vector<int64_t>, N> strides;
  for (size_t k = 0; k < N; ++k) {
    strides[k] = broadcast_strides(*operands[k], shape);
    loop.base[k] = static_cast<char*>(operands[k]->raw_data());
    loop.elem_size[k] = dtype_size(operands[k]->dtype());
  }
  // Merge dimension i into the one before it when every operand steps through both as one.
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;
    bool merge = !loop.shape.empty();
    for (size_t k = 0; k < N && merge; ++k) {
      merge = loop.stride[k].back() == strides[k][i] * shape[i];
    }
    if (merge) {
      loop.shape.back() *= shape[i];
      for (size_t k = 0; k < N; ++k) loop.stride[k].back() = strides[k][i];
    } else {
      loop.shape.push_back(shape[i]);
      for (size_t k = 0; k < N; ++k) loop.stride[k].push_back(strides[k][i]);
    }
  }
  if (loop.shape.empty()) {
    loop.shape.push_back(1);
    for (size_t k = 0; k < N; ++k) loop.stride[k].push_back(0);
  }
  return loop;
}

// Calls inner(ptrs, strides_in_elements, count) over the loop's elements [begin, end), one call
// per run along the innermost dimension. `inner` is inlined into each ISA's clone
// (weft/core/isa.h).
template <size_t N, typename Inner>
WEFT_HOT_LOOP void run_range(const Loop<N>& loop, int64_t begin, int64_t end, Inner&& inner) {
  size_t rank = loop.shape.size();
  size_t last = rank - 1;
  std::vector<int64_t> index(rank);
  int64_t rem = begin;
  for (size_t d = rank; d-- > 0;) {
    index[d] = rem % loop.shape[d];
    rem /= loop.shape[d];
  }
  std::array<int64_t, N> inner_stride;
  for (size_t k = 0; k < N; ++k) inner_stride[k] = loop.stride[k][last];
  int64_t pos = begin;
  while (pos < end) {
    std::array<char*, N> ptr;
    for (size_t k = 0; k < N; ++k) {
      int64_t off = 0;
      for (size_t d = 0; d < rank; ++d) off += index[d] * loop.stride[k][d];
      ptr[k] = loop.base[k] + off * loop.elem_size[k];
    }
    int64_t count = std::min(loop.shape[last] - index[last], end - pos);
    inner(ptr, inner_stride, count);
    pos += count;
    index[last] += count;
    for (size_t d = last; d > 0 && index[d] == loop.shape[d]; --d) {
      index[d] = 0;
      ++index[d - 1];
    }
  }
}

// Runs the loop in parallel; elementwise results do not depend on how it is cut.
template <size_t N, typename Inner>
void run_parallel(const Loop<N>& loop, Inner&& inner, int64_t grain = 32768) {
  parallel_for(loop.size(), grain,
               [&](int64_t begin, int64_t end) { run_range(loop, begin, end, inner); });
}

}  // namespace weft::ops::internal
