// A program for multi_worker_cli_test: MultiWorkerMirroredStrategy's global results in real
// processes. Every worker predicts, gathers and reduces the same small dataset and writes what it
// got to PREFIX.<worker index>.json; run alone (no TF_CONFIG) it writes the one-process reference
// PREFIX.0.json.
//
//   weft launch -n N [--replicas-per-worker R] -- global_results_tool PREFIX
//
// The dataset is 9 rows in global batches of 4, so the last batch has 1 row and some replicas
// have none; its values are small integers, so every sum and product is exact in float32 and
// the results must equal the reference bit for bit.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "weft/weft.h"

namespace {

using namespace weft;
namespace dist = weft::distribute;

std::vector<float> flat(const Tensor& t) { return contiguous(t).to_vector<float>(); }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: global_results_tool PREFIX\n");
    return 2;
  }
  try {
    dist::MultiWorkerOptions options;
    if (const char* r = std::getenv("WEFT_REPLICAS_PER_WORKER")) {
      options.replicas_per_worker = std::atoi(r);
    }
    dist::MultiWorkerMirroredStrategy strategy(options);
    std::vector<float> values;
    for (int i = 0; i < 27; ++i) values.push_back(static_cast<float>(i % 7 - 3));
    Tensor x = Tensor::from_vector(values, {9, 3});

    nn::Sequential model;
    {
      auto scope = strategy.scope();
      nn::DenseOptions ones{.kernel_initializer = "ones"};
      model = nn::Sequential({nn::Dense(4, "relu", ones), nn::Dense(2, "", ones)});
      model(slice(x, {Slice{0, 1}}));  // built here, outside the replicas
    }
    nlohmann::json out;
    out["replicas"] = strategy.num_replicas_in_sync();
    out["predict"] = flat(model.predict(x, 4));

    auto dataset =
        strategy.experimental_distribute_dataset(data::Dataset::from_tensor_slices(x).batch(4));
    for (auto it = dataset.begin(); it != std::default_sentinel; ++it) {
      dist::PerReplica<Tensor> rows =
          strategy.run([](const data::Element& e) { return e[0]; }, *it);
      dist::PerReplica<Tensor> columns =
          strategy.run([](const data::Element& e) { return transpose(e[0]); }, *it);
      dist::PerReplica<Tensor> all = strategy.run(
          [](const data::Element& e) { return dist::get_replica_context().all_gather(e[0], 0); },
          *it);
      for (const Tensor& a : all.values()) {
        if (flat(a) != flat(all[0])) {
          std::fprintf(
              stderr,
              "global_results_tool: this worker's replicas all-gathered different values\n");
          return 1;
        }
      }
      out["gather_rows"].push_back(flat(strategy.gather(rows, 0)));
      out["gather_columns"].push_back(flat(strategy.gather(columns, 1)));
      out["sum_rows"].push_back(flat(strategy.reduce(dist::ReduceOp::SUM, rows, 0)));
      out["mean_rows"].push_back(flat(strategy.reduce(dist::ReduceOp::MEAN, rows, 0)));
      out["all_gather"].push_back(flat(all[0]));
    }
    dist::PerReplica<Tensor> ids =
        strategy.experimental_distribute_values_from_function([](const dist::ValueContext& c) {
          return Tensor::from_vector(std::vector<float>{float(c.replica_id_in_sync_group)});
        });
    out["replica_ids"] = flat(strategy.gather(ids, 0));

    std::string path =
        std::string(argv[1]) + "." + std::to_string(strategy.worker_index()) + ".json";
    std::ofstream(path) << out.dump() << "\n";
  } catch (const Error& e) {
    std::fprintf(stderr, "global_results_tool: %s\n", e.what());
    return 1;
  }
  return 0;
}
