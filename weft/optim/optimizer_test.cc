// weft::optim against NumPy: scripts/make_optim_goldens.py runs Keras' update rules in NumPy on
// two variables for five steps; each case here builds the same optimizer, applies the same
// gradients and compares the variables after every step and the slots after the last. Then the
// base class's contract: skipped gradients, slot names, hooks, handles, errors.
#include "weft/optim/optimizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <thread>

#include "weft/autodiff/tape.h"
#include "weft/core/config.h"
#include "weft/core/replica_context.h"
#include "weft/np/np.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/random.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"
#include "weft/optim/adadelta.h"
#include "weft/optim/adagrad.h"
#include "weft/optim/adam.h"
#include "weft/optim/adamax.h"
#include "weft/optim/ftrl.h"
#include "weft/optim/nadam.h"
#include "weft/optim/rmsprop.h"
#include "weft/optim/sgd.h"
#include "weft/testing/goldens.h"
#include "weft/testing/thread_determinism.h"

namespace weft::optim {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int kSteps = 5;

const std::string& golden_dir() {
  static const std::string dir = testing::golden_dir("make_optim_goldens");
  return dir;
}

Tensor golden(const std::string& file) { return np::load(golden_dir() + "/" + file + ".npy"); }

void expect_close(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  // float64 follows NumPy to rounding; float32 may differ by a few ulps (summation order of the
  // norms that clipping computes, coefficients rounded to float).
  bool f32 = got.dtype() == kFloat32;
  double atol = f32 ? 2e-6 : 1e-13, rtol = f32 ? 2e-6 : 1e-12;
  std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < w.size(); ++i) {
    EXPECT_NEAR(g[i], w[i], atol + rtol * std::fabs(w[i])) << what << " element " << i;
  }
}

// The optimizers of make_optim_goldens.py's CASES, built through weft's public API.
const std::map<std::string, std::function<Optimizer()>>& cases() {
  namespace sch = schedules;
  static const std::map<std::string, std::function<Optimizer()>> m = {
      {"sgd", [] { return SGD(0.1); }},
      {"sgd_defaults", [] { return SGD(); }},
      {"sgd_momentum", [] { return SGD({.learning_rate = 0.1, .momentum = 0.9}); }},
      {"sgd_nesterov",
       [] { return SGD({.learning_rate = 0.1, .momentum = 0.9, .nesterov = true}); }},
      {"sgd_clipnorm", [] { return SGD({.learning_rate = 0.1, .clipnorm = 1.0}); }},
      {"sgd_clipvalue", [] { return SGD({.learning_rate = 0.1, .clipvalue = 0.5}); }},
      {"sgd_global_clipnorm", [] { return SGD({.learning_rate = 0.1, .global_clipnorm = 1.0}); }},
      {"sgd_clipvalue_clipnorm",
       [] { return SGD({.learning_rate = 0.1, .clipnorm = 0.8, .clipvalue = 0.5}); }},
      {"sgd_exponential_decay", [] { return SGD(sch::ExponentialDecay(0.1, 2, 0.5, true)); }},
      {"adam", [] { return Adam(0.01); }},
      {"adam_defaults", [] { return Adam(); }},
      {"adam_amsgrad", [] { return Adam({.learning_rate = 0.01, .amsgrad = true}); }},
      {"adam_betas",
       [] {
         return Adam({.learning_rate = 0.02, .beta_1 = 0.5, .beta_2 = 0.75, .epsilon = 1e-3});
       }},
      {"adam_global_clipnorm",
       [] { return Adam({.learning_rate = 0.01, .global_clipnorm = 1.0}); }},
      {"adam_piecewise",
       [] {
         return Adam(sch::PiecewiseConstantDecay({1, 3}, {0.01, 0.005, 0.001}));
       }},
      {"adamw", [] { return AdamW({.learning_rate = 0.01, .weight_decay = 0.1}); }},
      {"adamw_defaults", [] { return AdamW(); }},
      {"adamw_amsgrad",
       [] { return AdamW({.learning_rate = 0.01, .weight_decay = 0.1, .amsgrad = true}); }},
      {"rmsprop", [] { return RMSprop(0.01); }},
      {"rmsprop_momentum", [] { return RMSprop({.learning_rate = 0.01, .momentum = 0.9}); }},
      {"rmsprop_centered", [] { return RMSprop({.learning_rate = 0.01, .centered = true}); }},
      {"rmsprop_centered_momentum",
       [] {
         return RMSprop({.learning_rate = 0.01, .rho = 0.8, .momentum = 0.5, .centered = true});
       }},
      {"adagrad", [] { return Adagrad(0.1); }},
      {"adagrad_options",
       [] {
         return Adagrad({.learning_rate = 0.05, .initial_accumulator_value = 0.5, .epsilon = 1e-3});
       }},
      {"adadelta", [] { return Adadelta(1.0); }},
      {"adadelta_options",
       [] { return Adadelta({.learning_rate = 0.5, .rho = 0.8, .epsilon = 1e-4}); }},
      {"adamax", [] { return Adamax(0.01); }},
      {"adamax_betas",
       [] {
         return Adamax({.learning_rate = 0.02, .beta_1 = 0.5, .beta_2 = 0.75, .epsilon = 1e-3});
       }},
      {"nadam", [] { return Nadam(0.01); }},
      {"nadam_betas",
       [] {
         return Nadam({.learning_rate = 0.02, .beta_1 = 0.5, .beta_2 = 0.75, .epsilon = 1e-3});
       }},
      {"ftrl", [] { return Ftrl(0.1); }},
      {"ftrl_l1_l2",
       [] {
         return Ftrl({.learning_rate = 0.1,
                      .l1_regularization_strength = 0.05,
                      .l2_regularization_strength = 0.1,
                      .beta = 0.5});
       }},
      {"ftrl_power_shrinkage",
       [] {
         return Ftrl({.learning_rate = 0.2,
                      .learning_rate_power = -0.7,
                      .l1_regularization_strength = 0.01,
                      .l2_shrinkage_regularization_strength = 0.3});
       }},
  };
  return m;
}

std::vector<std::string> golden_case_names() {
  std::vector<std::string> names;
  for (const auto& [name, make] : cases()) {
    names.push_back(name + "_f64");
    names.push_back(name + "_f32");
  }
  return names;
}

class OptimizerGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(OptimizerGolden, MatchesNumPy) {
  const std::string& name = GetParam();
  Optimizer opt = cases().at(name.substr(0, name.size() - 4))();
  std::vector<Variable> vars = {Variable(golden(name + ".v0.init"), "dense/kernel"),
                                Variable(golden(name + ".v1.init"), "dense/bias")};
  for (int t = 0; t < kSteps; ++t) {
    GradsAndVars gv;
    for (size_t k = 0; k < vars.size(); ++k) {
      gv.emplace_back(golden(name + ".v" + std::to_string(k) + ".g" + std::to_string(t)), vars[k]);
    }
    opt.apply_gradients(gv);
    for (size_t k = 0; k < vars.size(); ++k) {
      std::string file = name + ".v" + std::to_string(k) + ".w" + std::to_string(t);
      expect_close(vars[k].value(), golden(file), file);
    }
  }
  EXPECT_EQ(opt.iterations().value().item<int64_t>(), kSteps);
  for (size_t k = 0; k < vars.size(); ++k) {
    std::string prefix = name + ".v" + std::to_string(k) + ".slot.";
    int files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(golden_dir())) {
      std::string file = entry.path().filename().string();
      files += file.rfind(prefix, 0) == 0 && file.ends_with(".npy");
    }
    EXPECT_EQ(files, static_cast<int>(opt.get_slot_names().size())) << name << ": slot count";
    for (const std::string& slot : opt.get_slot_names()) {
      expect_close(opt.get_slot(vars[k], slot).value(), golden(prefix + slot), prefix + slot);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, OptimizerGolden, ::testing::ValuesIn(golden_case_names()),
                         [](const auto& info) { return info.param; });

Tensor vec(std::vector<double> v) { return Tensor::from_vector(v); }

// ---- updates in parts (several replicas each writing its part of every variable) -------------

// Replica 0 of `parts` replicas whose peers passed zeros: all_reduce returns the values as given,
// and merge_call_in_parts runs the parts one after another, last first.
class PartsContext : public distribute::ReplicaContext {
 public:
  explicit PartsContext(int parts) : parts_(parts) {}
  int replica_id_in_sync_group() const override { return 0; }
  int num_replicas_in_sync() const override { return parts_; }
  std::vector<Tensor> all_reduce(distribute::ReduceOp, const std::vector<Tensor>& v) override {
    return v;
  }
  void merge_call(const std::function<void()>& fn) override {
    ++whole;
    fn();
  }
  void merge_call_in_parts(const std::function<void(int, int)>& fn,
                           const std::function<void()>& then) override {
    ++in_parts;
    for (int p = parts_ - 1; p >= 0; --p) fn(p, parts_);
    then();
  }
  int whole = 0, in_parts = 0;

 private:
  int parts_;
};

using weft::testing::bytes_of;

// Every optimizer case, updated in 3 parts (of 16-element lines: 37 elements are 16 + 16 + 5, 7
// are 7 + 0 + 0) or all at once, gives the same bits in the variables and every slot; clipping
// and loss scaling need whole gradients, so those optimizers merge once instead.
TEST(Optimizer, UpdatesInPartsEqualOneUpdate) {
  for (const auto& [name, make] : cases()) {
    for (DType dtype : {kFloat32, kFloat64}) {
      SCOPED_TRACE(name + (dtype == kFloat32 ? " float32" : " float64"));
      Optimizer whole = make(), parts = make();
      auto variables = [&] {
        return std::vector<Variable>{
            Variable(cast(stateless_random_normal({37}, {1, 2}), dtype), "a"),
            Variable(cast(stateless_random_normal({7}, {3, 4}), dtype), "b")};
      };
      std::vector<Variable> w = variables(), p = variables();
      PartsContext three(3);
      for (int t = 0; t < 4; ++t) {
        std::vector<Tensor> g{cast(stateless_random_normal({37}, {5, t}), dtype),
                              cast(stateless_random_normal({7}, {6, t}), dtype)};
        whole.apply_gradients({{g[0], w[0]}, {g[1], w[1]}});
        distribute::ReplicaContextScope scope(&three);
        parts.apply_gradients({{g[0], p[0]}, {g[1], p[1]}});
      }
      bool clips = name.find("clip") != std::string::npos;
      EXPECT_EQ(three.in_parts, clips ? 0 : 4);
      EXPECT_EQ(three.whole, clips ? 4 : 0);
      EXPECT_EQ(parts.iterations().value().item<int64_t>(), 4);
      for (size_t k = 0; k < w.size(); ++k) {
        EXPECT_EQ(bytes_of(p[k].value()), bytes_of(w[k].value())) << w[k].name();
        for (const std::string& slot : whole.get_slot_names()) {
          EXPECT_EQ(bytes_of(parts.get_slot(p[k], slot).value()),
                    bytes_of(whole.get_slot(w[k], slot).value()))
              << w[k].name() << "/" << slot;
        }
      }
    }
  }
}

TEST(Optimizer, ElementPartsAreWholeLinesInOrder) {
  for (int64_t n : {0, 1, 15, 16, 17, 37, 1000, 548800}) {
    for (int parts : {1, 2, 3, 8}) {
      int64_t at = 0;
      for (int k = 0; k < parts; ++k) {
        auto [lo, hi] = distribute::element_part(n, parts, k);
        EXPECT_EQ(lo, at) << n << " in " << parts;
        EXPECT_LE(lo, hi);
        if (hi < n) {
          EXPECT_EQ(hi % 16, 0) << n << " in " << parts << ", part " << k;
        }
        at = hi;
      }
      EXPECT_EQ(at, n) << n << " in " << parts;
    }
  }
  // As even as whole lines allow: 548800 elements are 34300 lines, 17150 for each of two.
  auto half = distribute::element_part(548800, 2, 0);
  EXPECT_EQ(half.first, 0);
  EXPECT_EQ(half.second, 274400);
}

// ---- slots and checkpoint names ------------------------------------------------------------

std::vector<std::string> names_of(const Optimizer& opt) {
  std::vector<std::string> names;
  for (const auto& [name, v] : opt.tracked_variables()) names.push_back(name);
  return names;
}

TEST(Optimizer, SlotNamesInCreationOrder) {
  Adam opt({.learning_rate = 0.01, .amsgrad = true});
  Variable kernel(vec({1, 2}), "dense/kernel"), bias(vec({3}), "dense/bias");
  EXPECT_THAT(names_of(opt), ElementsAre("iterations"));
  opt.apply_gradients({{vec({1, 1}), kernel}, {vec({1}), bias}});
  EXPECT_THAT(names_of(opt),
              ElementsAre("iterations", "dense/kernel/m", "dense/kernel/v", "dense/kernel/vhat",
                          "dense/bias/m", "dense/bias/v", "dense/bias/vhat"));
  for (const auto& [name, v] : opt.tracked_variables()) {
    EXPECT_EQ(v.name(), name);
    EXPECT_FALSE(v.trainable()) << name;
  }
  EXPECT_EQ(opt.iterations().dtype(), kInt64);
  EXPECT_EQ(opt.iterations().shape(), Shape{});
  EXPECT_EQ(opt.get_slot(kernel, "m").shape(), kernel.shape());
  EXPECT_EQ(opt.variables().size(), 7u);
  // A second update creates nothing new.
  opt.apply_gradients({{vec({1, 1}), kernel}, {vec({1}), bias}});
  EXPECT_EQ(opt.tracked_variables().size(), 7u);
}

TEST(Optimizer, SlotNamesPerOptimizer) {
  EXPECT_TRUE(SGD().get_slot_names().empty());
  EXPECT_THAT(SGD({.momentum = 0.5}).get_slot_names(), ElementsAre("momentum"));
  EXPECT_THAT(Adam().get_slot_names(), ElementsAre("m", "v"));
  EXPECT_THAT(AdamW({.amsgrad = true}).get_slot_names(), ElementsAre("m", "v", "vhat"));
  EXPECT_THAT(RMSprop().get_slot_names(), ElementsAre("rms"));
  EXPECT_THAT(RMSprop({.momentum = 0.9, .centered = true}).get_slot_names(),
              ElementsAre("rms", "momentum", "mg"));
  EXPECT_THAT(Adagrad().get_slot_names(), ElementsAre("accumulator"));
  EXPECT_THAT(Adadelta().get_slot_names(), ElementsAre("accum_grad", "accum_var"));
  EXPECT_THAT(Adamax().get_slot_names(), ElementsAre("m", "v"));
  EXPECT_THAT(Nadam().get_slot_names(), ElementsAre("m", "v"));
  EXPECT_THAT(Ftrl().get_slot_names(), ElementsAre("accumulator", "linear"));
}

TEST(Optimizer, EveryOptimizerRoundTripsThroughItsConfig) {
  for (const auto& [name, make] : cases()) {
    Optimizer a = make();
    Optimizer b = deserialize(a.get_config());
    EXPECT_EQ(b.get_config().to_json(), a.get_config().to_json()) << name;
    EXPECT_EQ(b.get_slot_names(), a.get_slot_names()) << name;
  }
}

TEST(Optimizer, SameVariableNamesGetUniqueCheckpointNames) {
  SGD opt({.momentum = 0.9});
  Variable a(vec({1})), b(vec({2}));  // both named "Variable"
  opt.apply_gradients({{vec({1}), a}, {vec({1}), b}});
  EXPECT_THAT(names_of(opt), ElementsAre("iterations", "Variable/momentum", "Variable_1/momentum"));
}

TEST(Optimizer, AdagradAccumulatorStartsAtInitialValue) {
  Adagrad opt({.initial_accumulator_value = 0.25});
  Variable w(vec({1, 2}), "w");
  opt.build({w});
  EXPECT_THAT(opt.get_slot(w, "accumulator").value().to_vector<double>(), ElementsAre(0.25, 0.25));
  EXPECT_EQ(w.value().to_vector<double>(), std::vector<double>({1, 2}));
  EXPECT_EQ(opt.iterations().value().item<int64_t>(), 0);
}

TEST(Optimizer, BuildThenRestoreSlotsBeforeTheFirstStep) {
  // What restoring a checkpoint does: slots built up front, then assigned saved values.
  Variable w(vec({1.0}), "w");
  Adam restored(0.1);
  restored.build({w});
  for (auto& [name, v] : restored.tracked_variables()) {
    if (name == "iterations") v.assign(Tensor::scalar(3, kInt64));
    if (name == "w/m") v.assign(vec({0.5}));
    if (name == "w/v") v.assign(vec({0.25}));
  }
  restored.apply_gradients({{vec({1.0}), w}});
  double m = 0.5 + (1 - 0.5) * 0.1, v = 0.25 + (1 - 0.25) * 0.001;
  double alpha = 0.1 * std::sqrt(1 - std::pow(0.999, 4)) / (1 - std::pow(0.9, 4));
  EXPECT_NEAR(w.value().item<double>(), 1.0 - alpha * m / (std::sqrt(v) + 1e-7), 1e-15);
  EXPECT_EQ(restored.iterations().value().item<int64_t>(), 4);
}

// ---- gradients: undefined, strided, minimize ------------------------------------------------

TEST(Optimizer, SkipsUndefinedGradients) {
  Adam opt(0.1);
  Variable a(vec({1, 2}), "a"), b(vec({3}), "b");
  opt.apply_gradients({{Tensor(), a}, {vec({1}), b}});
  EXPECT_EQ(a.value().to_vector<double>(), std::vector<double>({1, 2}));
  EXPECT_NE(b.value().item<double>(), 3.0);
  EXPECT_THAT(names_of(opt), ElementsAre("iterations", "b/m", "b/v"));
  EXPECT_EQ(opt.iterations().value().item<int64_t>(), 1);
  EXPECT_THROW(opt.get_slot(a, "m"), FailedPrecondition);
}

TEST(Optimizer, NoGradientAtAllIsAnError) {
  SGD opt;
  Variable a(vec({1}), "dense/kernel"), b(vec({1}), "dense/bias");
  EXPECT_THAT(
      [&] {
        opt.apply_gradients({{Tensor(), a}, {Tensor(), b}});
      },
      ::testing::ThrowsMessage<InvalidArgument>(
          AllOf(HasSubstr("no gradients"), HasSubstr("dense/kernel, dense/bias"))));
  EXPECT_THROW(opt.apply_gradients({}), InvalidArgument);
  EXPECT_EQ(opt.iterations().value().item<int64_t>(), 0);
}

TEST(Optimizer, StridedAndBroadcastGradients) {
  SGD opt(0.5);
  Variable w(zeros({2, 3}, kFloat64), "w");
  // A transposed view and a stride-0 broadcast, as tape gradients often are.
  Tensor gt = transpose(Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, {3, 2}));
  opt.apply_gradients({{gt, w}});
  EXPECT_THAT(w.value().to_vector<double>(), ElementsAre(-0.5, -1.5, -2.5, -1, -2, -3));
  opt.apply_gradients({{broadcast_to(vec({2}), {2, 3}), w}});
  EXPECT_THAT(w.value().to_vector<double>(), ElementsAre(-1.5, -2.5, -3.5, -2, -3, -4));
}

TEST(Optimizer, GradientOfAnotherDtypeIsCast) {
  SGD opt(1.0);
  Variable w(Tensor::from_vector<float>({1, 2}), "w");
  opt.apply_gradients({{vec({0.5, 0.25}), w}});
  EXPECT_EQ(w.dtype(), kFloat32);
  EXPECT_THAT(w.value().to_vector<float>(), ElementsAre(0.5f, 1.75f));
}

TEST(Optimizer, HalfPrecisionVariablesComputeInFloat) {
  Adam adam(0.5);
  SGD sgd({.learning_rate = 0.5, .momentum = 0.5});
  Variable a(cast(Tensor::from_vector<float>({1, 2}), kBFloat16), "a");
  Variable b(cast(Tensor::from_vector<float>({1, 2}), kFloat16), "b");
  sgd.apply_gradients({{cast(Tensor::from_vector<float>({1, -1}), kBFloat16), a}});
  EXPECT_THAT(a.value().to_vector<float>(), ElementsAre(0.5f, 2.5f));
  EXPECT_EQ(sgd.get_slot(a, "momentum").dtype(), kBFloat16);
  adam.apply_gradients({{cast(Tensor::from_vector<float>({1, -1}), kFloat16), b}});
  // The first Adam step moves each weight by lr (times g / (|g| + epsilon)).
  EXPECT_THAT(b.value().to_vector<float>(), ElementsAre(0.5f, 2.5f));
}

TEST(Optimizer, GradientAliasingTheVariable) {
  SGD opt(0.5);
  Variable w(Tensor::from_vector<double>({1, 2, 3, 4}, {2, 2}), "w");
  // The gradient is a transposed view of w itself: read before any element is written.
  opt.apply_gradients({{transpose(w.value()), w}});
  EXPECT_THAT(w.value().to_vector<double>(), ElementsAre(0.5, 0.5, 2, 2));
}

TEST(Optimizer, MinimizeTakesTheLossAndTheTape) {
  SGD opt(0.1);
  Variable w(vec({1, -2, 3}), "w"), unused(vec({7}), "unused");
  GradientTape tape;
  Tensor loss = sum(square(w.value()));  // d/dw = 2w
  opt.minimize(loss, {w, unused}, tape);
  std::vector<double> got = w.value().to_vector<double>();
  EXPECT_NEAR(got[0], 0.8, 1e-15);
  EXPECT_NEAR(got[1], -1.6, 1e-15);
  EXPECT_NEAR(got[2], 2.4, 1e-15);
  EXPECT_EQ(unused.value().item<double>(), 7.0);  // no gradient: skipped
  EXPECT_EQ(opt.iterations().value().item<int64_t>(), 1);
}

TEST(Optimizer, ComputeGradientsPairsThemWithTheVariables) {
  Adam opt;
  Variable w(vec({1, 2}), "w");
  GradientTape tape;
  Tensor loss = sum(w.value() * 3.0);
  GradsAndVars gv = opt.compute_gradients(loss, {w}, tape);
  ASSERT_EQ(gv.size(), 1u);
  EXPECT_TRUE(gv[0].second == w);
  EXPECT_THAT(gv[0].first.to_vector<double>(), ElementsAre(3, 3));
  EXPECT_EQ(opt.iterations().value().item<int64_t>(), 0);
}

// ---- hooks --------------------------------------------------------------------------------

TEST(Optimizer, TransformersRunInOrderAfterClipping) {
  std::vector<double> seen;
  GradientTransformer add_one = [](GradsAndVars gv) {
    for (auto& [g, v] : gv) g = g + 1.0;
    return gv;
  };
  GradientTransformer times_three = [&](GradsAndVars gv) {
    for (auto& [g, v] : gv) {
      g = g * 3.0;
      seen = g.to_vector<double>();
    }
    return gv;
  };
  SGD opt(
      {.learning_rate = 1.0, .clipvalue = 0.5, .gradient_transformers = {add_one, times_three}});
  Variable w(vec({0, 0}), "w");
  opt.apply_gradients({{vec({10, 0.25}), w}});
  // clip to [-0.5, 0.5], then +1, then *3.
  EXPECT_THAT(seen, ElementsAre(4.5, 3.75));
  EXPECT_THAT(w.value().to_vector<double>(), ElementsAre(-4.5, -3.75));
  EXPECT_EQ(opt.gradient_transformers().size(), 2u);
  opt.set_gradient_transformers({});
  opt.apply_gradients({{vec({10, 0.25}), w}});
  EXPECT_THAT(w.value().to_vector<double>(), ElementsAre(-5, -4));
}

TEST(Optimizer, AggregatorCombinesReplicasBeforeTransforms) {
  int calls = 0;
  // A stand-in for an all-reduce over two replicas that computed the same gradients.
  GradientAggregator two_replicas = [&](GradsAndVars gv) {
    ++calls;
    for (auto& [g, v] : gv) g = g * 2.0;
    return gv;
  };
  SGD opt({.learning_rate = 1.0, .clipvalue = 3.0});
  EXPECT_FALSE(static_cast<bool>(opt.gradient_aggregator()));  // identity on one replica
  opt.set_gradient_aggregator(two_replicas);
  Variable w(vec({0, 0}), "w");
  opt.apply_gradients({{vec({1, 2}), w}});
  EXPECT_EQ(calls, 1);
  EXPECT_THAT(w.value().to_vector<double>(), ElementsAre(-2, -3));  // aggregated, then clipped
  opt.apply_gradients({{vec({1, 2}), w}}, /*experimental_aggregate_gradients=*/false);
  EXPECT_EQ(calls, 1);
  EXPECT_THAT(w.value().to_vector<double>(), ElementsAre(-3, -5));
}

TEST(Optimizer, AggregatorFromOptions) {
  SGD opt({.learning_rate = 1.0, .gradient_aggregator = [](GradsAndVars gv) {
             for (auto& [g, v] : gv) g = g * 0.5;
             return gv;
           }});
  Variable w(vec({0}), "w");
  opt.apply_gradients({{vec({4}), w}});
  EXPECT_EQ(w.value().item<double>(), -2.0);
}

TEST(Optimizer, ClipnormLeavesSmallGradientsAlone) {
  SGD opt({.learning_rate = 1.0, .clipnorm = 5.0});
  Variable a(vec({0, 0}), "a"), b(vec({0, 0}), "b");
  opt.apply_gradients({{vec({3, 4}), a}, {vec({30, 40}), b}});
  EXPECT_THAT(a.value().to_vector<double>(), ElementsAre(-3, -4));
  EXPECT_THAT(b.value().to_vector<double>(), ElementsAre(-3, -4));
}

TEST(Optimizer, GlobalClipnormScalesAllGradientsTogether) {
  SGD opt({.learning_rate = 1.0, .global_clipnorm = 2.5});
  Variable a(vec({0}), "a"), b(vec({0}), "b");
  opt.apply_gradients({{vec({3}), a}, {vec({4}), b}});  // global norm 5
  EXPECT_DOUBLE_EQ(a.value().item<double>(), -1.5);
  EXPECT_DOUBLE_EQ(b.value().item<double>(), -2.0);
}

// ---- handles, learning rate, state ---------------------------------------------------------

TEST(Optimizer, HandlesShareState) {
  Optimizer opt = Adam(1e-3);  // stored as the base: nothing sliced away
  Optimizer copy = opt;
  Variable w(vec({1}), "w");
  copy.apply_gradients({{vec({1}), w}});
  EXPECT_EQ(opt.iterations().value().item<int64_t>(), 1);
  EXPECT_EQ(opt.name(), "Adam");
  EXPECT_THAT(names_of(opt), ElementsAre("iterations", "w/m", "w/v"));
  Optimizer undefined;
  EXPECT_FALSE(undefined.defined());
  EXPECT_THROW(undefined.apply_gradients({{vec({1}), w}}), FailedPrecondition);
}

TEST(Optimizer, ConstructorForms) {
  EXPECT_DOUBLE_EQ(Adam(1e-3).current_learning_rate(), 1e-3);
  EXPECT_DOUBLE_EQ(Adam({.learning_rate = 2e-3}).current_learning_rate(), 2e-3);
  EXPECT_DOUBLE_EQ(Adam().current_learning_rate(), 1e-3);
  EXPECT_DOUBLE_EQ(SGD().current_learning_rate(), 0.01);
  EXPECT_DOUBLE_EQ(RMSprop().current_learning_rate(), 1e-3);
  EXPECT_DOUBLE_EQ(Adagrad().current_learning_rate(), 1e-3);
  EXPECT_DOUBLE_EQ(AdamW().current_learning_rate(), 1e-3);
  EXPECT_EQ(AdamW().name(), "AdamW");
  EXPECT_EQ(SGD({.name = "my_sgd"}).name(), "my_sgd");
}

TEST(Optimizer, LearningRateScheduleFollowsIterations) {
  SGD opt(schedules::PiecewiseConstantDecay({0, 1}, {1.0, 0.5, 0.25}));
  Variable w(vec({0}), "w");
  std::vector<double> rates;
  for (int i = 0; i < 3; ++i) {
    rates.push_back(opt.current_learning_rate());
    opt.apply_gradients({{vec({1}), w}});
  }
  EXPECT_THAT(rates, ElementsAre(1.0, 0.5, 0.25));
  EXPECT_DOUBLE_EQ(w.value().item<double>(), -1.75);
  EXPECT_FALSE(opt.learning_rate().is_constant());
  opt.set_learning_rate(0.125);
  EXPECT_TRUE(opt.learning_rate().is_constant());
  opt.apply_gradients({{vec({1}), w}});
  EXPECT_DOUBLE_EQ(w.value().item<double>(), -1.875);
}

TEST(Optimizer, TrackedStateRestoresAChangedLearningRate) {
  SGD a(0.1);
  a.set_learning_rate(0.0123);  // e.g. by ReduceLROnPlateau
  SGD b(0.1);
  b.restore_state(a.tracked_state());
  EXPECT_EQ(b.current_learning_rate(), 0.0123);
  b.restore_state("");
  EXPECT_EQ(b.current_learning_rate(), 0.0123);
  EXPECT_THROW(b.restore_state("learning_rate=banana"), DataLoss);
  SGD scheduled(schedules::ExponentialDecay(1.0, 10, 0.5));
  EXPECT_EQ(scheduled.tracked_state(), "");
  scheduled.restore_state(a.tracked_state());  // a schedule is kept
  EXPECT_FALSE(scheduled.learning_rate().is_constant());
}

TEST(Optimizer, UpdateIsNotRecordedByTapes) {
  SGD opt({.learning_rate = 0.1, .momentum = 0.9, .clipnorm = 1.0});
  Variable w(vec({1, 2}), "w");
  GradientTape tape(/*persistent=*/true);
  Tensor y = sum(w.value() * 2.0);
  opt.apply_gradients({{vec({3, 4}), w}});
  // Only the multiply and the sum were recorded: d y / d w is still 2.
  EXPECT_THAT(tape.gradient(y, w.value()).to_vector<double>(), ElementsAre(2, 2));
}

// A user-defined optimizer through the Algorithm extension point: sign SGD counting its steps.
class SignSgd : public Optimizer {
  struct Rule : Algorithm {
    std::vector<Slot> slots() const override { return {{"count", 0.0}}; }
    void update(const Tensor& grad, const Tensor& var, std::span<const Tensor> slots,
                const Step& step) const override {
      assign_into(var, var - sign(grad) * step.learning_rate);
      assign_into(slots[0], slots[0] + 1.0);
    }
  };

 public:
  explicit SignSgd(double lr)
      : Optimizer(std::make_shared<Rule>(), {.name = "SignSgd", .learning_rate = lr}) {}
};

TEST(Optimizer, CustomAlgorithm) {
  SignSgd opt(0.25);
  Variable w(vec({1, 1}), "w");
  opt.apply_gradients({{vec({3, -0.1}), w}});
  opt.apply_gradients({{vec({3, -0.1}), w}});
  EXPECT_THAT(w.value().to_vector<double>(), ElementsAre(0.5, 1.5));
  EXPECT_THAT(opt.get_slot(w, "count").value().to_vector<double>(), ElementsAre(2, 2));
  EXPECT_THAT(names_of(opt), ElementsAre("iterations", "w/count"));
}

// ---- parallel and deterministic --------------------------------------------------------------

TEST(Optimizer, LargeVariableMatchesComposedOpsForAnyThreadCount) {
  // Large enough for parallel_for to split the fused loop.
  const int64_t n = 300001;
  Tensor init = stateless_random_normal({n}, {1, 0});
  Tensor grad = stateless_random_normal({n}, {2, 0});
  auto run = [&](int threads) {
    int before = config::num_threads();
    config::set_num_threads(threads);
    Adam opt({.learning_rate = 0.01, .amsgrad = true});
    Variable w(init, "w");
    for (int i = 0; i < 3; ++i) opt.apply_gradients({{grad, w}});
    config::set_num_threads(before);
    return w.value().to_vector<float>();
  };
  std::vector<float> one = run(1), two = run(2);
  EXPECT_EQ(one, two);  // bit-identical
  // The same three steps composed from ops (a constant gradient keeps vhat == v).
  Tensor m = zeros({n}), v = zeros({n}), w = init;
  for (int t = 1; t <= 3; ++t) {
    m = m + (grad - m) * 0.1;
    v = v + (grad * grad - v) * 0.001;
    double alpha = 0.01 * std::sqrt(1 - std::pow(0.999, t)) / (1 - std::pow(0.9, t));
    w = w - m * alpha / (sqrt(v) + 1e-7);
  }
  std::vector<float> want = w.to_vector<float>();
  for (int64_t i = 0; i < n; i += 997) EXPECT_NEAR(one[i], want[i], 1e-5) << i;
  EXPECT_NEAR(one[n - 1], want[n - 1], 1e-5);
}

TEST(Optimizer, ConcurrentUpdatesOfDistinctVariables) {
  SGD opt({.learning_rate = 1.0, .momentum = 0.5});
  std::vector<Variable> vars;
  for (int i = 0; i < 4; ++i) vars.emplace_back(vec({0}), "v" + std::to_string(i));
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; k < 50; ++k) opt.apply_gradients({{vec({1}), vars[i]}});
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(opt.iterations().value().item<int64_t>(), 200);
  EXPECT_EQ(opt.tracked_variables().size(), 5u);
  // Each variable took its own 50 steps, whatever the interleaving: velocity = 0.5 velocity - 1,
  // w += velocity.
  double velocity = 0, w = 0;
  for (int k = 0; k < 50; ++k) {
    velocity = 0.5 * velocity - 1;
    w += velocity;
  }
  for (const Variable& v : vars) {
    EXPECT_NEAR(v.value().item<double>(), w, 1e-4 * std::fabs(w)) << v.name();
    EXPECT_NEAR(opt.get_slot(v, "momentum").value().item<double>(), velocity, 1e-5) << v.name();
  }
}

// ---- errors ----------------------------------------------------------------------------------

TEST(OptimizerErrors, NegativeLearningRate) {
  EXPECT_THAT([] { SGD(-0.1); },
              ::testing::ThrowsMessage<InvalidArgument>(
                  AllOf(HasSubstr("SGD"), HasSubstr("learning_rate"), HasSubstr("-0.1"))));
  EXPECT_THROW(Adam({.learning_rate = -1}), InvalidArgument);
  EXPECT_THROW(Adam().set_learning_rate(std::nan("")), InvalidArgument);
  // A schedule is checked at each step.
  SGD opt(schedules::LearningRateSchedule([](int64_t step) { return 0.1 - step * 0.1; }, "down"));
  Variable w(vec({0}), "w");
  opt.apply_gradients({{vec({1}), w}});
  opt.apply_gradients({{vec({1}), w}});
  EXPECT_THAT(
      [&] {
        opt.apply_gradients({{vec({1}), w}});
      },
      ::testing::ThrowsMessage<InvalidArgument>(
          AllOf(HasSubstr("down"), HasSubstr("step 2"), HasSubstr("-0.1"))));
  EXPECT_EQ(opt.iterations().value().item<int64_t>(), 2);
}

TEST(OptimizerErrors, GradientShapeMismatchNamesVariableAndShapes) {
  Adam opt;
  Variable w(zeros({2, 3}, kFloat64), "dense/kernel");
  EXPECT_THAT(
      [&] {
        opt.apply_gradients({{zeros({3, 2}, kFloat64), w}});
      },
      ::testing::ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("Adam.apply_gradients"),
                                                      HasSubstr("dense/kernel"),
                                                      HasSubstr("(3, 2)"), HasSubstr("(2, 3)"))));
  EXPECT_EQ(opt.tracked_variables().size(), 1u);  // nothing created
  // A transformer returning a wrong shape is caught too.
  SGD bad({.gradient_transformers = {[](GradsAndVars gv) {
             for (auto& [g, v] : gv) g = zeros({5}, kFloat64);
             return gv;
           }}});
  EXPECT_THAT(
      [&] {
        bad.apply_gradients({{zeros({2, 3}, kFloat64), w}});
      },
      ::testing::ThrowsMessage<InvalidArgument>(
          AllOf(HasSubstr("gradient transformer"), HasSubstr("(5,)"))));
}

TEST(OptimizerErrors, BadHyperparameters) {
  EXPECT_THROW(SGD({.momentum = 1.5}), InvalidArgument);
  EXPECT_THROW(SGD({.momentum = -0.1}), InvalidArgument);
  EXPECT_THAT([] { Adam({.beta_1 = 1.0}); },
              ::testing::ThrowsMessage<InvalidArgument>(HasSubstr("beta_1")));
  EXPECT_THROW(Adam({.epsilon = -1}), InvalidArgument);
  EXPECT_THROW(AdamW({.weight_decay = -0.1}), InvalidArgument);
  EXPECT_THROW(RMSprop({.rho = 2}), InvalidArgument);
  EXPECT_THROW(Adagrad({.initial_accumulator_value = -1}), InvalidArgument);
  EXPECT_THROW(Adadelta({.rho = 1.5}), InvalidArgument);
  EXPECT_THROW(Adamax({.beta_2 = 1.0}), InvalidArgument);
  EXPECT_THROW(Nadam({.beta_1 = -0.5}), InvalidArgument);
  EXPECT_THAT([] { Ftrl({.learning_rate_power = 0.5}); },
              ::testing::ThrowsMessage<InvalidArgument>(HasSubstr("learning_rate_power")));
  EXPECT_THROW(Ftrl({.l1_regularization_strength = -1}), InvalidArgument);
  EXPECT_THROW(SGD({.clipnorm = 0.0}), InvalidArgument);
  EXPECT_THROW(SGD({.clipvalue = -1.0}), InvalidArgument);
  EXPECT_THAT([] { SGD({.clipnorm = 1.0, .global_clipnorm = 1.0}); },
              ::testing::ThrowsMessage<InvalidArgument>(
                  AllOf(HasSubstr("clipnorm"), HasSubstr("global_clipnorm"))));
}

TEST(OptimizerErrors, NonFloatingVariablesAndGradients) {
  SGD opt;
  Variable count(Tensor::from_vector<int32_t>({1, 2}), "count");
  EXPECT_THAT(
      [&] {
        opt.apply_gradients({{Tensor::from_vector<float>({1, 1}), count}});
      },
      ::testing::ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("count"), HasSubstr("int32"))));
  Variable w(vec({1, 2}), "w");
  EXPECT_THROW(opt.apply_gradients({{Tensor::from_vector<int32_t>({1, 1}), w}}), InvalidArgument);
  EXPECT_THROW(opt.build({count}), InvalidArgument);
  EXPECT_THROW(opt.apply_gradients({{vec({1}), Variable()}}), InvalidArgument);
}

TEST(OptimizerErrors, GetSlot) {
  Adam opt;
  Variable w(vec({1}), "w");
  EXPECT_THROW(opt.get_slot(w, "m"), FailedPrecondition);
  opt.build({w});
  EXPECT_THAT([&] { opt.get_slot(w, "momentum"); },
              ::testing::ThrowsMessage<InvalidArgument>(HasSubstr("\"momentum\"")));
}

// A variable whose value lives on a parameter server (a VariableBinding) is updated there: inside
// a closure the optimizer stages its final gradient (clipped) with the step, and counts the step;
// outside one it refuses, naming the variable, since updating the copy here would be lost.
TEST(Optimizer, StagesTheGradientsOfVariablesThatLiveElsewhere) {
  struct Elsewhere : VariableBinding {
    void refresh(const Tensor&) const override {}
    void write(const Tensor&) const override { ++writes; }
    bool stage_gradient(const GradientUpdate& u) const override {
      if (in_closure) staged.push_back(u);
      return in_closure;
    }
    mutable int writes = 0;
    mutable std::vector<GradientUpdate> staged;
    bool in_closure = false;
  };
  Variable v(zeros({3}), "remote/kernel");
  auto binding = std::make_shared<Elsewhere>();
  v.bind(binding);
  SGD sgd(SGDOptions{.learning_rate = 0.1, .momentum = 0.5, .clipnorm = 1.0});
  try {
    sgd.apply_gradients({{full({3}, 1.0f), v}});
    FAIL() << "an update of a bound variable's copy outside a closure was accepted";
  } catch (const FailedPrecondition& e) {
    EXPECT_THAT(e.what(),
                ::testing::HasSubstr("variable \"remote/kernel\" lives on a parameter server"));
  }
  binding->in_closure = true;
  sgd.apply_gradients({{full({3}, 2.0f), v}});
  sgd.apply_gradients({{full({3}, 0.0f), v}});
  ASSERT_EQ(binding->staged.size(), 2u);
  const float clipped = static_cast<float>(2.0 / std::sqrt(12.0));  // to norm 1
  for (float g : binding->staged[0].gradient.to_vector<float>()) EXPECT_FLOAT_EQ(g, clipped);
  EXPECT_EQ(binding->staged[0].learning_rate, 0.1);
  EXPECT_EQ(binding->staged[0].iterations, 0);
  EXPECT_EQ(binding->staged[1].iterations, 1);  // iterations (local here) counts the steps
  EXPECT_EQ(binding->staged[0].optimizer, sgd.algorithm().get_config().to_json());
  EXPECT_EQ(sgd.iterations().value().item<int64_t>(), 2);
  EXPECT_EQ(binding->writes, 0);
  EXPECT_EQ(v.value().to_vector<float>(), std::vector<float>(3, 0.0f));  // not updated here
  EXPECT_THROW(sgd.get_slot(v, "momentum"), FailedPrecondition);         // its slots are there

  // Updated with a variable that lives here: refused, naming it.
  Variable local(zeros({3}), "local/bias");
  EXPECT_THAT(
      [&] {
        sgd.apply_gradients({{full({3}, 1.0f), v}, {full({3}, 1.0f), local}});
      },
      ::testing::ThrowsMessage<FailedPrecondition>(
          ::testing::HasSubstr("variable \"local/bias\" lives in this process")));
}

}  // namespace
}  // namespace weft::optim
