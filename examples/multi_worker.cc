// MultiWorkerMirroredStrategy (seeds 000, 001 and 004): the same program runs in every process
// of the cluster, learns its role from TF_CONFIG, and trains the tutorial's MLP on Fashion-MNIST
// with `fit`; every step's gradients are summed across the workers. Only the chief prints.
//
//   weft launch -n 2 -- ./multi_worker [--epochs N]        # two local workers
//   ./multi_worker                                         # no TF_CONFIG: one worker
#include <weft/weft.h>

#include <cstdio>
#include <cstring>

namespace dist = weft::distribute;

int main(int argc, char** argv) {
  int epochs = 1;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--epochs") == 0) epochs = std::atoi(argv[i + 1]);
  }
  try {
    weft::distribute::MultiWorkerMirroredStrategy strategy;      // cluster from TF_CONFIG
    if (strategy.is_chief()) {
      std::printf("workers: %d, replicas in sync: %d\n", strategy.num_workers(),
                  strategy.num_replicas_in_sync());
    }
    auto [train_ds, test_ds] = weft::data::datasets::fashion_mnist();
    // Every worker reads the same global batches and keeps its replicas' rows (DATA).
    weft::data::Options options;
    options.experimental_distribute.auto_shard_policy = weft::data::AutoShardPolicy::DATA;
    train_ds = train_ds.shuffle(60000, /*seed=*/1).batch(128).with_options(options);

    weft::nn::Sequential model;
    {
      auto scope = strategy.scope();  // variables made here start with the chief's values
      model = weft::nn::Sequential({weft::nn::Flatten(), weft::nn::Dense(700, "relu"),
                                    weft::nn::Dense(500, "relu"), weft::nn::Dense(10)});
      model.compile(weft::optim::Adam(1e-3),
                    weft::nn::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                    {"accuracy"});
    }
    model.fit(train_ds, {.epochs = epochs});
    std::map<std::string, double> result = model.evaluate(test_ds.batch(512));
    if (strategy.is_chief()) std::printf("test accuracy %.4f\n", result["accuracy"]);

    // Results are global: every worker gathers every replica's value, its own and the others'.
    dist::PerReplica<weft::Tensor> ids = strategy.experimental_distribute_values_from_function(
        [](const dist::ValueContext& ctx) {
          return weft::Tensor::from_vector(std::vector<float>{float(ctx.replica_id_in_sync_group)});
        });
    weft::Tensor every_id = strategy.gather(ids, 0);  // 0, 1, ..., num_replicas_in_sync - 1
    if (every_id.numel() != strategy.num_replicas_in_sync()) {
      std::fprintf(stderr, "multi_worker: gathered %lld replica ids of %d\n",
                   static_cast<long long>(every_id.numel()), strategy.num_replicas_in_sync());
      return 1;
    }
  } catch (const weft::Error& e) {
    std::fprintf(stderr, "multi_worker: %s\n", e.what());
    return 1;
  }
  return 0;
}
