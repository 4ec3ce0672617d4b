// Kernels compute with denormal floats flushed to zero, as TensorFlow's kernels do (its thread
// pools and eager kernels set the same two x86 flags): a result too small for a normal float
// becomes 0 (FTZ) and a denormal input counts as 0 (DAZ). Arithmetic on denormals is about 100
// times slower on x86, and training makes them: Adam's moment estimates of a weight whose
// gradient is zero for a while decay through the denormal range (the MLP with Adam trains 1.36
// times as fast with them flushed; docs/benchmarks.md). Results differ from IEEE arithmetic only
// below 1.2e-38 in float32.
//
// parallel_for and oneDNN's primitives hold one of these while they run; the calling thread's
// flags are restored afterwards, and the OpenMP threads they start inherit them.
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace weft {

class ScopedFlushDenormals {
 public:
  ScopedFlushDenormals() {
#if defined(__x86_64__) || defined(__i386__)
    saved_ = _mm_getcsr();
    if ((saved_ & kBits) != kBits) _mm_setcsr(saved_ | kBits);
#endif
  }
  ~ScopedFlushDenormals() {
#if defined(__x86_64__) || defined(__i386__)
    if ((saved_ & kBits) != kBits) _mm_setcsr(saved_);
#endif
  }
  ScopedFlushDenormals(const ScopedFlushDenormals&) = delete;
  ScopedFlushDenormals& operator=(const ScopedFlushDenormals&) = delete;

 private:
  static constexpr unsigned kBits = 0x8040;  // MXCSR: flush-to-zero (bit 15), denormals-are-zero (6)
  unsigned saved_ = 0;
};

}  // namespace weft
