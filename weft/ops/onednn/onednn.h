// The only door to oneDNN (ARCHITECTURE principle 6). Kernels here take plain pointers and
// geometry; ops/linalg.cc and ops/conv.cc check arguments and own autodiff. Primitives are built
// once per (shape, strides, dtype, thread count) and cached, since building one costs far more
// than running a small one.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "weft/core/dtype.h"
#include "weft/ops/internal/conv_reference.h"
#include "weft/ops/rnn.h"

namespace weft {
class Storage;
}

namespace weft::onednn {

// oneDNN computes in these; weft falls back to its own kernels for the rest.
bool supports(DType t);
std::string version();
// The instruction set oneDNN dispatches to on this CPU, e.g. "avx512_core_amx".
std::string cpu_isa();
// Whether oneDNN dispatches to AMX tiles here (Intel Sapphire Rapids and later).
bool has_amx();

// Dimensions or strides of a matmul operand, up to oneDNN's 12, held inline. The MLP's smallest
// product takes about 11 us; as vectors these cost 6 of weft::matmul's then 20 allocations per
// call, which with the rest of its bookkeeping came to 1.2-1.3 us.
class MatmulDims {
 public:
  static constexpr size_t kMaxRank = 12;  // DNNL_MAX_NDIMS
  size_t size() const { return size_; }
  int64_t& operator[](size_t i) { return values_[i]; }
  int64_t operator[](size_t i) const { return values_[i]; }
  const int64_t* begin() const { return values_.data(); }
  const int64_t* end() const { return values_.data() + size_; }
  void push_back(int64_t v) { values_.at(size_++) = v; }

 private:
  std::array<int64_t, kMaxRank> values_{};
  size_t size_ = 0;
};

// A strided operand of a batched matmul: dims and strides with the same rank (>= 2).
struct MatmulOperand {
  void* data;
  MatmulDims dims;
  MatmulDims strides;
};
// c = a @ b with NumPy batch broadcasting (batch dims of a and b are 1 or equal to c's).
void matmul(DType dtype, const MatmulOperand& a, const MatmulOperand& b, const MatmulOperand& c);

void conv_forward(DType dtype, const ops::internal::ConvParams& p, const void* x, const void* w,
                  void* y);
void conv_backward_input(DType dtype, const ops::internal::ConvParams& p, const void* dy,
                         const void* w, void* dx);
void conv_backward_filter(DType dtype, const ops::internal::ConvParams& p, const void* x,
                          const void* dy, void* dw);

// Average pooling (max pooling is weft's own kernel, weft/ops/internal/max_pool.h).
void avg_pool_forward(DType dtype, const ops::internal::PoolParams& p, const void* x, void* y);
void avg_pool_backward(DType dtype, const ops::internal::PoolParams& p, const void* dy, void* dx);

// Softmax over the rows of a dense (rows, cols) matrix: y from x, and dx from y and dy.
void softmax_forward(DType dtype, int64_t rows, int64_t cols, const void* x, void* y);
void softmax_backward(DType dtype, int64_t rows, int64_t cols, const void* y, const void* dy,
                      void* dx);

// ---- recurrent layers (rnn.cc) ----

struct RnnParams {
  RnnCell cell;
  int64_t steps, batch, features, units;
};
// Row-major buffers: x (batch, steps, features), h0 and h (batch, units), kernel (features,
// gates * units), recurrent (units, gates * units) and y (batch, steps, units) in `dtype`; the
// LSTM's c0 and c (batch, units) and the bias (bias gates * units) in float32.
struct RnnForwardBuffers {
  const void *x, *h0, *c0, *kernel, *recurrent, *bias;
  void *y, *h, *c;
};
// Gradients, all float32 (oneDNN's rule, bfloat16 layers too): of the outputs y, h, c in; of the
// inputs out.
struct RnnBackwardBuffers {
  const void *dy, *dh, *dc;
  void *dx, *dh0, *dc0, *dkernel, *drecurrent, *dbias;
};
// Runs the layer; with `training`, returns the workspace its backward pass needs.
std::shared_ptr<Storage> rnn_forward(DType dtype, const RnnParams& p, const RnnForwardBuffers& f,
                                     bool training);
// The gradients of a forward pass run with `training` on these buffers (its outputs included).
void rnn_backward(DType dtype, const RnnParams& p, const RnnForwardBuffers& f,
                  const RnnBackwardBuffers& b, const Storage& workspace);

}  // namespace weft::onednn
