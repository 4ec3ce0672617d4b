// Keras's recurrent layers: SimpleRNN, LSTM and GRU over (batch, steps, features), with
// return_sequences, return_state, initial states (extra inputs), go_backwards, dropout and
// recurrent_dropout; Bidirectional; masking (Masking, Embedding's mask_zero, masks carried to the
// layers that use them); and TimeDistributed.
//
//   weft::nn::LSTM lstm(128, {.return_sequences = true});
//   weft::Tensor seq = lstm(x);                               // (n, t, f) -> (n, t, 128)
//   std::vector<weft::Tensor> out = weft::nn::GRU(64, {.return_state = true})({x});  // {y, h}
//   weft::nn::Bidirectional bi(weft::nn::LSTM(32, {.return_sequences = true}));
//
// Gates and weights follow Keras (TF 2.4): LSTM's kernel columns are [i, f, c, o] and its bias
// starts with 1 for the forget gate (unit_forget_bias); GRU is reset_after (two biases, (2, 3
// units)) unless reset_after = false, gates [z, r, h]. A masked step keeps the states and repeats
// the previous output (zeros with zero_output_for_mask, which Bidirectional sets when it returns
// sequences). go_backwards returns the sequence in the order it was read, reversed, as Keras.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "weft/nn/layer.h"
#include "weft/nn/regularizers.h"

namespace weft::nn {

struct RNNOptions {
  std::string activation = "tanh";
  std::string recurrent_activation = "sigmoid";  // LSTM and GRU gates
  bool use_bias = true;
  std::string kernel_initializer = "glorot_uniform";
  std::string recurrent_initializer = "orthogonal";
  std::string bias_initializer = "zeros";
  Regularizer kernel_regularizer{};  // weft/nn/regularizers.h
  Regularizer recurrent_regularizer{};
  Regularizer bias_regularizer{};
  Regularizer activity_regularizer{};
  Constraint kernel_constraint{};
  Constraint recurrent_constraint{};
  Constraint bias_constraint{};
  bool unit_forget_bias = true;  // LSTM
  bool reset_after = true;       // GRU
  double dropout = 0;            // of the inputs, one mask per sequence
  double recurrent_dropout = 0;  // of the state fed back, one mask per sequence
  bool return_sequences = false;
  bool return_state = false;
  bool go_backwards = false;
  bool zero_output_for_mask = false;
  std::optional<int64_t> seed{};  // of the dropout masks (default: drawn when built)
  std::string dtype{};
  std::string name{};
};

class SimpleRNN : public Layer {
 public:
  static SimpleRNN from_config(const ConfigDict& config);
  explicit SimpleRNN(int64_t units, RNNOptions options = {});
};
class LSTM : public Layer {
 public:
  static LSTM from_config(const ConfigDict& config);
  explicit LSTM(int64_t units, RNNOptions options = {});
};
class GRU : public Layer {
 public:
  static GRU from_config(const ConfigDict& config);
  explicit GRU(int64_t units, RNNOptions options = {});
};

struct BidirectionalOptions {
  std::string merge_mode = "concat";  // "sum", "mul", "ave", or "none" (both outputs)
  std::string name{};
};
// A recurrent layer run forwards and, as a copy with go_backwards flipped, backwards; the
// backward outputs are put back in time order and merged.
class Bidirectional : public Layer {
 public:
  static Bidirectional from_config(const ConfigDict& config);
  explicit Bidirectional(const Layer& layer, BidirectionalOptions options = {});
};

// Attaches a mask of the steps whose features are not all mask_value, and zeroes the others.
class Masking : public Layer {
 public:
  static Masking from_config(const ConfigDict& config);
  explicit Masking(double mask_value = 0, const std::string& name = "");
};

// Applies `layer` to every step of (batch, steps, ...): (batch * steps, ...) through the layer.
class TimeDistributed : public Layer {
 public:
  static TimeDistributed from_config(const ConfigDict& config);
  explicit TimeDistributed(const Layer& layer, const std::string& name = "");
};

}  // namespace weft::nn
