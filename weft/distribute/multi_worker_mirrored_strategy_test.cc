// MultiWorkerMirroredStrategy with its workers on threads of one process: each builds the
// strategy from its own TF_CONFIG text, and they meet through a real coordination service and
// real collectives on 127.0.0.1 (the command tests run them as separate processes).
#include "weft/distribute/multi_worker_mirrored_strategy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include "weft/core/errors.h"
#include "weft/distribute/gradient_packs.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/shape_ops.h"
#include "weft/testing/local_cluster.h"

namespace weft::distribute {
namespace {

using ::testing::HasSubstr;

// Runs fn(strategy, worker) on `workers` threads, each with its strategy of `replicas` local
// replicas; returns what each returned.
template <typename R>
std::vector<R> on_workers(int workers, int replicas,
                          const std::function<R(MultiWorkerMirroredStrategy&, int)>& fn) {
  MultiWorkerOptions options;
  options.replicas_per_worker = replicas;
  return weft::testing::on_local_workers<R>(workers, options, fn);
}

TEST(MultiWorkerMirroredStrategy, ReplicasOfEveryWorkerMeetInAllReduceAndReduce) {
  auto sums = on_workers<std::vector<double>>(2, 2, [](MultiWorkerMirroredStrategy& s, int w) {
    EXPECT_EQ(s.num_replicas_in_sync(), 4);
    EXPECT_EQ(s.num_workers(), 2);
    EXPECT_EQ(s.worker_index(), w);
    EXPECT_EQ(s.is_chief(), w == 0);
    EXPECT_EQ(s.task(), "worker:" + std::to_string(w));
    PerReplica<Tensor> ids = s.run([] {
      auto& ctx = get_replica_context();
      Tensor mine =
          Tensor::from_vector(std::vector<double>{double(ctx.replica_id_in_sync_group() + 1)});
      return ctx.all_reduce(ReduceOp::SUM, {mine})[0];
    });
    EXPECT_EQ(ids.num_replicas(), 2);             // this worker's replicas
    Tensor total = s.reduce(ReduceOp::SUM, ids);  // 4 replicas' copies of 1+2+3+4
    Tensor mean = s.reduce(ReduceOp::MEAN, ids);
    return std::vector<double>{ids[0].item<double>(), ids[1].item<double>(), total.item<double>(),
                               mean.item<double>()};
  });
  for (const auto& s : sums) EXPECT_EQ(s, (std::vector<double>{10, 10, 40, 10}));
}

// gather, reduce along an axis and ReplicaContext::all_gather cover every worker's replicas, in
// global replica order, with rows of different lengths (replica g passes g rows: the first none).
TEST(MultiWorkerMirroredStrategy, GatherReduceAndAllGatherCoverEveryWorker) {
  for (auto [workers, replicas] : {std::pair{2, 2}, std::pair{3, 1}}) {
    const int n = workers * replicas;
    std::vector<float> rows;  // every replica's rows, in global order: (g, 10g + k)
    for (int g = 0; g < n; ++g) {
      for (int k = 0; k < g; ++k) rows.insert(rows.end(), {float(g), float(10 * g + k)});
    }
    auto results = on_workers<std::vector<std::vector<float>>>(
        workers, replicas, [](MultiWorkerMirroredStrategy& s, int) {
          PerReplica<Tensor> v =
              s.experimental_distribute_values_from_function([](const ValueContext& c) {
                const int g = c.replica_id_in_sync_group;
                std::vector<float> d;
                for (int k = 0; k < g; ++k) d.insert(d.end(), {float(g), float(10 * g + k)});
                return Tensor::from_vector(d, {g, 2});
              });
          PerReplica<Tensor> all = s.run(
              [](const Tensor& mine) { return get_replica_context().all_gather(mine, 0); }, v);
          std::vector<Tensor> columns;  // the same rows as columns: gathered along axis 1
          for (const Tensor& t : v.values()) columns.push_back(transpose(t));
          std::vector<std::vector<float>> out;
          for (const Tensor& t :
               {s.gather(v, 0), transpose(s.gather(PerReplica<Tensor>(columns), 1)),
                s.reduce(ReduceOp::SUM, v, 0), s.reduce(ReduceOp::MEAN, v, 0), all[0],
                all.values().back()}) {
            out.push_back(contiguous(t).to_vector<float>());
          }
          return out;
        });
    float sum0 = 0, sum1 = 0;
    for (size_t i = 0; i < rows.size(); i += 2) sum0 += rows[i], sum1 += rows[i + 1];
    const float count = static_cast<float>(rows.size() / 2);
    for (int w = 0; w < workers; ++w) {
      SCOPED_TRACE(std::to_string(workers) + " workers, worker " + std::to_string(w));
      const auto& r = results[static_cast<size_t>(w)];
      EXPECT_EQ(r[0], rows);
      EXPECT_EQ(r[1], rows);
      EXPECT_EQ(r[2], (std::vector<float>{sum0, sum1}));
      EXPECT_EQ(r[3], (std::vector<float>{sum0 / count, sum1 / count}));
      EXPECT_EQ(r[4], rows);
      EXPECT_EQ(r[5], rows);
    }
  }
}

TEST(MultiWorkerMirroredStrategy, VariablesStartWithTheChiefsValues) {
  auto values = on_workers<double>(2, 1, [](MultiWorkerMirroredStrategy& s, int w) {
    auto scope = s.scope();
    Variable v(Tensor::from_vector(std::vector<float>{float(100 + w)}), "v");
    return double(v.value().item<float>());
  });
  EXPECT_EQ(values, (std::vector<double>{100, 100}));
}

// Variables made on replica threads start with the chief's values too: one made by the first
// replica to get there (as a layer built by its first call inside run() is), and one each replica
// makes for itself; 2 workers of 2 replicas, each worker's initial values its own.
TEST(MultiWorkerMirroredStrategy, VariablesMadeOnReplicaThreadsStartWithTheChiefsValues) {
  auto values = on_workers<std::vector<float>>(2, 2, [](MultiWorkerMirroredStrategy& s, int w) {
    std::mutex mu;
    std::optional<Variable> lazy;
    PerReplica<float> own = s.run([&] {
      {
        std::lock_guard lock(mu);
        if (!lazy) lazy.emplace(Tensor::from_vector(std::vector<float>{float(100 + w)}), "lazy");
      }
      Variable mine(Tensor::from_vector(std::vector<float>{float(10 * w + 7)}), "mine");
      return mine.value().item<float>();
    });
    std::vector<float> out{lazy->value().item<float>()};
    for (float v : own.values()) out.push_back(v);
    return out;
  });
  EXPECT_EQ(values, (std::vector<std::vector<float>>{{100, 7, 7}, {100, 7, 7}}));
}

// Each worker's rows of global batches of range(8).map(identity).batch(4), by auto-shard policy,
// and how many elements the worker mapped.
std::vector<std::string> rows_by_policy(data::AutoShardPolicy policy) {
  return on_workers<std::string>(2, 1, [policy](MultiWorkerMirroredStrategy& s, int) {
    data::Options options;
    options.experimental_distribute.auto_shard_policy = policy;
    int mapped = 0;
    auto counted = [&mapped](const data::Element& e) {
      ++mapped;
      return e;
    };
    auto ds = s.experimental_distribute_dataset(
        data::Dataset::range(8).map(counted).batch(4).with_options(options));
    std::string seen;
    for (auto it = ds.begin(); it != std::default_sentinel; ++it) {
      const DistributedElement& e = *it;
      for (int64_t v : e[0][0].to_vector<int64_t>()) seen += std::to_string(v);
      const BatchSlice& slice = e.slices[0];
      seen += "@" + std::to_string(slice.first_example) + "/" +
              std::to_string(slice.global_batch_size) + " ";
    }
    return seen + "mapped " + std::to_string(mapped);
  });
}

TEST(MultiWorkerMirroredStrategy, AutoShardPoliciesDivideTheDataAsTensorFlowDoes) {
  // DATA (and AUTO): each worker keeps its rows of every global batch of 4, and maps only them.
  std::vector<std::string> data = {"01@0/4 45@0/4 mapped 4", "23@2/4 67@2/4 mapped 4"};
  EXPECT_EQ(rows_by_policy(data::AutoShardPolicy::DATA), data);
  EXPECT_EQ(rows_by_policy(data::AutoShardPolicy::AUTO), data);
  // OFF: every worker trains on every batch; together they make a global batch of 8.
  EXPECT_EQ(rows_by_policy(data::AutoShardPolicy::OFF),
            (std::vector<std::string>{"0123@0/8 4567@0/8 mapped 8", "0123@4/8 4567@4/8 mapped 8"}));
  try {
    rows_by_policy(data::AutoShardPolicy::FILE);
    FAIL() << "FILE was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr("auto_shard_policy FILE"));
  }
}

// Each worker's distribute_datasets_from_function pipeline is its own; the workers agree on each
// step. Worker 0's pipeline makes batches of rows0[0], rows0[1], ... rows, worker 1's of rows1;
// returns, per worker, each step's "first/global" (its slice's first example and the global
// batch size), then the error if one ended the loop.
std::vector<std::string> from_function(std::vector<int> rows0, std::vector<int> rows1) {
  return on_workers<std::string>(2, 1, [&](MultiWorkerMirroredStrategy& s, int w) {
    const std::vector<int>& rows = w == 0 ? rows0 : rows1;
    DistributedDataset ds = s.distribute_datasets_from_function([&](const InputContext& c) {
      EXPECT_EQ(c.input_pipeline_id, w);
      std::vector<data::Element> batches;
      for (int n : rows) batches.push_back({zeros({n, 1})});
      return data::Dataset::from_generator([batches] {
        auto i = std::make_shared<size_t>(0);
        return data::Dataset::Generator([batches, i]() -> std::optional<data::Element> {
          if (*i == batches.size()) return std::nullopt;
          return batches[(*i)++];
        });
      });
    });
    std::string seen;
    try {
      for (auto it = ds.begin(); auto b = it.next();) {
        seen += std::to_string(b->slices[0].first_example) + "/" +
                std::to_string(b->slices[0].global_batch_size) + " ";
      }
    } catch (const InvalidArgument& e) {
      seen += e.what();
    }
    return seen;
  });
}

TEST(MultiWorkerMirroredStrategy, PipelinesFromAFunctionAgreeOnEveryStepOrNameTheWorker) {
  // A shorter last batch on one worker: the step's global batch counts the rows both have.
  EXPECT_EQ(from_function({2, 2, 1}, {2, 2, 2}),
            (std::vector<std::string>{"0/4 0/4 0/3 ", "2/4 2/4 1/3 "}));
  // Worker 1's pipeline ends a step early: both fail at once naming it (not at the collective
  // timeout, 30 s).
  auto start = std::chrono::steady_clock::now();
  std::vector<std::string> seen = from_function({2, 2, 2}, {2, 2});
  const std::string error =
      "distribute_datasets_from_function: the input pipeline of worker 1 ended after 2 steps "
      "while worker 0's went on";
  EXPECT_THAT(seen[0], ::testing::StartsWith("0/4 0/4 InvalidArgument: " + error)) << seen[0];
  EXPECT_THAT(seen[1], ::testing::StartsWith("2/4 2/4 InvalidArgument: " + error)) << seen[1];
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  // Another batch size at the first step.
  for (const std::string& both : from_function({2, 2}, {3, 3})) {
    EXPECT_THAT(both, HasSubstr("make batches of different sizes at the first step (rows per "
                                "worker: worker 0 2, worker 1 3)"))
        << both;
  }
}

TEST(MultiWorkerMirroredStrategy, BegunAllReducesFinishInOrderWhileTheReplicasGoOn) {
  // Replica r of 4 (2 workers x 2) passes r + 1 in float32, 10 * (r + 1) in float64.
  auto sums = on_workers<std::vector<double>>(2, 2, [](MultiWorkerMirroredStrategy& s, int) {
    PerReplica<std::vector<double>> got = s.run([] {
      auto& ctx = get_replica_context();
      double r = ctx.replica_id_in_sync_group() + 1;
      auto first = ctx.begin_all_reduce(
          ReduceOp::SUM, {Tensor::from_vector(std::vector<float>{float(r), 2 * float(r)}),
                          Tensor::from_vector(std::vector<double>{10 * r})});
      auto second =
          ctx.begin_all_reduce(ReduceOp::MEAN, {Tensor::from_vector(std::vector<float>{float(r)})});
      // A collective made while both are in flight comes after them on every worker.
      double now = ctx.all_reduce(ReduceOp::SUM, {Tensor::from_vector(std::vector<double>{r})})[0]
                       .item<double>();
      std::vector<Tensor> a = first->wait();
      std::vector<Tensor> b = second->wait();
      std::vector<double> out = a[0].to_vector<double>();
      out.push_back(a[1].item<double>());
      out.push_back(b[0].item<double>());
      out.push_back(now);
      return out;
    });
    EXPECT_EQ(got[0], got[1]);
    return got[0];
  });
  for (const auto& s : sums) EXPECT_EQ(s, (std::vector<double>{10, 20, 100, 2.5, 10}));
  // Every value must be defined.
  on_workers<int>(2, 1, [](MultiWorkerMirroredStrategy& s, int) {
    EXPECT_THROW(s.run([] { get_replica_context().begin_all_reduce(ReduceOp::SUM, {Tensor()}); }),
                 InvalidArgument);
    return 0;
  });
}

// Five variables in packs of 16 bytes; replica 3 has no gradients (no rows), replica 1 none for
// variable 2, and no replica one for variable 4. Each replica reports in its own order. With
// one replica per worker the collectives read the gradients where they are (no copy into packs).
std::vector<std::string> gradient_packs_and_all_reduce(int replicas_per_worker) {
  return on_workers<std::string>(2, replicas_per_worker, [](MultiWorkerMirroredStrategy& s, int) {
    std::vector<Variable> vars;
    {
      auto scope = s.scope();
      for (int64_t n : {3, 4, 1, 5, 2}) vars.emplace_back(zeros({n}, kFloat32));
    }
    PerReplica<std::string> got = s.run([&] {
      auto& ctx = get_replica_context();
      const int r = ctx.replica_id_in_sync_group();
      std::vector<Tensor> grads(vars.size());
      for (size_t i = 0; r != 3 && i < vars.size(); ++i) {
        if ((r == 1 && i == 2) || i == 4) continue;
        grads[i] = full(vars[i].value().shape(), double(r + 1) * double(i + 1), kFloat32);
      }
      GradientPacks packs(ctx, vars, 16);
      for (size_t k = 0; r != 3 && k < vars.size(); ++k) {
        size_t i = (k + static_cast<size_t>(r)) % vars.size();
        packs.ready(i, grads[i]);
      }
      std::vector<Tensor> packed = packs.finish();
      std::vector<Tensor> reduced = ctx.all_reduce(ReduceOp::SUM, grads);
      std::string out;
      for (size_t i = 0; i < vars.size(); ++i) {
        EXPECT_EQ(packed[i].defined(), reduced[i].defined()) << "variable " << i;
        if (!packed[i].defined()) {
          out += "- ";
          continue;
        }
        EXPECT_EQ(packed[i].to_vector<float>(), reduced[i].to_vector<float>()) << i;
        out += std::to_string(int(packed[i].to_vector<float>()[0])) + " ";
      }
      return out;
    });
    for (int r = 1; r < got.num_replicas(); ++r) EXPECT_EQ(got[r], got[0]);
    return got[0];
  });
}

TEST(MultiWorkerMirroredStrategy, GradientPacksSumAsAllReduceDoes) {
  // Variable i: (1 + 2 + 3) * (i + 1), less replica 1's part of variable 2; none for 4.
  for (const auto& r : gradient_packs_and_all_reduce(2)) EXPECT_EQ(r, "6 12 12 24 - ");
  // Two replicas in all: (1 + 2) * (i + 1), less replica 1's part of variable 2.
  for (const auto& r : gradient_packs_and_all_reduce(1)) EXPECT_EQ(r, "3 6 3 12 - ");
}

// An all_reduce call site learns its values' layout across the workers at its first call (one
// exchange of shapes, then the sum) and reduces at once after that (one collective). When a
// value's shape changes, or a value only another worker passes appears, the reduction is made
// again in the new layout: every result is still the sum over every replica that passed it.
TEST(MultiWorkerMirroredStrategy, AnAllReduceLearnsItsLayoutOnceAndAgainWhenItChanges) {
  for (int replicas : {1, 2}) {
    SCOPED_TRACE(std::to_string(replicas) + " replicas per worker");
    // Step s: (the length of the first value on worker 0, on worker 1; 0: undefined), and the
    // collectives expected (a sum is two: one per dtype).
    struct Step {
      int64_t on0, on1;
      uint64_t calls;
    };
    const std::vector<Step> steps = {
        {2, 2, 3},  // first call: the layout exchanged, then the sum
        {2, 2, 2},  // fits
        {2, 0, 2},  // worker 1 passes none: fits
        {3, 3, 5},  // another shape: the flagged sum, the exchange, the sum
        {3, 3, 2},
        {0, 4, 5},  // only worker 1 has it, in another shape
    };
    auto results = on_workers<std::vector<std::vector<float>>>(
        2, replicas, [&](MultiWorkerMirroredStrategy& s, int w) {
          std::vector<std::vector<float>> out;
          for (const Step& step : steps) {
            const int64_t n = w == 0 ? step.on0 : step.on1;
            uint64_t before = s.collective_calls();
            PerReplica<std::vector<Tensor>> sums = s.run([&] {
              auto& ctx = get_replica_context();
              const float g = static_cast<float>(ctx.replica_id_in_sync_group() + 1);
              Tensor first = n > 0 ? full({n}, g, kFloat32) : Tensor();
              Tensor second = full({2}, 10 * g, kFloat64);
              return ctx.all_reduce(ReduceOp::SUM, {first, second});
            });
            EXPECT_EQ(s.collective_calls() - before, step.calls) << "step " << out.size() / 2;
            for (const Tensor& t : sums[0]) out.push_back(cast(t, kFloat32).to_vector<float>());
          }
          return out;
        });
    const int g = 2 * replicas;  // replicas in all
    const float all = static_cast<float>(g * (g + 1) / 2);
    const float of_worker0 = static_cast<float>(replicas * (replicas + 1) / 2);
    for (const auto& r : results) {
      const std::vector<std::vector<float>> expected = {
          std::vector<float>(2, all), std::vector<float>(2, 10 * all),
          std::vector<float>(2, all), std::vector<float>(2, 10 * all),
          std::vector<float>(2, of_worker0), std::vector<float>(2, 10 * all),
          std::vector<float>(3, all), std::vector<float>(2, 10 * all),
          std::vector<float>(3, all), std::vector<float>(2, 10 * all),
          std::vector<float>(4, all - of_worker0), std::vector<float>(2, 10 * all)};
      EXPECT_EQ(r, expected);
    }
  }
}

}  // namespace
}  // namespace weft::distribute
