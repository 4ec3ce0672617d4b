// The only door to oneDNN (ARCHITECTURE principle 6). Kernels here take plain pointers and
// geometry; ops/linalg.cc and ops/conv.cc check arguments and own autodiff. Primitives are built
// once per (shape, strides, dtype, thread count) and cached, since building one costs far more
// than running a small one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "weft/core/dtype.h"
#include "weft/ops/internal/conv_reference.h"

namespace weft::onednn {

// oneDNN computes in these; weft falls back to its own kernels for the rest.
bool supports(DType t);
std::string version();
// The instruction set oneDNN dispatches to on this CPU, e.g. "avx512_core_amx".
std::string cpu_isa();

// A strided operand of a batched matmul: dims and strides with the same rank (>= 2).
struct MatmulOperand {
  void* data;
  std::vector<int64_t> dims;
  std::vector<int64_t> strides;
};
// c = a @ b with NumPy batch broadcasting (batch dims of a and b are 1 or equal to c's).
void matmul(DType dtype, const MatmulOperand& a, const MatmulOperand& b, const MatmulOperand& c);

void conv2d_forward(DType dtype, const ops::internal::Conv2DParams& p, const void* x, const void* w,
                    void* y);
void conv2d_backward_input(DType dtype, const ops::internal::Conv2DParams& p, const void* dy,
                           const void* w, void* dx);
void conv2d_backward_filter(DType dtype, const ops::internal::Conv2DParams& p, const void* x,
                            const void* dy, void* dw);

// Average pooling (max pooling is weft's own kernel, weft/ops/internal/max_pool.h).
void avg_pool2d_forward(DType dtype, const ops::internal::Pool2DParams& p, const void* x, void* y);
void avg_pool2d_backward(DType dtype, const ops::internal::Pool2DParams& p, const void* dy,
                         void* dx);

}  // namespace weft::onednn
