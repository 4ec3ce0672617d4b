// Mixed precision (SPEC §2, seed 003): Keras-style fit under "mixed_bfloat16" (bfloat16 compute
// on AMX / AVX512-BF16, float32 variables), then a custom loop under "mixed_float16" with a
// LossScaleOptimizer, on Fashion-MNIST.
//
//   ./mixed_precision [--epochs N]
#include <weft/weft.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {

weft::nn::Sequential make_mlp() {
  // The last layer computes in float32: softmax and the loss see float32 probabilities.
  return weft::nn::Sequential({weft::nn::Flatten(), weft::nn::Dense(700, "relu"),
                               weft::nn::Dense(500, "relu"), weft::nn::Dense(10),
                               weft::nn::Activation("softmax", {.dtype = "float32"})});
}

}  // namespace

int main(int argc, char** argv) {
  int epochs = 1;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--epochs") == 0) epochs = std::atoi(argv[i + 1]);
  }
  try {
    auto [train_ds, test_ds] = weft::data::datasets::fashion_mnist();
    train_ds = train_ds.shuffle(60000, /*seed=*/1).batch(128).prefetch(2);
    test_ds = test_ds.batch(512);

    // Layers built under a policy compute in its compute dtype; variables stay float32.
    weft::mixed_precision::set_global_policy("mixed_bfloat16");
    weft::nn::Sequential model = make_mlp();
    model.compile(weft::optim::Adam(1e-3), weft::nn::losses::SparseCategoricalCrossentropy(),
                  {"accuracy"});
    model.fit(train_ds, {.epochs = epochs, .validation_data = test_ds, .verbose = 0});
    std::map<std::string, double> result = model.evaluate(test_ds);
    std::printf("mixed_bfloat16: test accuracy %.4f\n", result["accuracy"]);

    // float16 needs loss scaling: small gradients would round to zero in float16.
    weft::mixed_precision::set_global_policy("mixed_float16");
    weft::nn::Sequential f16_model = make_mlp();
    weft::mixed_precision::LossScaleOptimizer optimizer(weft::optim::Adam(1e-3));
    weft::nn::losses::SparseCategoricalCrossentropy loss_fn;
    for (int epoch = 0; epoch < epochs; ++epoch) {
      for (const weft::data::Element& batch : train_ds) {
        weft::GradientTape tape;
        weft::Tensor loss = loss_fn(batch[1], f16_model(batch[0], /*training=*/true));
        weft::Tensor scaled_loss = optimizer.get_scaled_loss(loss);
        std::vector<weft::Variable> vars = f16_model.trainable_variables();
        std::vector<weft::Tensor> grads =
            optimizer.get_unscaled_gradients(tape.gradient(scaled_loss, vars));
        weft::optim::GradsAndVars grads_and_vars;
        for (size_t i = 0; i < vars.size(); ++i) grads_and_vars.emplace_back(grads[i], vars[i]);
        optimizer.apply_gradients(grads_and_vars);  // skipped if a gradient is inf or NaN
      }
    }
    f16_model.compile(optimizer, loss_fn, {"accuracy"});
    result = f16_model.evaluate(test_ds);
    std::printf("mixed_float16: test accuracy %.4f, loss scale %.0f\n", result["accuracy"],
                optimizer.loss_scale());
    weft::mixed_precision::set_global_policy("float32");
  } catch (const weft::Error& e) {
    std::fprintf(stderr, "mixed_precision: %s\n", e.what());
    return 1;
  }
  return 0;
}
