// Keras's attention layers (TF 2.4): MultiHeadAttention, and Attention (Luong's dot product).
//
//   weft::nn::MultiHeadAttention mha(8, 64);
//   weft::Tensor y = mha({query, value})[0];      // (B, T, Dq) and (B, S, Dv) -> (B, T, Dq)
//   weft::nn::AttentionResult r =
//       mha.call(query, value, {.attention_mask = padding, .use_causal_mask = true});
//   // r.output (B, T, Dq); r.scores (B, heads, T, S)
//   weft::Tensor z = weft::nn::Attention({.causal = true})({query, value})[0];
//
// MultiHeadAttention's weights are Keras's four EinsumDense projections, named query/, key/,
// value/ and attention_output/ (kernel and bias), with their 3-D kernels ((D, heads, key_dim) and
// (heads, value_dim, E)) and their Glorot fans. Masks mean true (or 1) = attend; a masked score
// gets -1e9 added (-65504 in float16), never -inf, so in float32 a fully masked row attends
// uniformly to all steps (the mean of the values), as Keras's. Dropout drops attention
// probabilities when training, keyed by the seed, the step and each example's place in the global
// batch, as Dropout.
#pragma once

#include <optional>
#include <string>

#include "weft/nn/layer.h"

namespace weft::nn {

struct MultiHeadAttentionOptions {
  std::optional<int64_t> value_dim{};  // per head; default: key_dim
  double dropout = 0;                  // of the attention probabilities
  bool use_bias = true;
  std::optional<int64_t> output_shape{};  // the output's last dimension; default: the query's
  std::string kernel_initializer = "glorot_uniform";
  std::string bias_initializer = "zeros";
  std::optional<int64_t> seed{};  // of the dropout masks (default: drawn when built)
  std::string dtype{};
  std::string name{};
};

// The arguments of one MultiHeadAttention::call besides query and value (Keras's call
// arguments; use_causal_mask is later Keras's, TF 2.4 has none).
struct MultiHeadAttentionCall {
  Tensor key{};  // (B, S, Dk); default: value
  // Bool or 0/1 numbers broadcastable to (B, T, S): (T, S), (B, T, S), (B, 1, S) for padding.
  Tensor attention_mask{};
  // ANDs attention_mask with a lower-triangular mask aligned top-left: step i attends to 0..i.
  bool use_causal_mask = false;
  bool training = false;
};

struct AttentionResult {
  Tensor output;
  // MultiHeadAttention: the probabilities (B, heads, T, S) before dropout. Attention: the weights
  // (B, Tq, Tv), after dropout when training (as Keras's).
  Tensor scores;
};

// Inputs of rank 3 only (Keras's default attention_axes). As a layer in a model it takes
// {query, value}, {query, value, key} or {query, value, key, attention_mask} (or one input x,
// self-attention: query = value = key = x) and gives {output}; call() also gives the scores.
class MultiHeadAttention : public Layer {
 public:
  static MultiHeadAttention from_config(const ConfigDict& config);
  MultiHeadAttention(int64_t num_heads, int64_t key_dim, MultiHeadAttentionOptions options = {});
  AttentionResult call(const Tensor& query, const Tensor& value,
                       const MultiHeadAttentionCall& args = {}) const;
};

struct AttentionOptions {
  bool use_scale = false;  // a learned scalar "scale" (initially 1) multiplies the scores
  bool causal = false;     // query step i attends to value steps 0..i
  double dropout = 0;      // of the attention weights
  std::optional<int64_t> seed{};
  std::string dtype{};
  std::string name{};
};

struct AttentionCall {
  Tensor key{};                  // default: value
  bool use_causal_mask = false;  // causal for this call (later Keras's name for `causal`)
  bool training = false;
};

// softmax(query key^T [* scale]) value over {query, value} or {query, value, key} (or one input,
// self-attention). Masks are the inputs' Keras masks (weft/nn/layer.h): the value's hides value
// steps; the query's zeroes the outputs of masked query steps and is the output's mask.
class Attention : public Layer {
 public:
  static Attention from_config(const ConfigDict& config);
  explicit Attention(AttentionOptions options = {});
  AttentionResult call(const Tensor& query, const Tensor& value,
                       const AttentionCall& args = {}) const;
};

}  // namespace weft::nn
