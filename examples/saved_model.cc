// Saving and loading a model, as Keras's model.save and load_model: a Functional model with a
// layer class of its own trains on Fashion-MNIST, is saved to a directory, and loads back (in
// another program it would do the same, once the custom layer is registered there too) to give
// the same predictions bit for bit and the same test accuracy.
//
//   ./saved_model [--epochs N] [--dir DIR]
#include <weft/weft.h>

#include <cstdio>
#include <cstring>
#include <memory>

namespace nn = weft::nn;

// A custom layer: y = x * gamma * factor, with a trainable gamma per feature and a constant factor
// that its config carries.
class ScaleImpl : public nn::LayerImpl {
 public:
  explicit ScaleImpl(double factor) : LayerImpl("Scale", ""), factor_(factor) {}
  void build(const weft::Shape& input_shape) override {
    gamma_ = add_weight("gamma", {input_shape.back()}, nn::initializers::ones());
  }
  weft::Tensor call(const weft::Tensor& x, bool training) override {
    return weft::mul(weft::mul(x, cast_variable(gamma_)), factor_);
  }
  weft::ConfigDict get_config() const override {
    return LayerImpl::get_config().set("factor", factor_);
  }

 private:
  double factor_;
  weft::Variable gamma_;
};

int main(int argc, char** argv) {
  int epochs = 1;
  std::string dir = "/tmp/weft_saved_model_example";
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--epochs") == 0) epochs = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--dir") == 0) dir = argv[i + 1];
  }
  try {
    // Every program that loads a model with a Scale layer registers how to make one.
    nn::register_layer("Scale", [](const weft::ConfigDict& config) {
      return nn::Layer(std::make_shared<ScaleImpl>(config.get_double("factor")));
    });

    nn::KerasTensor image = nn::Input({28, 28, 1}, weft::kFloat32, "image");
    nn::KerasTensor hidden = nn::Dense(256, "relu")(nn::Flatten()(image));
    nn::KerasTensor scaled = nn::Layer(std::make_shared<ScaleImpl>(0.5))(hidden);
    nn::Model model(image, nn::Dense(10)(scaled), "scaled_mlp");
    model.compile(weft::optim::Adam(1e-3),
                  nn::losses::SparseCategoricalCrossentropy({.from_logits = true}), {"accuracy"});
    auto [train_ds, test_ds] = weft::data::datasets::fashion_mnist();
    model.fit(train_ds.shuffle(60000, 1).batch(128), {.epochs = epochs, .verbose = 0});

    model.save(dir);  // dir/model.json and dir/variables/
    nn::Model loaded = nn::load_model(dir);

    weft::Tensor images = (*test_ds.batch(512).begin())[0];
    bool same =
        model.predict(images).to_vector<float>() == loaded.predict(images).to_vector<float>();
    std::map<std::string, double> result = loaded.evaluate(test_ds.batch(512));
    std::printf("predictions after loading: %s; loaded model test accuracy %.4f\n",
                same ? "bit-identical" : "DIFFERENT", result["accuracy"]);
    return same ? 0 : 1;
  } catch (const weft::Error& e) {
    std::fprintf(stderr, "saved_model: %s\n", e.what());
    return 1;
  }
}
