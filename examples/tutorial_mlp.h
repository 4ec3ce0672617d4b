// The DTensor tutorial's model and optimizer (seed 002) written with weft's eager API: a Dense
// layer with Xavier-uniform weights drawn by stateless_random_uniform from seed (22, 23), the MLP
// 784-700-500-10, the tutorial's hand-written Adam, its loss, accuracy and training step.
// Shared by examples/custom_training_loop.cc and bench/train_step_bench.cc.
#pragma once

#include <weft/weft.h>

#include <cmath>
#include <utility>
#include <vector>

namespace tutorial {

class DenseLayer {
 public:
  DenseLayer(int64_t in_dim, int64_t out_dim, bool relu) : relu_(relu) {
    // Xavier-uniform, exactly as the tutorial: every layer draws from seed (22, 23).
    double limit = std::sqrt(6.0) / std::sqrt(static_cast<double>(in_dim + out_dim));
    w_ = weft::Variable(weft::stateless_random_uniform({in_dim, out_dim}, {22, 23}, -limit, limit));
    b_ = weft::Variable(weft::zeros({out_dim}));
  }
  weft::Tensor operator()(const weft::Tensor& x) const {
    weft::Tensor z = weft::add(weft::matmul(x, w_), b_);
    return relu_ ? weft::relu(z) : z;
  }
  std::vector<weft::Variable> variables() const { return {w_, b_}; }

 private:
  weft::Variable w_, b_;
  bool relu_;
};

// The tutorial's MLP module: its layers run in order. examples/dtensor_mlp.cc runs it on layers
// of DVariables.
template <typename Layer>
class Sequential {
 public:
  using Var = typename decltype(std::declval<const Layer&>().variables())::value_type;
  explicit Sequential(std::vector<Layer> layers) : layers_(std::move(layers)) {}
  weft::Tensor operator()(weft::Tensor x) const {
    for (const Layer& layer : layers_) x = layer(x);
    return x;
  }
  std::vector<Var> trainable_variables() const {
    std::vector<Var> vars;
    for (const Layer& layer : layers_) {
      for (const Var& v : layer.variables()) vars.push_back(v);
    }
    return vars;
  }

 private:
  std::vector<Layer> layers_;
};

class Mlp : public Sequential<DenseLayer> {
 public:
  Mlp() : Sequential({{784, 700, true}, {700, 500, true}, {500, 10, false}}) {}
};

// The tutorial's Adam, line for line.
class Adam {
 public:
  explicit Adam(std::vector<weft::Variable> vars, double learning_rate = 1e-3, double beta_1 = 0.9,
                double beta_2 = 0.999, double ep = 1e-7)
      : vars_(std::move(vars)), lr_(learning_rate), beta_1_(beta_1), beta_2_(beta_2), ep_(ep) {
    for (const weft::Variable& var : vars_) {
      v_.emplace_back(weft::zeros(var.shape()), var.name() + "/v", false);
      s_.emplace_back(weft::zeros(var.shape()), var.name() + "/s", false);
    }
  }
  void apply_gradients(const std::vector<weft::Tensor>& grads) {
    for (size_t i = 0; i < vars_.size(); ++i) {
      const weft::Tensor& d_var = grads[i];
      v_[i].assign(beta_1_ * v_[i] + (1 - beta_1_) * d_var);
      s_[i].assign(beta_2_ * s_[i] + (1 - beta_2_) * weft::square(d_var));
      weft::Tensor v_bc = v_[i] / (1 - std::pow(beta_1_, t_));
      weft::Tensor s_bc = s_[i] / (1 - std::pow(beta_2_, t_));
      vars_[i].assign_sub(lr_ * (v_bc / (weft::sqrt(s_bc) + ep_)));
    }
    t_ += 1;
  }

 private:
  std::vector<weft::Variable> vars_, v_, s_;
  double lr_, beta_1_, beta_2_, ep_, t_ = 1;
};

// Images as float32 in [0, 1], flattened to 784; labels as int64.
inline std::pair<weft::Tensor, weft::Tensor> preprocess(const weft::Tensor& images,
                                                        const weft::Tensor& labels) {
  weft::Tensor x = weft::reshape(weft::cast(images, weft::kFloat32), {-1, 784}) / 255.0f;
  return {x, weft::cast(labels, weft::kInt64)};
}

// The running mean of a scalar per batch (Keras's Mean metric, as the tutorial's loop keeps it).
struct Mean {
  double total = 0;
  int64_t count = 0;
  void add(const weft::Tensor& t) {
    total += t.item<double>();
    ++count;
  }
  double result() const { return total / static_cast<double>(count); }
};

inline weft::Tensor cross_entropy_loss(const weft::Tensor& y_pred, const weft::Tensor& y) {
  return weft::mean(weft::sparse_softmax_cross_entropy_with_logits(y, y_pred));
}

inline weft::Tensor accuracy(const weft::Tensor& y_pred, const weft::Tensor& y) {
  weft::Tensor class_preds = weft::argmax(y_pred, 1);
  return weft::mean(weft::cast(weft::equal(y, class_preds), weft::kFloat32));
}

// One training step: forward, loss, gradients on a tape, the optimizer's update.
inline std::pair<weft::Tensor, weft::Tensor> train_step(const Mlp& model,
                                                        const weft::Tensor& x_batch,
                                                        const weft::Tensor& y_batch,
                                                        Adam& optimizer) {
  weft::GradientTape tape;
  weft::Tensor y_pred = model(x_batch);
  weft::Tensor batch_loss = cross_entropy_loss(y_pred, y_batch);
  optimizer.apply_gradients(tape.gradient(batch_loss, model.trainable_variables()));
  return {batch_loss, accuracy(y_pred, y_batch)};
}

}  // namespace tutorial
