// WEFT_HOT_LOOP marks a function that holds one of weft's own hot loops (the elementwise and
// cast loops, reductions, fused optimizer updates). GCC compiles it twice: for the build's
// baseline (WEFT_MARCH, x86-64-v3 by default: AVX2, FMA, F16C) and for x86-64-v4 (AVX-512); the
// dynamic loader picks the one the CPU runs (target_clones, an ifunc), as oneDNN picks its
// kernels at run time. So a default build runs on any x86-64 CPU with AVX2 and still uses
// AVX-512 where there is one: float16 arithmetic runs 6x faster for it, float32 -> float16 casts
// 4.5x, softmax 1.2x (docs/benchmarks.md, "Portable builds"). `flatten` inlines the loop body
// (a kernel's lambda) into each clone: GCC does not inline a function built for the baseline
// into the AVX-512 clone on its own, and the body would then run the baseline's code. Without
// -ffast-math neither copy reorders floating-point operations, so both give the same bits.
#pragma once

// Sanitizer builds (WEFT_SANITIZE) leave the copies out: they check the code, not its speed, and
// two flattened copies of every loop under AddressSanitizer tripled their build time.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(WEFT_NO_ISA_CLONES)
#define WEFT_HOT_LOOP __attribute__((target_clones("arch=x86-64-v4", "default"), flatten))
#else
#define WEFT_HOT_LOOP
#endif
