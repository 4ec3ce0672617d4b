// A program for saved_model_cli_test: it saves a trained model and the predictions it makes, and,
// run again as a fresh process, loads that model and predicts on the same inputs. Both halves
// register the custom layer "Scale", as a user's program that saves and loads one would.
//
//   saved_model_tool save mlp|cnn|functional DIR    # DIR/model (saved), DIR/x.npy,
//   DIR/expected.npy saved_model_tool load DIR/model X.npy OUT.npy   # load_model, predict, write
#include <cstdio>
#include <cstring>
#include <string>

#include "weft/weft.h"

namespace {

using namespace weft;

// y = x * gamma * factor: a trainable per-feature scale and a constant from the config.
class ScaleImpl : public nn::LayerImpl {
 public:
  explicit ScaleImpl(double factor) : LayerImpl("Scale", ""), factor_(factor) {}
  void build(const Shape& input_shape) override {
    gamma_ = add_weight("gamma", {input_shape.back()}, nn::initializers::ones());
  }
  Tensor call(const Tensor& x, bool training) override {
    return mul(mul(x, cast_variable(gamma_)), factor_);
  }
  ConfigDict get_config() const override { return LayerImpl::get_config().set("factor", factor_); }

 private:
  double factor_;
  Variable gamma_;
};

void register_scale() {
  nn::register_layer("Scale", [](const ConfigDict& c) {
    return nn::Layer(std::make_shared<ScaleImpl>(c.get_double("factor")));
  });
}

// Two branches, a shared layer called on both, the custom layer, dropout and batch norm.
nn::Model functional() {
  nn::KerasTensor in = nn::Input({28, 28, 1}, kFloat32, "image");
  nn::KerasTensor conv = nn::Flatten()(nn::Conv2D(4, {3, 3}, {.activation = "relu"})(in));
  nn::KerasTensor a = nn::Layer(std::make_shared<ScaleImpl>(0.5))(nn::Dense(32, "relu")(conv));
  nn::KerasTensor b = nn::Dense(32, "tanh")(nn::Flatten()(in));
  nn::Dense shared(16, "relu");
  nn::KerasTensor merged = nn::Concatenate()({shared(a), shared(b)})[0];
  nn::KerasTensor out = nn::Dense(10)(nn::BatchNormalization()(nn::Dropout(0.25)(merged)));
  return nn::Model(in, out, "two_branches");
}

int save(const std::string& kind, const std::string& dir) {
  random::set_seed(3);
  nn::Model model = kind == "mlp"   ? nn::Model(nn::models::mlp())
                    : kind == "cnn" ? nn::Model(nn::models::cnn())
                                    : functional();
  model.compile(optim::Adam(1e-3), nn::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                {"accuracy"});
  Tensor x = stateless_random_uniform({96, 28, 28, 1}, {7, 8});
  Tensor y = cast(mul(stateless_random_uniform({96}, {9, 10}), 10.0), kInt64);
  model.fit(data::Dataset::from_tensor_slices({x, y}).batch(32), {.epochs = 2, .verbose = 0});
  model.save(dir + "/model");
  Tensor probe = stateless_random_uniform({45, 28, 28, 1}, {11, 12});
  np::save(dir + "/x.npy", probe);
  np::save(dir + "/expected.npy", model.predict(probe, 32));
  return 0;
}

int load(const std::string& model_dir, const std::string& x, const std::string& out) {
  nn::Model model = nn::load_model(model_dir);
  np::save(out, model.predict(np::load(x), 32));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  register_scale();
  try {
    if (argc == 4 && std::strcmp(argv[1], "save") == 0) return save(argv[2], argv[3]);
    if (argc == 5 && std::strcmp(argv[1], "load") == 0) return load(argv[2], argv[3], argv[4]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "saved_model_tool: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "usage: saved_model_tool save KIND DIR | load MODEL X.npy OUT.npy\n");
  return 2;
}
