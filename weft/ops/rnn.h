// A whole recurrent layer in one op, on oneDNN's RNN primitives (forward and backward, float32
// and bfloat16): Keras's SimpleRNN (tanh), LSTM (sigmoid gates, tanh) and GRU with reset_after,
// over (batch, steps, features), left to right. nn::SimpleRNN/LSTM/GRU use it when nothing asks
// for more than this (no mask, no dropout while training, the default activations); otherwise
// they step through the sequence with weft's ops, which give the same numbers.
//
//   std::vector<weft::Tensor> r = weft::rnn(weft::RnnCell::kLSTM, x, h0, c0, kernel, recurrent,
//                                           bias);  // {y (n, t, u), h_t (n, u), c_t (n, u)}
#pragma once

#include <vector>

#include "weft/core/tensor.h"

namespace weft {

enum class RnnCell { kSimple, kLSTM, kGRU };

// Gates in the kernels (1, 4, 3) and in the bias (1, 4, 4: the GRU's is oneDNN's
// linear-before-reset bias, [b_z, b_r, b_h input, b_h recurrent]).
int64_t rnn_gates(RnnCell cell);
int64_t rnn_bias_gates(RnnCell cell);

// Whether rnn() computes in `dtype` here (float32; bfloat16 where oneDNN has it).
bool rnn_supported(DType dtype);

// x (batch, steps, features); h0 and, for the LSTM, c0 (batch, units); kernel (features,
// gates * units) and recurrent (units, gates * units) as Keras's, gate blocks of `units` columns
// ([i, f, c, o] and [z, r, h]); bias (bias_gates * units). Returns the outputs of every step
// (batch, steps, units), the last state h and, for the LSTM, the last cell state c, in x's dtype
// (oneDNN keeps c in float32 inside). Differentiable once: a gradient of these gradients is
// refused (FailedPrecondition).
std::vector<Tensor> rnn(RnnCell cell, const Tensor& x, const Tensor& h0, const Tensor& c0,
                        const Tensor& kernel, const Tensor& recurrent, const Tensor& bias);

}  // namespace weft
