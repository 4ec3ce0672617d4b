// The DTensor tutorial's model and optimizer (seed 002) written with weft's eager API: a Dense
// layer with Xavier-uniform weights drawn by stateless_random_uniform from seed (22, 23), the MLP
// 784-700-500-10, the tutorial's hand-written Adam, its loss, accuracy, training step and
// epochs. Shared by examples/custom_training_loop.cc, examples/dtensor_mlp.cc and
// bench/train_step_bench.cc.
#pragma once

#include <weft/weft.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
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

// The tutorial's Adam, line for line, on variables of type Var (weft::Variable, or
// dtensor::DVariable); `make_slot` makes a zero slot like a variable (by default a local one of
// its shape).
template <typename Var = weft::Variable>
class Adam {
 public:
  using SlotFn = std::function<Var(const Var& var, const std::string& name)>;
  explicit Adam(std::vector<Var> vars, SlotFn make_slot = zeros_like_variable,
                double learning_rate = 1e-3, double beta_1 = 0.9, double beta_2 = 0.999,
                double ep = 1e-7)
      : vars_(std::move(vars)), lr_(learning_rate), beta_1_(beta_1), beta_2_(beta_2), ep_(ep) {
    for (const Var& var : vars_) {
      v_.push_back(make_slot(var, var.name() + "/v"));
      s_.push_back(make_slot(var, var.name() + "/s"));
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
  static Var zeros_like_variable(const Var& var, const std::string& name) {
    return Var(weft::zeros(var.shape()), name, false);
  }
  std::vector<Var> vars_, v_, s_;
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
template <typename Model, typename Optimizer>
std::pair<weft::Tensor, weft::Tensor> train_step(const Model& model, const weft::Tensor& x_batch,
                                                 const weft::Tensor& y_batch,
                                                 Optimizer& optimizer) {
  weft::GradientTape tape;
  weft::Tensor y_pred = model(x_batch);
  weft::Tensor batch_loss = cross_entropy_loss(y_pred, y_batch);
  const auto vars = model.trainable_variables();
  optimizer.apply_gradients(
      tape.gradient(batch_loss, std::vector<weft::Variable>(vars.begin(), vars.end())));
  return {batch_loss, accuracy(y_pred, y_batch)};
}

// The tutorial's epochs: train on every batch of batch_size rows of `train` (the last one
// shorter), then measure the test set, printing its three lines per epoch when `print`. `repack`
// lays a batch out for the model (the identity on one device). Returns the last test accuracy.
using Data = std::pair<weft::Tensor, weft::Tensor>;
template <typename Model, typename Optimizer, typename Repack>
double run_epochs(int epochs, const Model& model, Optimizer& optimizer, const Data& train,
                  const Data& test, int64_t batch_size, Repack repack, bool print = true) {
  double test_accuracy = 0;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    Mean train_loss, train_acc, test_loss, test_acc;
    for (int64_t start = 0; start < train.first.dim(0); start += batch_size) {
      weft::Slice rows{start, start + batch_size};
      auto [x_batch, y_batch] =
          repack(weft::slice(train.first, {rows}), weft::slice(train.second, {rows}));
      auto [batch_loss, batch_acc] = train_step(model, x_batch, y_batch, optimizer);
      train_loss.add(batch_loss);
      train_acc.add(batch_acc);
    }
    for (int64_t start = 0; start < test.first.dim(0); start += batch_size) {
      weft::Slice rows{start, start + batch_size};
      auto [x_batch, y_batch] =
          repack(weft::slice(test.first, {rows}), weft::slice(test.second, {rows}));
      weft::Tensor y_pred = model(x_batch);
      test_loss.add(cross_entropy_loss(y_pred, y_batch));
      test_acc.add(accuracy(y_pred, y_batch));
    }
    test_accuracy = test_acc.result();
    if (!print) continue;
    std::printf("Epoch: %d\n", epoch);
    std::printf("Training loss: %.3f, Training accuracy: %.3f\n", train_loss.result(),
                train_acc.result());
    std::printf("Testing loss: %.3f, Testing accuracy: %.3f\n", test_loss.result(),
                test_acc.result());
    std::fflush(stdout);
  }
  return test_accuracy;
}

}  // namespace tutorial
