// parallel_for over [0, n): weft's own kernels split work here, on config::num_threads() threads.
// Work is cut into chunks of at least `grain` items; results must not depend on the cut (kernels
// that combine values do so in a fixed order per output, see ops/reduce.cc). Every thread computes
// with denormals flushed to zero (flush_denormals.h).
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "weft/core/config.h"
#include "weft/core/flush_denormals.h"

namespace weft {

template <typename F>
void parallel_for(int64_t n, int64_t grain, F&& fn) {
  if (n <= 0) return;
  ScopedFlushDenormals flush;  // on this thread; the team's threads set their own
  int threads = static_cast<int>(std::min<int64_t>(config::num_threads(), (n + grain - 1) / grain));
  if (threads <= 1 || omp_in_parallel()) {
    fn(int64_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    ScopedFlushDenormals team_flush;
    int t = omp_get_thread_num();
    int nt = omp_get_num_threads();
    int64_t begin = n * t / nt;
    int64_t end = n * (t + 1) / nt;
    if (begin < end) fn(begin, end);
  }
}

}  // namespace weft
