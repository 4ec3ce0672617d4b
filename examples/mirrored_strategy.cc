// MirroredStrategy on logical CPU devices (seeds 000 and 002): the tutorial's MLP 784-700-500-10
// trained two ways on Fashion-MNIST, each replica a thread with its share of the cores:
// Keras-style `fit` with the model made inside `strategy.scope()`, then a custom loop with
// `strategy.run` and `strategy.reduce`.
//
//   ./mirrored_strategy [--replicas N] [--epochs N]
#include <weft/weft.h>

#include <cstdio>
#include <cstring>

namespace dist = weft::distribute;

weft::nn::Sequential make_mlp() {
  return weft::nn::Sequential({weft::nn::Flatten(), weft::nn::Dense(700, "relu"),
                               weft::nn::Dense(500, "relu"), weft::nn::Dense(10)});
}

int main(int argc, char** argv) {
  int replicas = 2, epochs = 1;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--replicas") == 0) replicas = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--epochs") == 0) epochs = std::atoi(argv[i + 1]);
  }
  try {
    weft::config::set_logical_cpu_devices(replicas);
    dist::MirroredStrategy strategy;
    std::printf("replicas in sync: %d\n", strategy.num_replicas_in_sync());

    const int64_t global_batch_size = 128;
    auto [train_ds, test_ds] = weft::data::datasets::fashion_mnist();
    train_ds = train_ds.shuffle(60000, /*seed=*/1).batch(global_batch_size).prefetch(2);
    test_ds = test_ds.batch(512);

    // 1. fit: variables made inside the scope are mirrored; each global batch is cut among the
    // replicas and their gradients are summed before one update.
    weft::nn::Sequential model;
    {
      auto scope = strategy.scope();
      model = make_mlp();
      model.compile(weft::optim::Adam(1e-3),
                    weft::nn::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                    {"accuracy"});
    }
    model.fit(train_ds, {.epochs = epochs, .verbose = 0});
    std::map<std::string, double> result = model.evaluate(test_ds);
    std::printf("fit: test accuracy %.4f\n", result["accuracy"]);

    // 2. A custom loop: each replica computes the loss of its rows averaged over the global
    // batch, and the optimizer sums the replicas' gradients and applies them once.
    weft::nn::Sequential loop_model = make_mlp();
    weft::optim::Adam optimizer(1e-3);
    weft::nn::losses::SparseCategoricalCrossentropy loss_fn({.from_logits = true});
    loop_model(weft::zeros({1, 28, 28, 1}));  // build before the replicas run
    auto train_step = [&](const weft::data::Element& batch) {
      weft::GradientTape tape;
      weft::Tensor logits = loop_model(batch[0], /*training=*/true);
      weft::Tensor per_example_loss = loss_fn.per_example(batch[1], logits);
      weft::Tensor loss = dist::compute_average_loss(per_example_loss, global_batch_size);
      optimizer.minimize(loss, loop_model.trainable_variables(), tape);
      return loss;
    };
    dist::DistributedDataset dist_ds = strategy.experimental_distribute_dataset(train_ds);
    for (int epoch = 0; epoch < epochs; ++epoch) {
      double total_loss = 0;
      int64_t steps = 0;
      for (const dist::DistributedElement& batch : dist_ds) {
        dist::PerReplica<weft::Tensor> losses = strategy.run(train_step, batch);
        total_loss += strategy.reduce(dist::ReduceOp::SUM, losses).item<double>();
        ++steps;
      }
      std::printf("custom loop: epoch %d, train loss %.4f\n", epoch, total_loss / steps);
    }
    weft::nn::metrics::SparseCategoricalAccuracy accuracy;
    for (const weft::data::Element& batch : test_ds) {
      accuracy.update_state(batch[1], loop_model(batch[0]));
    }
    std::printf("custom loop: test accuracy %.4f\n", accuracy.result());
  } catch (const weft::Error& e) {
    std::fprintf(stderr, "mirrored_strategy: %s\n", e.what());
    return 1;
  }
  return 0;
}
