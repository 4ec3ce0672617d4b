// Determinism across thread counts, for tests: runs a computation at 1 thread and again at other
// thread counts, and describes every result that is not bit-identical. Header-only.
//
//   EXPECT_EQ(weft::testing::thread_count_differences(
//                 [&] { return std::vector<weft::Tensor>{weft::sum(x, {0})}; }, {"sum"}),
//             "");
#pragma once

#include <cstring>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "weft/core/config.h"
#include "weft/core/tensor.h"

namespace weft::testing {

inline std::vector<char> bytes_of(const Tensor& t) {
  Tensor c = contiguous(t);
  std::vector<char> b(static_cast<size_t>(c.numel() * dtype_size(c.dtype())));
  if (!b.empty()) std::memcpy(b.data(), c.raw_data(), b.size());
  return b;
}

// "" when every tensor `compute` returns is bit-identical at 1 thread and at each of `threads`;
// otherwise one line per difference, naming the result (names[i], or its index), the thread
// count and how many elements differ. The configured thread count is restored.
inline std::string thread_count_differences(const std::function<std::vector<Tensor>()>& compute,
                                            const std::vector<std::string>& names = {},
                                            std::initializer_list<int> threads = {2, 3}) {
  int saved = config::num_threads();
  config::set_num_threads(1);
  std::vector<Tensor> one = compute();
  std::string report;
  for (int t : threads) {
    config::set_num_threads(t);
    std::vector<Tensor> other = compute();
    for (size_t i = 0; i < one.size() && i < other.size(); ++i) {
      std::vector<char> a = bytes_of(one[i]), b = bytes_of(other[i]);
      size_t elem = dtype_size(one[i].dtype()), differing = 0;
      for (size_t k = 0; k + elem <= std::min(a.size(), b.size()); k += elem) {
        differing += std::memcmp(&a[k], &b[k], elem) != 0;
      }
      if (differing == 0 && a.size() == b.size()) continue;
      report += (i < names.size() ? names[i] : "result " + std::to_string(i)) + ": " +
                std::to_string(differing) + " of " + std::to_string(one[i].numel()) +
                " values differ between 1 and " + std::to_string(t) + " threads\n";
    }
    if (one.size() != other.size()) report += "the number of results depends on the threads\n";
  }
  config::set_num_threads(saved);
  return report;
}

}  // namespace weft::testing
