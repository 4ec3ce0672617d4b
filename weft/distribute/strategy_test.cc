// The Strategy API on MirroredStrategy's replica threads: run, reduce, gather, all_reduce and
// merge_call, variable aggregation in replica context, distributed datasets, and failures that
// end every replica's wait instead of hanging.
#include "weft/distribute/strategy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "weft/autodiff/tape.h"
#include "weft/core/config.h"
#include "weft/distribute/mirrored_strategy.h"
#include "weft/distribute/updates.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/random.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"

namespace weft::distribute {
namespace {

using ::testing::HasSubstr;

// Logical CPU devices for one test, restored after it.
struct Devices {
  explicit Devices(int n) { config::set_logical_cpu_devices(n); }
  ~Devices() { config::set_logical_cpu_devices(1); }
};

std::vector<float> values(const Tensor& t) {
  Tensor c = contiguous(t);
  return std::vector<float>(c.data<float>(), c.data<float>() + c.numel());
}

// getrusage(who).
rusage usage(int who) {
  rusage u{};
  getrusage(who, &u);
  return u;
}

std::vector<uint8_t> bytes(const Tensor& t) {
  Tensor c = contiguous(t);
  const auto* p = static_cast<const uint8_t*>(c.raw_data());
  return std::vector<uint8_t>(p, p + c.numel() * dtype_size(c.dtype()));
}

TEST(Strategy, DefaultStrategyIsOneReplicaOnTheCallingThread) {
  Strategy s = get_strategy();
  EXPECT_FALSE(has_strategy());
  EXPECT_EQ(s.num_replicas_in_sync(), 1);
  EXPECT_EQ(s.name(), "default");
  std::thread::id caller = std::this_thread::get_id();
  PerReplica<int> ids = s.run([&] {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    return get_replica_context().replica_id_in_sync_group();
  });
  EXPECT_EQ(ids.values(), std::vector<int>{0});
}

TEST(Strategy, RunGivesEachReplicaItsValueOnItsOwnThread) {
  Devices devices(4);
  MirroredStrategy strategy;
  EXPECT_EQ(strategy.num_replicas_in_sync(), 4);
  EXPECT_EQ(strategy.devices()[3], "/job:localhost/replica:0/task:0/device:CPU:3");
  PerReplica<int> offsets({10, 20, 30, 40});
  std::mutex mu;
  std::set<std::thread::id> threads;
  PerReplica<int> out = strategy.run(
      [&](int offset, int scale) {
        {
          std::lock_guard lock(mu);
          threads.insert(std::this_thread::get_id());
        }
        EXPECT_EQ(get_replica_context().num_replicas_in_sync(), 4);
        EXPECT_TRUE(get_strategy() == strategy);
        EXPECT_EQ(config::num_threads(), std::max(1, config::hardware_threads() / 4));
        return offset * scale + get_replica_context().replica_id_in_sync_group();
      },
      offsets, 2);
  EXPECT_EQ(out.values(), (std::vector<int>{20, 41, 62, 83}));
  EXPECT_EQ(threads.size(), 4u);
  EXPECT_FALSE(threads.count(std::this_thread::get_id()));
}

TEST(Strategy, ReduceAndGatherAcrossReplicas) {
  Devices devices(2);
  MirroredStrategy strategy({"/cpu:0", "CPU:1"});
  PerReplica<Tensor> v(
      {Tensor::from_vector<float>({1, 2, 3}, {3}), Tensor::from_vector<float>({10, 20, 30}, {3})});
  EXPECT_EQ(values(strategy.reduce(ReduceOp::SUM, v)), (std::vector<float>{11, 22, 33}));
  EXPECT_EQ(values(strategy.reduce(ReduceOp::MEAN, v)), (std::vector<float>{5.5, 11, 16.5}));
  EXPECT_EQ(values(strategy.reduce(ReduceOp::SUM, v, 0)), std::vector<float>{66});
  EXPECT_EQ(values(strategy.reduce(ReduceOp::MEAN, v, 0)), std::vector<float>{11});
  EXPECT_EQ(values(strategy.gather(v, 0)), (std::vector<float>{1, 2, 3, 10, 20, 30}));
}

// ReplicaContext::all_gather: every replica gets the replicas' values concatenated in replica
// order, of different lengths along the axis (replica 0 passes none); the gradient of a
// replica's value is its slice of the sum of every replica's output gradients, as TensorFlow's.
TEST(Strategy, AllGatherConcatenatesEveryReplicasValueAndDifferentiates) {
  Devices devices(3);
  MirroredStrategy strategy({"CPU:0", "CPU:1", "CPU:2"});
  // Replica r: r columns of 2 rows, every element 10r + its column.
  PerReplica<Tensor> v =
      strategy.experimental_distribute_values_from_function([](const ValueContext& c) {
        std::vector<float> d;
        for (int row = 0; row < 2; ++row) {
          for (int k = 0; k < c.replica_id_in_sync_group; ++k) {
            d.push_back(float(10 * c.replica_id_in_sync_group + k));
          }
        }
        EXPECT_EQ(c.num_replicas_in_sync, 3);
        return Tensor::from_vector(d, {2, c.replica_id_in_sync_group});
      });
  auto out = strategy.run(
      [](const Tensor& mine) {
        auto& ctx = get_replica_context();
        GradientTape tape;
        tape.watch(mine);
        Tensor all = ctx.all_gather(mine, 1);
        // Replica r weighs the gathered columns by r + 1: d(loss_r)/d(all) = r + 1 everywhere.
        Tensor loss = sum(mul(all, float(ctx.replica_id_in_sync_group() + 1)));
        return std::pair{all, tape.gradient(loss, mine)};
      },
      v);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(out[r].first.shape(), (Shape{2, 3})) << r;
    EXPECT_EQ(values(out[r].first), (std::vector<float>{10, 20, 21, 10, 20, 21})) << r;
    EXPECT_EQ(out[r].second.shape(), (Shape{2, r})) << r;
    // 1 + 2 + 3: every replica's weight, on this replica's columns.
    EXPECT_EQ(values(out[r].second), std::vector<float>(static_cast<size_t>(2 * r), 6.f)) << r;
  }
  // Global results of values of different lengths along the axis.
  EXPECT_EQ(values(strategy.gather(v, 1)), (std::vector<float>{10, 20, 21, 10, 20, 21}));
  EXPECT_EQ(values(strategy.reduce(ReduceOp::SUM, v, 1)), (std::vector<float>{51, 51}));
  EXPECT_EQ(values(strategy.reduce(ReduceOp::MEAN, v, 1)), (std::vector<float>{17, 17}));
  // Replicas that disagree on the other axes fail, naming both.
  try {
    strategy.run(
        [](const Tensor& mine) {
          auto& ctx = get_replica_context();
          ctx.all_gather(ctx.replica_id_in_sync_group() == 2 ? concat({mine, mine}, 0) : mine, 1);
        },
        v);
    ADD_FAILURE() << "all_gather of (2, r) and (4, 2) values along axis 1 passed";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("all_gather along axis 1 of float32 with the other axes (2,)"));
    EXPECT_THAT(e.what(), HasSubstr("with the other axes (4,)"));
  }
}

TEST(Strategy, DevicesAreCheckedByName) {
  Devices devices(2);
  try {
    MirroredStrategy({"/cpu:0", "/cpu:2"});
    FAIL() << "a third device of two was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr("\"/cpu:2\" does not exist: there are 2"));
  }
  EXPECT_THROW(MirroredStrategy({"/cpu:1", "/device:CPU:1"}), InvalidArgument);
  EXPECT_THROW(MirroredStrategy({"/gpu:0"}), InvalidArgument);
}

// Every replica gets the same sum, added in one fixed tree over the replicas, whichever arrives
// first: the bits equal tree_sum of the inputs, for each of many rounds.
TEST(Strategy, AllReduceSumsInOneFixedTree) {
  Devices devices(4);
  MirroredStrategy strategy;
  std::vector<Tensor> inputs;
  for (int r = 0; r < 4; ++r) {
    inputs.push_back(stateless_random_normal({1000, 3}, {r, 9}));
  }
  std::vector<float> expected = values(tree_sum(inputs));
  std::vector<float> mean = values(div(tree_sum(inputs), 4.0));
  for (int round = 0; round < 20; ++round) {
    PerReplica<std::vector<Tensor>> out = strategy.run([&] {
      auto& ctx = get_replica_context();
      int r = ctx.replica_id_in_sync_group();
      if (r == round % 4) std::this_thread::sleep_for(std::chrono::microseconds(200));
      return ctx.all_reduce(ReduceOp::SUM, {inputs[r], inputs[r]});
    });
    for (const auto& replica : out.values()) {
      ASSERT_EQ(values(replica[0]), expected) << "round " << round;
      ASSERT_EQ(values(replica[1]), expected);
    }
  }
  PerReplica<Tensor> means = strategy.run([&] {
    auto& ctx = get_replica_context();
    return ctx.all_reduce(ReduceOp::MEAN, {inputs[ctx.replica_id_in_sync_group()]})[0];
  });
  EXPECT_EQ(values(means[2]), mean);
}

// tree_sum's one-pass kernel gives the bits of the same tree of add()s, for every count of
// values (balanced or not), sizes that are not a multiple of its block, and half types.
TEST(Strategy, TreeSumEqualsItsTreeOfAdds) {
  for (DType dtype : {kFloat32, kBFloat16, kFloat64}) {
    for (int n = 1; n <= 9; ++n) {
      std::vector<Tensor> v;
      for (int i = 0; i < n; ++i) {
        v.push_back(cast(stateless_random_normal({3, 1001}, {i, n}, 0, 1 + i), dtype));
      }
      std::function<Tensor(size_t, size_t)> tree = [&](size_t lo, size_t hi) -> Tensor {
        if (hi - lo == 1) return v[lo];
        size_t mid = lo + (hi - lo) / 2;
        return add(tree(lo, mid), tree(mid, hi));
      };
      Tensor expected = tree(0, v.size());
      Tensor got = tree_sum(v);
      ASSERT_EQ(got.dtype(), dtype);
      ASSERT_EQ(bytes(got), bytes(expected)) << n << " values of " << dtype;
    }
  }
}

// A value a replica leaves undefined (no gradient for a variable) counts as zeros; undefined on
// every replica, the result is undefined.
TEST(Strategy, AllReduceTakesUndefinedValuesAsZeros) {
  Devices devices(3);
  MirroredStrategy strategy;
  PerReplica<std::vector<Tensor>> out = strategy.run([&] {
    auto& ctx = get_replica_context();
    int r = ctx.replica_id_in_sync_group();
    return ctx.all_reduce(ReduceOp::SUM,
                          {r == 1 ? Tensor() : full({2}, r + 1.0), Tensor(), full({1}, 1.0)});
  });
  for (const auto& replica : out.values()) {
    EXPECT_EQ(values(replica[0]), (std::vector<float>{4, 4}));
    EXPECT_FALSE(replica[1].defined());
    EXPECT_EQ(values(replica[2]), std::vector<float>{3});
  }
}

// A replica function cannot start another step of its own strategy: that would wait for itself.
TEST(Strategy, RunInsideAReplicaFunctionFails) {
  Devices devices(2);
  MirroredStrategy strategy;
  try {
    strategy.run([&] { strategy.run([] { return 1; }); });
    FAIL() << "a nested run returned";
  } catch (const FailedPrecondition& e) {
    EXPECT_THAT(e.what(), HasSubstr("inside one of its own replica functions"));
  }
  // The strategy is usable afterwards.
  PerReplica<int> ids =
      strategy.run([] { return get_replica_context().replica_id_in_sync_group(); });
  EXPECT_EQ(ids[1], 1);
}

TEST(Strategy, MergeCallRunsOnceWhileTheOthersWait) {
  Devices devices(3);
  MirroredStrategy strategy;
  std::atomic<int> calls{0}, after{0};
  strategy.run([&] {
    get_replica_context().merge_call([&] {
      EXPECT_FALSE(in_replica_sync_group());  // the merge runs in cross-replica context, once
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      EXPECT_EQ(after.load(), 0) << "a replica went on before the merge ended";
      ++calls;
    });
    ++after;
  });
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(after.load(), 3);
}

TEST(Strategy, MergeCallInPartsRunsEveryPartOnItsReplicaThenOnce) {
  Devices devices(3);
  MirroredStrategy strategy;
  std::mutex mu;
  std::map<int, std::thread::id> part_threads;
  std::atomic<int> thens{0}, after{0};
  PerReplica<std::thread::id> replica_threads = strategy.run([&] {
    get_replica_context().merge_call_in_parts(
        [&](int part, int parts) {
          EXPECT_FALSE(in_replica_sync_group());  // cross-replica context, as merge_call's
          EXPECT_EQ(parts, 3);
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
          std::lock_guard lock(mu);
          EXPECT_TRUE(part_threads.emplace(part, std::this_thread::get_id()).second) << part;
        },
        [&] {
          std::lock_guard lock(mu);
          EXPECT_EQ(part_threads.size(), 3u) << "then ran before every part had";
          EXPECT_EQ(after.load(), 0);
          ++thens;
        });
    ++after;
    return std::this_thread::get_id();
  });
  EXPECT_EQ(thens.load(), 1);
  ASSERT_EQ(part_threads.size(), 3u);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(part_threads[r], replica_threads[r]) << "part " << r;

  // A part that throws ends every replica's step with its error.
  try {
    strategy.run([&] {
      get_replica_context().merge_call_in_parts(
          [](int part, int) {
            if (part == 2) WEFT_FAIL(InvalidArgument) << "part two's own error";
          },
          [] { ADD_FAILURE() << "then ran after a part failed"; });
    });
    FAIL() << "run returned";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr("part two's own error"));
  }
}

// Replicas with a core each spin briefly in their waits, then sleep: an idle strategy costs no
// CPU.
TEST(Strategy, IdleReplicasSleep) {
  Devices devices(2);
  MirroredStrategy strategy;
  auto cpu_seconds = [] {
    rusage u = usage(RUSAGE_SELF);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  };
  strategy.run([] { get_replica_context().all_reduce(ReduceOp::SUM, {ones({4})}); });
  double before = cpu_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  double used = cpu_seconds() - before;
  EXPECT_LT(used, 0.06) << "the process used " << used << " s of CPU in 0.3 s of idling";
}

// The thread that called run() sleeps until the step ends: the replicas' meetings in collectives
// do not wake it (each wake-up would take a core from a replica).
TEST(Strategy, RunSleepsThroughTheReplicasCollectives) {
  Devices devices(2);
  MirroredStrategy strategy;
  auto voluntary_switches = [] { return usage(RUSAGE_THREAD).ru_nvcsw; };
  constexpr int kCollectives = 300;
  long before = voluntary_switches();
  strategy.run([&] {
    Tensor x = ones({4});
    for (int i = 0; i < kCollectives; ++i) {
      x = get_replica_context().all_reduce(ReduceOp::MEAN, {x})[0];
    }
  });
  long woken = voluntary_switches() - before;
  EXPECT_LT(woken, 30) << "the caller woke " << woken << " times during " << kCollectives
                       << " all-reduces";
}

TEST(Strategy, AssignmentsInReplicaContextCombineByAggregation) {
  Devices devices(4);
  MirroredStrategy strategy;
  Variable mean(zeros({2}), "mean", false, VariableAggregation::MEAN);
  Variable total(zeros({2}), "total", false, VariableAggregation::SUM);
  Variable first(zeros({2}), "first", false, VariableAggregation::ONLY_FIRST_REPLICA);
  strategy.run([&] {
    double r = get_replica_context().replica_id_in_sync_group();
    Tensor v = full({2}, r + 1);
    mean.assign(v);
    total.assign(v);
    first.assign(v);
    EXPECT_EQ(values(mean.value()), (std::vector<float>{0, 0})) << "written before the step ended";
  });
  EXPECT_EQ(values(mean.value()), (std::vector<float>{2.5, 2.5}));
  EXPECT_EQ(values(total.value()), (std::vector<float>{10, 10}));
  EXPECT_EQ(values(first.value()), (std::vector<float>{1, 1}));

  // Changes add up, to the variable's value: 10 + (1 + 2 + 3 + 4) - 4 * 0.5, not 4 * 10 + ...
  Variable counter(full({1}, 10.0), "counter", false, VariableAggregation::SUM);
  Variable average(full({1}, 10.0), "average", false, VariableAggregation::MEAN);
  strategy.run([&] {
    double r = get_replica_context().replica_id_in_sync_group();
    Tensor change = full({1}, r + 1);
    counter.assign_add(change);
    assign_into(change, full({1}, 100.0));  // the change recorded is the value at the call
    counter.assign_sub(full({1}, 0.5));
    average.assign_add(full({1}, r + 1));
  });
  EXPECT_EQ(values(counter.value()), std::vector<float>{18});
  EXPECT_EQ(values(average.value()), std::vector<float>{12.5});

  Variable plain(zeros({2}), "plain");
  try {
    strategy.run([&] { plain.assign(ones({2})); });
    FAIL() << "an unaggregated variable was assigned on four replicas";
  } catch (const FailedPrecondition& e) {
    EXPECT_THAT(e.what(), HasSubstr("Variable \"plain\" was assigned on replica"));
    EXPECT_THAT(e.what(), HasSubstr("aggregation is NONE"));
  }
}

TEST(Strategy, AReplicaThatThrowsEndsTheOthersWaits) {
  Devices devices(3);
  MirroredStrategy strategy;
  for (int attempt = 0; attempt < 2; ++attempt) {  // the group is usable after a failure
    try {
      strategy.run([&] {
        auto& ctx = get_replica_context();
        if (ctx.replica_id_in_sync_group() == 1) {
          WEFT_FAIL(InvalidArgument) << "replica one's own error";
        }
        ctx.all_reduce(ReduceOp::SUM, {ones({4})});
      });
      FAIL() << "run returned";
    } catch (const InvalidArgument& e) {
      EXPECT_THAT(e.what(), HasSubstr("replica one's own error"));
    }
  }
  PerReplica<Tensor> ok =
      strategy.run([&] { return get_replica_context().all_reduce(ReduceOp::SUM, {ones({2})})[0]; });
  EXPECT_EQ(values(ok[0]), (std::vector<float>{3, 3}));
}

TEST(Strategy, MismatchedCollectivesFailEveryReplicaNamingBoth) {
  Devices devices(2);
  MirroredStrategy strategy;
  try {
    strategy.run([&] {
      auto& ctx = get_replica_context();
      int64_t n = ctx.replica_id_in_sync_group() == 0 ? 3 : 5;
      ctx.all_reduce(ReduceOp::SUM, {ones({n})});
    });
    FAIL() << "run returned";
  } catch (const FailedPrecondition& e) {
    EXPECT_THAT(e.what(), HasSubstr("replica 0 called all_reduce(SUM) #1 of (3,) float32"));
    EXPECT_THAT(e.what(), HasSubstr("replica 1 called all_reduce(SUM) #1 of (5,) float32"));
  }
  try {
    strategy.run([&] {
      auto& ctx = get_replica_context();
      if (ctx.replica_id_in_sync_group() == 0) ctx.all_reduce(ReduceOp::SUM, {ones({3})});
    });
    FAIL() << "run returned";
  } catch (const FailedPrecondition& e) {
    EXPECT_THAT(e.what(), HasSubstr("waits in all_reduce(SUM) #1"));
    EXPECT_THAT(e.what(), HasSubstr("returned from its step"));
  }
}

TEST(Strategy, DistributedDatasetCutsEachGlobalBatchIntoContiguousSlices) {
  Devices devices(3);
  MirroredStrategy strategy;
  Tensor x = reshape(arange(0, 10, 1, kFloat32), {10, 1});
  DistributedDataset ds =
      strategy.experimental_distribute_dataset(data::Dataset::from_tensor_slices(x).batch(4));
  std::vector<std::vector<int64_t>> sizes;
  std::vector<float> seen;
  int64_t step = 0;
  for (const DistributedElement& batch : ds) {
    std::vector<int64_t> s;
    for (int r = 0; r < 3; ++r) {
      const BatchSlice& slice = batch.slices[static_cast<size_t>(r)];
      EXPECT_EQ(slice.step, step);
      EXPECT_EQ(slice.examples, batch[r][0].dim(0));
      s.push_back(slice.examples);
      for (float v : values(batch[r][0])) seen.push_back(v);
    }
    sizes.push_back(s);
    ++step;
  }
  // 4 rows as 1, 1, 2; the last batch of 2 as 0, 1, 1: every row once, in order.
  EXPECT_EQ(sizes, (std::vector<std::vector<int64_t>>{{1, 1, 2}, {1, 1, 2}, {0, 1, 1}}));
  EXPECT_EQ(seen, values(x));
}

TEST(Strategy, DatasetsFromFunctionGiveOneElementPerReplica) {
  Devices devices(2);
  MirroredStrategy strategy;
  Tensor x = reshape(arange(0, 12, 1, kFloat32), {12, 1});
  DistributedDataset ds = strategy.distribute_datasets_from_function([&](const InputContext& c) {
    EXPECT_EQ(c.num_replicas_in_sync, 2);
    return data::Dataset::from_tensor_slices(x).batch(c.get_per_replica_batch_size(6));
  });
  auto it = ds.begin();
  std::optional<DistributedElement> b = it.next();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(values((*b)[1][0]), (std::vector<float>{3, 4, 5}));
  EXPECT_EQ(b->slices[1].first_example, 3);
  EXPECT_EQ(b->slices[1].global_batch_size, 6);
  int steps = 1;
  while (it.next()) ++steps;
  EXPECT_EQ(steps, 2);
  EXPECT_THROW(InputContext({1, 0, 4}).get_per_replica_batch_size(6), InvalidArgument);
}

// The replicas' compute_average_loss results add up to the mean over the global batch.
TEST(Strategy, ComputeAverageLossDividesByTheGlobalBatch) {
  Devices devices(2);
  MirroredStrategy strategy;
  Tensor losses = Tensor::from_vector<float>({1, 2, 3, 4, 5}, {5});
  DistributedElement batch = split_batch({losses}, 2, 0);
  PerReplica<Tensor> parts =
      strategy.run([](const data::Element& e) { return compute_average_loss(e[0]); }, batch);
  EXPECT_FLOAT_EQ(strategy.reduce(ReduceOp::SUM, parts).item<float>(), 3.0f);
  EXPECT_FLOAT_EQ(compute_average_loss(losses, 10).item<float>(), 1.5f);
}

TEST(Strategy, ScopeMakesVariablesThroughItsCreators) {
  std::vector<std::string> made;
  VariableCreatorScope outer([&](const VariableArgs& args, const auto& next) {
    made.push_back(args.name);
    VariableArgs renamed = args;
    renamed.name = "outer/" + args.name;
    return next(renamed);
  });
  Variable v(zeros({1}), "w");
  EXPECT_EQ(v.name(), "outer/w");
  EXPECT_EQ(made, std::vector<std::string>{"w"});
  Devices devices(2);
  MirroredStrategy strategy;
  {
    auto scope = strategy.scope();
    EXPECT_TRUE(has_strategy());
    EXPECT_TRUE(get_strategy() == strategy);
  }
  EXPECT_FALSE(has_strategy());
}

}  // namespace
}  // namespace weft::distribute
