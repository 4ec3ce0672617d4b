// The permutation that moves one axis last, and the one that moves it back: kernels that work on
// rows along an axis (scans, sorts) transpose it last, run on contiguous rows, and transpose back.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace weft::ops::internal {

inline std::pair<std::vector<int64_t>, std::vector<int64_t>> last_axis_perms(int64_t axis,
                                                                             int64_t rank) {
  std::vector<int64_t> to_last;
  for (int64_t i = 0; i < rank; ++i) {
    if (i != axis) to_last.push_back(i);
  }
  to_last.push_back(axis);
  std::vector<int64_t> back(rank);
  for (int64_t i = 0; i < rank; ++i) back[to_last[i]] = i;
  return {to_last, back};
}

}  // namespace weft::ops::internal
