// GradientTape's breadth: jacobian and batch_jacobian of a small MLP against central finite
// differences, gradients of several targets, watched_variables and unconnected gradients.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "weft/autodiff/tape.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/linalg.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"
#include "weft/testing/gradient_check.h"

namespace weft {
namespace {

using testing::uniform;

// A two-layer MLP, x (B, 3) -> (B, 2), in float64.
struct JacobianMlp {
  Tensor w1 = uniform({3, 5}, 1), b1 = uniform({5}, 2), w2 = uniform({5, 2}, 3);
  Tensor operator()(const Tensor& x) const { return matmul(tanh(matmul(x, w1) + b1), w2); }
};

// d f(x)[i] / d x[j] by central differences: shape f(x).shape + x.shape.
std::vector<double> numeric_jacobian(const std::function<Tensor(const Tensor&)>& f,
                                     const Tensor& x) {
  std::vector<double> xv = x.to_vector<double>();
  int64_t n_out = f(x).numel();
  std::vector<double> jac(static_cast<size_t>(n_out * x.numel()));
  const double eps = 1e-6;
  for (int64_t j = 0; j < x.numel(); ++j) {
    std::vector<double> up = xv, down = xv;
    up[j] += eps;
    down[j] -= eps;
    std::vector<double> fu = f(Tensor::from_vector(up, x.shape())).to_vector<double>();
    std::vector<double> fd = f(Tensor::from_vector(down, x.shape())).to_vector<double>();
    for (int64_t i = 0; i < n_out; ++i) jac[i * x.numel() + j] = (fu[i] - fd[i]) / (2 * eps);
  }
  return jac;
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-7) << "element " << i;
}

TEST(Jacobian, OfASmallMlpEqualsFiniteDifferences) {
  JacobianMlp mlp;
  Tensor x = uniform({2, 3}, 4);
  GradientTape tape;
  tape.watch(x);
  Tensor y = mlp(x);
  Tensor j = tape.jacobian(y, x);
  EXPECT_EQ(j.shape(), (Shape{2, 2, 2, 3}));
  expect_near(j.to_vector<double>(), numeric_jacobian(mlp, x));
}

TEST(Jacobian, WithRespectToWeights) {
  JacobianMlp mlp;
  Tensor x = uniform({4, 3}, 5);
  Variable w1(mlp.w1);
  GradientTape tape;
  Tensor y = matmul(tanh(matmul(x, w1) + mlp.b1), mlp.w2);
  Tensor j = tape.jacobian(y, w1);
  EXPECT_EQ(j.shape(), (Shape{4, 2, 3, 5}));
  auto f = [&](const Tensor& w) { return matmul(tanh(matmul(x, w) + mlp.b1), mlp.w2); };
  expect_near(j.to_vector<double>(), numeric_jacobian(f, mlp.w1));
}

TEST(Jacobian, BatchJacobianEqualsFiniteDifferencesPerExample) {
  JacobianMlp mlp;
  Tensor x = uniform({4, 3}, 6);
  GradientTape tape;
  tape.watch(x);
  Tensor y = mlp(x);
  Tensor bj = tape.batch_jacobian(y, x);
  ASSERT_EQ(bj.shape(), (Shape{4, 2, 3}));
  // Example b's block is the full Jacobian's diagonal block [b, :, b, :].
  std::vector<double> full = numeric_jacobian(mlp, x), got = bj.to_vector<double>();
  for (int64_t b = 0; b < 4; ++b) {
    for (int64_t i = 0; i < 2; ++i) {
      for (int64_t k = 0; k < 3; ++k) {
        double want = full[((b * 2 + i) * 4 + b) * 3 + k];
        EXPECT_NEAR(got[(b * 2 + i) * 3 + k], want, 1e-7) << b << " " << i << " " << k;
      }
    }
  }
}

TEST(Jacobian, ANonPersistentTapeIsUsedUpByIt) {
  Tensor x = uniform({3}, 7);
  GradientTape tape;
  tape.watch(x);
  Tensor y = x * x;
  Tensor j = tape.jacobian(y, x);
  std::vector<double> xv = x.to_vector<double>(), jv = j.to_vector<double>();
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t c = 0; c < 3; ++c) EXPECT_DOUBLE_EQ(jv[r * 3 + c], r == c ? 2 * xv[r] : 0.0);
  }
  EXPECT_THROW(tape.jacobian(y, x), FailedPrecondition);
}

TEST(Jacobian, UnconnectedSourcesGiveNothingOrZeros) {
  Tensor x = uniform({3}, 8), z = uniform({2}, 9);
  {
    GradientTape tape(/*persistent=*/true);
    tape.watch(x);
    tape.watch(z);
    Tensor y = x * 2.0;
    EXPECT_FALSE(tape.jacobian(y, z).defined());
    Tensor zero = tape.jacobian(y, z, UnconnectedGradients::kZero);
    EXPECT_EQ(zero.shape(), (Shape{3, 2}));
    EXPECT_EQ(zero.to_vector<double>(), std::vector<double>(6, 0.0));
    EXPECT_FALSE(tape.batch_jacobian(reshape(y, {3, 1}), reshape(x, {3, 1}) * 1.0).defined());
  }
  GradientTape tape;
  tape.watch(x);
  auto g = tape.gradient(sum(x), {x, z}, Tensor(), UnconnectedGradients::kZero);
  EXPECT_EQ(g[1].to_vector<double>(), std::vector<double>(2, 0.0));
}

TEST(GradientTape, SeveralTargetsGiveTheGradientOfTheirSum) {
  Tensor x = uniform({4}, 10);
  GradientTape both(/*persistent=*/true);
  both.watch(x);
  Tensor t1 = sum(x * x), t2 = sin(x);
  std::vector<Tensor> g = both.gradient({t1, t2}, {x});
  Tensor expected = both.gradient(t1 + sum(t2), x);
  EXPECT_EQ(g[0].to_vector<double>(), expected.to_vector<double>());
  // The same target twice counts twice.
  Tensor twice = both.gradient({t1, t1}, {x})[0];
  std::vector<double> xv = x.to_vector<double>(), tv = twice.to_vector<double>();
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_DOUBLE_EQ(tv[i], 4 * xv[i]);
}

TEST(GradientTape, WatchedVariablesInTheOrderFirstSeen) {
  Variable a(uniform({2}, 11), "a"), b(uniform({2}, 12), "b");
  Variable frozen(uniform({2}, 13), "frozen", /*trainable=*/false);
  Tensor plain = uniform({2}, 14);
  GradientTape tape;
  tape.watch(plain);
  Tensor y = b.value() * a.value() + frozen.value();
  std::vector<Variable> watched = tape.watched_variables();
  ASSERT_EQ(watched.size(), 2u);  // not the non-trainable one, nor a plain tensor
  EXPECT_EQ(watched[0].name(), "b");
  EXPECT_EQ(watched[1].name(), "a");
  tape.watch(frozen.value());  // explicitly watched variables count, trainable or not
  EXPECT_EQ(tape.watched_variables().size(), 3u);
  EXPECT_EQ(tape.watched_variables()[2].name(), "frozen");
  (void)y;
  {
    Variable gone(uniform({2}, 15), "gone");
    Tensor z = gone.value() * 2.0;
    (void)z;
  }
  // A variable destroyed while the tape lives is left out, not returned undefined.
  EXPECT_EQ(tape.watched_variables().size(), 3u);
}

}  // namespace
}  // namespace weft
