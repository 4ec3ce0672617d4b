// Tape-based reverse-mode differentiation, as tf.GradientTape. A tape records, on the thread
// that created it, every op whose inputs it watches; gradient() then runs the recorded ops'
// backward functions in reverse. Backward functions are made of ordinary ops, so a tape that is
// still recording while another computes a gradient records that computation too: nested tapes
// give higher derivatives.
//
//   weft::GradientTape tape;
//   tape.watch(x);
//   weft::Tensor y = weft::sum(x * x);
//   weft::Tensor dy_dx = tape.gradient(y, x);   // 2x
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

#include "weft/autodiff/variable.h"
#include "weft/core/tensor.h"

namespace weft {

enum class UnconnectedGradients { kNone, kZero };

class GradientTape {
 public:
  // persistent: gradient() may be called more than once. watch_accessed_variables: trainable
  // Variables used by a recorded op are watched automatically.
  explicit GradientTape(bool persistent = false, bool watch_accessed_variables = true);
  ~GradientTape();
  GradientTape(const GradientTape&) = delete;
  GradientTape& operator=(const GradientTape&) = delete;

  void watch(const Tensor& t);
  void watch(const std::vector<Tensor>& ts);

  // d target / d source. `output_gradient` seeds the target (default: ones). Sources the target
  // does not depend on give an undefined Tensor, or zeros with UnconnectedGradients::kZero.
  Tensor gradient(const Tensor& target, const Tensor& source, const Tensor& output_gradient = {},
                  UnconnectedGradients unconnected = UnconnectedGradients::kNone);
  std::vector<Tensor> gradient(const Tensor& target, const std::vector<Tensor>& sources,
                               const Tensor& output_gradient = {},
                               UnconnectedGradients unconnected = UnconnectedGradients::kNone);
  std::vector<Tensor> gradient(const Tensor& target, const std::vector<Variable>& sources,
                               const Tensor& output_gradient = {},
                               UnconnectedGradients unconnected = UnconnectedGradients::kNone);
  // The gradients, as the overloads above, and `on_ready(i, gradient)` for each source i as soon as
  // its gradient is final (no op left in the backward pass adds to it), before the rest of the
  // backward pass runs: a strategy can start reducing the last layers' gradients while the first
  // layers' are computed. Sources no op reaches are reported at the end.
  using GradientReadyFn = std::function<void(size_t source, const Tensor& gradient)>;
  std::vector<Tensor> gradient(const Tensor& target, const std::vector<Tensor>& sources,
                               const GradientReadyFn& on_ready, const Tensor& output_gradient = {},
                               UnconnectedGradients unconnected = UnconnectedGradients::kNone);
  // Several targets at once: the gradient of their sum (as tape.gradient([t1, t2], sources)),
  // each target seeded with its output gradient when given (undefined: ones).
  std::vector<Tensor> gradient(const std::vector<Tensor>& targets,
                               const std::vector<Tensor>& sources,
                               UnconnectedGradients unconnected = UnconnectedGradients::kNone);
  std::vector<Tensor> gradient(const std::vector<Tensor>& targets,
                               const std::vector<Tensor>& sources,
                               const std::vector<Tensor>& output_gradients,
                               UnconnectedGradients unconnected = UnconnectedGradients::kNone);
  // d target[i...] / d source[j...], of shape target.shape + source.shape (tf's jacobian): one
  // backward pass per element of the target.
  Tensor jacobian(const Tensor& target, const Tensor& source,
                  UnconnectedGradients unconnected = UnconnectedGradients::kNone);
  // For a target (B, ...) and a source (B, ...) whose examples do not interact (row b of the
  // target depends on row b of the source only): (B, target dims..., source dims...), one
  // backward pass per element of one example's target (tf's batch_jacobian).
  Tensor batch_jacobian(const Tensor& target, const Tensor& source,
                        UnconnectedGradients unconnected = UnconnectedGradients::kNone);
  // The variables this tape watches, explicitly or because a recorded op used them, in the
  // order it first saw them (tf's watched_variables).
  std::vector<Variable> watched_variables() const;

  // tape.gradient(loss, {w, b}) with Variables.
  std::vector<Tensor> gradient(const Tensor& target, std::initializer_list<Variable> sources) {
    return gradient(target, std::vector<Variable>(sources));
  }

  // Recording stops while the returned guard lives: `{ auto pause = tape.stop_recording(); ... }`.
  class Pause {
   public:
    explicit Pause(GradientTape* tape);
    ~Pause();
    Pause(const Pause&) = delete;
    Pause& operator=(const Pause&) = delete;

   private:
    GradientTape* tape_;
  };
  [[nodiscard]] Pause stop_recording() { return Pause(this); }

  // Forgets everything recorded so far; the tape keeps recording.
  void reset();

  struct State;

 private:
  // The backward pass from `targets` seeded with `seeds` (ones where undefined); leaves the tape
  // as it was (gradient() then marks a non-persistent one used).
  std::vector<Tensor> backprop(const std::vector<Tensor>& targets, const std::vector<Tensor>& seeds,
                               const std::vector<Tensor>& sources, const GradientReadyFn& on_ready,
                               UnconnectedGradients unconnected);
  // backprop over tensors that are not DTensors.
  std::vector<Tensor> backprop_local(const std::vector<Tensor>& targets,
                                     const std::vector<Tensor>& seeds,
                                     const std::vector<Tensor>& sources,
                                     const GradientReadyFn& on_ready,
                                     UnconnectedGradients unconnected);
  void check_usable(const char* what) const;
  void consume();
  std::unique_ptr<State> state_;
};

// The same values as `t`, seen by no tape as depending on anything (tf.stop_gradient).
Tensor stop_gradient(const Tensor& t);

namespace autodiff {

// What a backward function receives: the gradients of the op's outputs (all defined), and which
// inputs need a gradient at all (an input that leads to no source can be skipped, e.g. the data
// fed to a network's first matmul).
struct Grads {
  const std::vector<Tensor>& outputs;
  const std::vector<bool>& needed;
  const Tensor& operator[](size_t i) const { return outputs[i]; }
  bool needs(size_t input) const { return needed[input]; }
};

// Returns the gradients of the op's inputs: undefined for inputs that take none (integer
// indices) and may be undefined where !needs(input).
using BackwardFn = std::function<std::vector<Tensor>(const Grads& grads)>;

// True when a tape on this thread is recording. Ops test this before building a BackwardFn, so
// eager execution without a tape pays nothing for autodiff.
bool is_recording();

// Records `op` on every recording tape of this thread that watches one of `inputs`, and gives its
// outputs tangents in the forward accumulators (weft/autodiff/forward.h) that hold tangents of its
// inputs.
void record(const char* op, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
            BackwardFn backward);

// No tape on this thread records while this lives (optimizer updates, metric updates).
class NoRecordScope {
 public:
  NoRecordScope();
  ~NoRecordScope();
  NoRecordScope(const NoRecordScope&) = delete;
  NoRecordScope& operator=(const NoRecordScope&) = delete;
};

}  // namespace autodiff

// tf.custom_gradient: f computes outputs from `inputs` (no tape or forward accumulator sees how)
// and returns them with the function tapes use as their gradient, given the outputs' gradients
// (one gradient per input, undefined for none). Returns f's outputs.
//
//   std::vector<weft::Tensor> y = weft::custom_gradient({x}, [](const auto& xs) {
//     weft::Tensor e = weft::exp(xs[0]);
//     weft::autodiff::BackwardFn grad = [e](const weft::autodiff::Grads& g) {  // stable log1pexp
//       return std::vector<weft::Tensor>{g[0] * (1.0 - 1.0 / (1.0 + e))};
//     };
//     return std::pair{std::vector<weft::Tensor>{weft::log(1.0 + e)}, grad};
//   });
using CustomGradientFn = std::function<std::pair<std::vector<Tensor>, autodiff::BackwardFn>(
    const std::vector<Tensor>& inputs)>;
std::vector<Tensor> custom_gradient(const std::vector<Tensor>& inputs, const CustomGradientFn& f);

}  // namespace weft
