#include "weft/autodiff/tape.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "weft/autodiff/variable.h"
#include "weft/core/errors.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/linalg.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"
#include "weft/testing/gradient_check.h"

namespace weft {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::second_derivative_check;
using ::testing::ThrowsMessage;
using testing::uniform;

Tensor vec(std::vector<double> v) { return Tensor::from_vector(v); }

TEST(GradientTape, WatchedTensor) {
  Tensor x = vec({1, 2, 3});
  GradientTape tape;
  tape.watch(x);
  Tensor g = tape.gradient(sum(x * x), x);
  EXPECT_THAT(g.to_vector<double>(), ElementsAre(2, 4, 6));
  EXPECT_EQ(g.dtype(), kFloat64);
  EXPECT_EQ(g.shape(), x.shape());
}

TEST(GradientTape, UnwatchedTensorHasNoGradient) {
  Tensor x = vec({1, 2});
  GradientTape tape;
  Tensor g = tape.gradient(sum(x * x), x);
  EXPECT_FALSE(g.defined());
}

TEST(GradientTape, IntegerTensorsAreNotWatched) {
  Tensor i = Tensor::from_vector<int32_t>({1, 2});
  GradientTape tape;
  tape.watch(i);
  Tensor y = sum(cast(i, kFloat64) * 3.0);
  EXPECT_FALSE(tape.gradient(y, i).defined());
}

TEST(GradientTape, SeveralSources) {
  Tensor x = vec({1, 2}), y = vec({3, 4}), z = vec({5, 6});
  GradientTape tape;
  tape.watch({x, y, z});
  Tensor f = sum(x * y + sin(z) * x);
  std::vector<Tensor> g = tape.gradient(f, {x, y, z});
  ASSERT_EQ(g.size(), 3u);
  EXPECT_NEAR(g[0].to_vector<double>()[1], 4 + std::sin(6.0), 1e-15);
  EXPECT_THAT(g[1].to_vector<double>(), ElementsAre(1, 2));
  EXPECT_NEAR(g[2].to_vector<double>()[0], std::cos(5.0) * 1, 1e-15);
  EXPECT_NEAR(g[2].to_vector<double>()[1], std::cos(6.0) * 2, 1e-15);
}

TEST(GradientTape, SourceUsedOnSeveralPathsAccumulates) {
  Tensor x = vec({2});
  GradientTape tape;
  tape.watch(x);
  Tensor a = x * 3.0;
  Tensor y = a * x + exp(x) + a;  // 3x^2 + e^x + 3x
  EXPECT_NEAR(tape.gradient(y, x).item<double>(), 12 + std::exp(2.0) + 3, 1e-12);
}

TEST(GradientTape, UnconnectedSources) {
  Tensor x = vec({1, 2}), z = Tensor::from_vector<float>({7, 8, 9});
  GradientTape tape(/*persistent=*/true);
  tape.watch({x, z});
  Tensor y = sum(exp(x));
  std::vector<Tensor> g = tape.gradient(y, {x, z});
  EXPECT_TRUE(g[0].defined());
  EXPECT_FALSE(g[1].defined());
  std::vector<Tensor> gz = tape.gradient(y, {x, z}, Tensor(), UnconnectedGradients::kZero);
  ASSERT_TRUE(gz[1].defined());
  EXPECT_EQ(gz[1].dtype(), kFloat32);
  EXPECT_EQ(gz[1].shape(), Shape({3}));
  EXPECT_THAT(gz[1].to_vector<float>(), ElementsAre(0, 0, 0));
  // A source the target depends on only through integer ops is unconnected too.
  Tensor r = sum(cast(cast(x, kInt32), kFloat64));
  EXPECT_FALSE(tape.gradient(r, x).defined());
}

TEST(GradientTape, NonPersistentTapeAllowsOneGradientCall) {
  Tensor x = vec({1});
  GradientTape tape;
  tape.watch(x);
  Tensor y = x * x;
  tape.gradient(y, x);
  EXPECT_THAT([&] { tape.gradient(y, x); },
              ThrowsMessage<FailedPrecondition>(
                  AllOf(HasSubstr("non-persistent"), HasSubstr("persistent=true"))));
}

TEST(GradientTape, PersistentTapeAllowsManyCalls) {
  Tensor x = vec({3});
  GradientTape tape(/*persistent=*/true);
  tape.watch(x);
  Tensor y = x * x;
  Tensor z = y * x;
  EXPECT_EQ(tape.gradient(y, x).item<double>(), 6);
  EXPECT_EQ(tape.gradient(z, x).item<double>(), 27);
  EXPECT_EQ(tape.gradient(z, y).item<double>(), 3);
  EXPECT_EQ(tape.gradient(y, x).item<double>(), 6);
  tape.reset();
  EXPECT_FALSE(tape.gradient(z, x).defined());
  tape.watch(x);
  EXPECT_EQ(tape.gradient(sum(x * 5.0), x).item<double>(), 5);
}

TEST(GradientTape, OutputGradientSeedsTheTarget) {
  Tensor x = vec({1, 2, 3});
  GradientTape tape(true);
  tape.watch(x);
  Tensor y = x * x;
  EXPECT_THAT(tape.gradient(y, x).to_vector<double>(), ElementsAre(2, 4, 6));  // ones
  EXPECT_THAT(tape.gradient(y, x, vec({1, 0, -1})).to_vector<double>(), ElementsAre(2, 0, -6));
  EXPECT_THAT(
      [&] {
        tape.gradient(y, x, vec({1, 0}));
      },
      ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("(2,)"), HasSubstr("(3,)"))));
  EXPECT_THAT(tape.gradient(x, x).to_vector<double>(), ElementsAre(1, 1, 1));
}

TEST(GradientTape, TargetMustBeFloating) {
  Tensor x = vec({1});
  GradientTape tape;
  tape.watch(x);
  EXPECT_THAT([&] { tape.gradient(cast(x, kInt32), x); },
              ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("target"), HasSubstr("int32"))));
}

TEST(GradientTape, GradientHasTheSourceDtype) {
  Tensor x = Tensor::from_vector<float>({1, 2});
  GradientTape tape;
  tape.watch(x);
  Tensor y = sum(cast(x, kFloat64) * vec({0.5, 0.25}));
  Tensor g = tape.gradient(y, x);
  EXPECT_EQ(g.dtype(), kFloat32);
  EXPECT_THAT(g.to_vector<float>(), ElementsAre(0.5f, 0.25f));
}

// ---- higher derivatives ------------------------------------------------------------------------

TEST(GradientTape, NestedTapesGiveSecondDerivativeOfCube) {
  Tensor x = vec({-1.5, 0.5, 2});
  GradientTape outer;
  outer.watch(x);
  Tensor dy;
  {
    GradientTape inner;
    inner.watch(x);
    Tensor y = x * x * x;
    dy = inner.gradient(sum(y), x);
  }
  EXPECT_THAT(dy.to_vector<double>(), ElementsAre(6.75, 0.75, 12));
  Tensor d2 = outer.gradient(sum(dy), x);
  ASSERT_TRUE(d2.defined());
  EXPECT_THAT(d2.to_vector<double>(), ElementsAre(-9, 3, 12));  // 6x
}

TEST(GradientTape, ThirdDerivative) {
  Tensor x = vec({0.7});
  GradientTape t3;
  t3.watch(x);
  GradientTape t2;
  t2.watch(x);
  GradientTape t1;
  t1.watch(x);
  Tensor y = sin(x);
  Tensor d1 = t1.gradient(y, x);   // cos
  Tensor d2 = t2.gradient(d1, x);  // -sin
  Tensor d3 = t3.gradient(d2, x);  // -cos
  EXPECT_NEAR(d1.item<double>(), std::cos(0.7), 1e-15);
  EXPECT_NEAR(d2.item<double>(), -std::sin(0.7), 1e-15);
  EXPECT_NEAR(d3.item<double>(), -std::cos(0.7), 1e-15);
}

TEST(GradientTape, SecondDerivativeOfTanh) {
  Tensor x = vec({-0.8, 0.3, 1.1});
  GradientTape outer;
  outer.watch(x);
  GradientTape inner;
  inner.watch(x);
  Tensor dy = inner.gradient(sum(tanh(x)), x);
  std::vector<double> d2 = outer.gradient(sum(dy), x).to_vector<double>();
  std::vector<double> xv = x.to_vector<double>();
  for (size_t i = 0; i < xv.size(); ++i) {
    double t = std::tanh(xv[i]);
    EXPECT_NEAR(d2[i], -2 * t * (1 - t * t), 1e-14);
  }
}

TEST(GradientTape, SecondDerivativeThroughMatmulAndTanh) {
  // Hessian-vector products of an MLP-like function, against central differences.
  EXPECT_TRUE(second_derivative_check(
      [](const auto& xs) { return sum(tanh(matmul(tanh(matmul(xs[0], xs[1])), xs[2])), {1}); },
      {uniform({3, 4}, 1), uniform({4, 5}, 2), uniform({5, 2}, 3)}));
}

TEST(GradientTape, PersistentTapeDoesNotRecordItsOwnGradientComputation) {
  Tensor x = vec({2});
  GradientTape tape(/*persistent=*/true);
  tape.watch(x);
  Tensor y = x * x * x;
  Tensor dy = tape.gradient(y, x);  // 3x^2, computed while the tape itself is paused
  EXPECT_EQ(dy.item<double>(), 12);
  // Its own gradient computation is not recorded (TF records it only in an outer tape).
  EXPECT_FALSE(tape.gradient(dy, x).defined());
}

// ---- stop_gradient, stop_recording -------------------------------------------------------------

TEST(GradientTape, StopGradient) {
  Tensor x = vec({3, 4});
  GradientTape tape;
  tape.watch(x);
  Tensor s = stop_gradient(x);
  EXPECT_EQ(s.to_vector<double>(), x.to_vector<double>());
  Tensor g = tape.gradient(sum(x * s + exp(stop_gradient(x * x))), x);
  EXPECT_THAT(g.to_vector<double>(), ElementsAre(3, 4));
}

TEST(GradientTape, StopRecordingPausesTheTape) {
  Tensor x = vec({3});
  GradientTape tape;
  tape.watch(x);
  Tensor a = x * 2.0;
  Tensor b;
  {
    auto pause = tape.stop_recording();
    EXPECT_FALSE(autodiff::is_recording());
    b = a * a;
  }
  EXPECT_TRUE(autodiff::is_recording());
  Tensor c = a * 3.0;
  EXPECT_FALSE(tape.gradient(b, x).defined());
}

TEST(GradientTape, NoRecordScope) {
  Tensor x = vec({3});
  GradientTape tape(true);
  tape.watch(x);
  Tensor y;
  {
    autodiff::NoRecordScope no_record;
    EXPECT_FALSE(autodiff::is_recording());
    y = x * x;
  }
  EXPECT_FALSE(tape.gradient(y, x).defined());
  EXPECT_EQ(tape.gradient(x * x, x).item<double>(), 6);
}

TEST(GradientTape, NotRecordingWithoutATape) {
  EXPECT_FALSE(autodiff::is_recording());
  {
    GradientTape tape;
    EXPECT_TRUE(autodiff::is_recording());
  }
  EXPECT_FALSE(autodiff::is_recording());
  // A non-persistent tape stops recording at gradient(), before it is destroyed; the tapes made
  // after it record as before.
  Tensor x = vec({3});
  {
    GradientTape used;
    used.watch(x);
    used.gradient(x * x, x);
    EXPECT_FALSE(autodiff::is_recording());
  }
  GradientTape outer;
  { GradientTape inner; }
  EXPECT_TRUE(autodiff::is_recording());
}

TEST(GradientTape, ResetAfterGradientRecordsAgain) {
  Tensor x = vec({3});
  GradientTape tape;
  tape.watch(x);
  EXPECT_EQ(tape.gradient(x * x, x).item<double>(), 6);
  EXPECT_FALSE(autodiff::is_recording());
  tape.reset();
  EXPECT_TRUE(autodiff::is_recording());
  tape.watch(x);
  EXPECT_EQ(tape.gradient(x * x * x, x).item<double>(), 27);
  EXPECT_FALSE(autodiff::is_recording());
}

// ---- variables ---------------------------------------------------------------------------------

TEST(Variable, TrainableVariablesAreWatchedAutomatically) {
  Variable w(vec({1, 2}), "w");
  Variable c(vec({5, 6}), "c", /*trainable=*/false);
  GradientTape tape(true);
  Tensor y = sum(w * c + w * w);
  std::vector<Tensor> g = tape.gradient(y, std::vector<Variable>{w, c});
  EXPECT_THAT(g[0].to_vector<double>(), ElementsAre(7, 10));
  EXPECT_FALSE(g[1].defined());
  // Watching a non-trainable variable explicitly works.
  GradientTape t2;
  t2.watch(c);
  EXPECT_THAT(t2.gradient(sum(w * c), c.value()).to_vector<double>(), ElementsAre(1, 2));
}

TEST(Variable, WatchAccessedVariablesFalse) {
  Variable w(vec({1, 2}), "w");
  GradientTape tape(/*persistent=*/false, /*watch_accessed_variables=*/false);
  Tensor y = sum(w * w);
  EXPECT_FALSE(tape.gradient(y, w.value()).defined());
  GradientTape t2(false, false);
  t2.watch(w);
  EXPECT_THAT(t2.gradient(sum(w * w), w.value()).to_vector<double>(), ElementsAre(2, 4));
}

TEST(Variable, AssignAddSub) {
  Tensor init = vec({1, 2, 3});
  Variable v(init, "v");
  EXPECT_EQ(v.name(), "v");
  EXPECT_TRUE(v.trainable());
  EXPECT_EQ(v.shape(), Shape({3}));
  EXPECT_EQ(v.dtype(), kFloat64);
  Tensor before = v.value();
  v.assign(vec({4, 5, 6}));
  EXPECT_THAT(v.value().to_vector<double>(), ElementsAre(4, 5, 6));
  EXPECT_THAT(before.to_vector<double>(), ElementsAre(4, 5, 6));  // the same storage
  EXPECT_THAT(init.to_vector<double>(), ElementsAre(1, 2, 3));    // the initial value was copied
  v.assign_add(vec({1, 1, 1}));
  EXPECT_THAT(v.value().to_vector<double>(), ElementsAre(5, 6, 7));
  v.assign_sub(Tensor::scalar(2.0, kFloat64));  // broadcasts
  EXPECT_THAT(v.value().to_vector<double>(), ElementsAre(3, 4, 5));
  v.assign(Tensor::from_vector<int32_t>({-1, 0, 1}));  // cast to the variable's dtype
  EXPECT_EQ(v.dtype(), kFloat64);
  EXPECT_THAT(v.value().to_vector<double>(), ElementsAre(-1, 0, 1));
  Variable f(Tensor::from_vector<float>({1.5f}), "f");
  f.assign_add(vec({0.25}));
  EXPECT_EQ(f.dtype(), kFloat32);
  EXPECT_EQ(f.value().item<float>(), 1.75f);
}

TEST(Variable, AssignFromAViewOfItself) {
  Variable v(Tensor::from_vector<double>({1, 2, 3, 4}, {2, 2}), "m");
  v.assign(transpose(v.value()));
  EXPECT_THAT(v.value().to_vector<double>(), ElementsAre(1, 3, 2, 4));
  Variable r(vec({1, 2, 3, 4}), "r");
  r.assign(slice(r.value(), {Slice{{}, {}, -1}}));
  EXPECT_THAT(r.value().to_vector<double>(), ElementsAre(4, 3, 2, 1));
}

TEST(Variable, ShapeMismatchErrors) {
  Variable v(vec({1, 2}), "v");
  EXPECT_THAT(
      [&] {
        v.assign(vec({1, 2, 3}));
      },
      ThrowsMessage<InvalidArgument>(
          AllOf(HasSubstr("\"v\""), HasSubstr("(3,)"), HasSubstr("(2,)"))));
  EXPECT_THAT([&] { v.assign(Tensor::scalar(1.0, kFloat64)); },
              ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("()"), HasSubstr("(2,)"))));
  EXPECT_THAT(
      [&] {
        v.assign_add(vec({1, 2, 3}));
      },
      ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("(3,)"), HasSubstr("(2,)"))));
  EXPECT_THAT(
      [&] {
        v.assign_sub(zeros({3, 2}, kFloat64));
      },
      ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("(3, 2)"), HasSubstr("(2,)"))));
  EXPECT_THAT(v.value().to_vector<double>(), ElementsAre(1, 2));  // unchanged
  Variable empty;
  EXPECT_FALSE(empty.defined());
  EXPECT_THAT([&] { empty.value(); }, ThrowsMessage<FailedPrecondition>(HasSubstr("Variable")));
}

TEST(Variable, UpdatesAreNotRecorded) {
  Variable v(vec({1, 2}), "v");
  GradientTape tape;
  Tensor y = sum(v * 2.0);
  v.assign_add(vec({10, 10}));
  std::vector<Tensor> g = tape.gradient(y, std::vector<Variable>{v});
  EXPECT_THAT(g[0].to_vector<double>(), ElementsAre(2, 2));
}

// ---- threads -----------------------------------------------------------------------------------

TEST(GradientTape, TapesBelongToTheirThread) {
  Tensor x = vec({1, 2});
  GradientTape tape;
  tape.watch(x);
  // Ops on another thread are not recorded by this thread's tape...
  Tensor y_other;
  std::thread([&] {
    EXPECT_FALSE(autodiff::is_recording());
    y_other = sin(x);
  }).join();
  // ...and a tape on another thread does not see this thread's ops.
  Tensor y_here = cos(x);
  Tensor g_other_thread;
  bool other_defined = true;
  std::thread([&] {
    GradientTape t;
    t.watch(x);
    g_other_thread = t.gradient(sum(y_here), x);
    other_defined = g_other_thread.defined();
  }).join();
  EXPECT_FALSE(other_defined);
  GradientTape* p = &tape;
  std::vector<Tensor> g = p->gradient(sum(y_here + y_other), std::vector<Tensor>{x});
  EXPECT_NEAR(g[0].to_vector<double>()[0], -std::sin(1.0), 1e-15);  // cos only
}

TEST(GradientTape, ConcurrentTapesOnSeveralThreads) {
  std::vector<double> results(4);
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([k, &results] {
      Tensor x = vec({static_cast<double>(k + 1)});
      for (int rep = 0; rep < 50; ++rep) {
        GradientTape tape;
        tape.watch(x);
        Tensor y = x * x * x;
        results[k] = tape.gradient(y, x).item<double>();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_THAT(results, ElementsAre(3, 12, 27, 48));
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

// on_ready reports each source's gradient as soon as no backward function left can add to it:
// the last layer's weight before the first layer's backward runs, and every value equal to the
// returned one.
TEST(GradientTapeReady, ReportsEachSourceWhenItsGradientIsFinal) {
  Variable w1(Tensor::from_vector<float>({0.5f, -1.0f}, {2}), "w1");
  Variable w2(Tensor::from_vector<float>({2.0f, 3.0f}, {2}), "w2");
  Variable unused(Tensor::from_vector<float>({1.0f}, {1}), "unused");
  Tensor x = Tensor::from_vector<float>({1.0f, 2.0f}, {2});
  std::vector<std::string> events;
  GradientTape tape;
  // A marker op between the layers whose backward logs when it runs.
  Tensor h = mul(x, w1);
  Tensor marked = Tensor::view(h, h.shape(), h.strides(), h.offset());
  autodiff::record("marker", {h}, {marked}, [&](const autodiff::Grads& g) {
    events.push_back("marker backward");
    return std::vector<Tensor>{g[0]};
  });
  Tensor y = sum(mul(mul(marked, w2), marked));
  std::vector<Tensor> got =
      tape.gradient(y, std::vector<Tensor>{w1.value(), w2.value(), unused.value()},
                    [&](size_t i, const Tensor& g) {
                      events.push_back("ready " + std::to_string(i));
                      if (i == 2) {
                        EXPECT_FALSE(g.defined());
                      } else {
                        EXPECT_TRUE(g.defined());
                      }
                    });
  EXPECT_EQ(events, (std::vector<std::string>{"ready 1", "marker backward", "ready 0", "ready 2"}));
  // y = sum(w2 * (x w1)^2): dy/dw2 = (x w1)^2, dy/dw1 = 2 w2 x^2 w1.
  EXPECT_FLOAT_EQ(got[1].data<float>()[1], 4.0f);
  EXPECT_FLOAT_EQ(got[0].data<float>()[0], 2.0f * 2.0f * 1.0f * 0.5f);
}

}  // namespace
}  // namespace weft
