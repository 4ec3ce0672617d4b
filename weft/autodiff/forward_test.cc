// ForwardAccumulator (forward mode) against reverse mode and finite differences: an MLP's JVP is
// the tape's Jacobian times the tangent, for inputs and Variables; unconnected and integer
// targets; Hessian-vector products three ways; forward over forward; custom_gradient (TF's
// log1pexp) through tapes and accumulators; ownership by thread and bad input.
#include "weft/autodiff/forward.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "weft/autodiff/tape.h"
#include "weft/ops/conv.h"
#include "weft/ops/cumulative.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/linalg.h"
#include "weft/ops/math.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"
#include "weft/testing/gradient_check.h"

namespace weft {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using testing::uniform;

struct Mlp {
  Tensor w1 = uniform({3, 5}, 1), b1 = uniform({5}, 2), w2 = uniform({5, 2}, 3);
  Tensor operator()(const Tensor& x) const { return matmul(tanh(matmul(x, w1) + b1), w2); }
};

void expect_near(const Tensor& got, const std::vector<double>& want, double tol) {
  std::vector<double> g = got.to_vector<double>();
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], tol) << "element " << i;
}

// J (n_out, n_in) · v, from the tape's Jacobian.
std::vector<double> jacobian_times(const Tensor& jac, int64_t n_out, const Tensor& v) {
  std::vector<double> j = jac.to_vector<double>(), t = v.to_vector<double>();
  std::vector<double> out(static_cast<size_t>(n_out), 0.0);
  const size_t n_in = t.size();
  for (int64_t i = 0; i < n_out; ++i) {
    for (size_t k = 0; k < n_in; ++k) out[i] += j[i * n_in + k] * t[k];
  }
  return out;
}

TEST(ForwardAccumulator, MlpJvpIsTheJacobianTimesTheTangent) {
  Mlp mlp;
  Tensor x = uniform({4, 3}, 4), v = uniform({4, 3}, 5);
  Tensor jvp;
  {
    ForwardAccumulator acc({x}, {v});
    Tensor y = mlp(x);
    jvp = acc.jvp(y);
    EXPECT_EQ(acc.jvp(x).to_vector<double>(), v.to_vector<double>());  // a primal's own
  }
  GradientTape tape;
  tape.watch(x);
  Tensor y = mlp(x);
  Tensor jac = tape.jacobian(y, x);
  ASSERT_EQ(jvp.shape(), y.shape());
  expect_near(jvp, jacobian_times(jac, y.numel(), v), 1e-12);
  // And the central difference along v.
  const double eps = 1e-6;
  std::vector<double> up = mlp(x + v * eps).to_vector<double>();
  std::vector<double> down = mlp(x - v * eps).to_vector<double>();
  std::vector<double> fd(up.size());
  for (size_t i = 0; i < up.size(); ++i) fd[i] = (up[i] - down[i]) / (2 * eps);
  expect_near(jvp, fd, 1e-8);
}

TEST(ForwardAccumulator, VariablesAsPrimals) {
  Mlp mlp;
  Variable w1(mlp.w1), b1(mlp.b1);
  Tensor x = uniform({2, 3}, 6), dw = uniform({3, 5}, 7), db = uniform({5}, 8);
  auto f = [&](const Tensor& w, const Tensor& b) { return tanh(matmul(x, w) + b); };
  ForwardAccumulator acc(std::vector<Variable>{w1, b1}, {dw, db});
  Tensor jvp = acc.jvp(f(w1.value(), b1.value()));
  GradientTape tape;
  tape.watch({mlp.w1, mlp.b1});
  Tensor y = f(mlp.w1, mlp.b1);
  std::vector<double> want = jacobian_times(tape.jacobian(y, mlp.w1), y.numel(), dw);
  GradientTape tape_b;
  tape_b.watch(mlp.b1);
  Tensor yb = f(mlp.w1, mlp.b1);
  std::vector<double> from_b = jacobian_times(tape_b.jacobian(yb, mlp.b1), yb.numel(), db);
  for (size_t i = 0; i < want.size(); ++i) want[i] += from_b[i];
  expect_near(jvp, want, 1e-12);
}

TEST(ForwardAccumulator, UnconnectedAndIntegerTargets) {
  Tensor x = uniform({3}, 9), other = uniform({3}, 10);
  ForwardAccumulator acc({x}, {uniform({3}, 11)});
  EXPECT_FALSE(acc.jvp(exp(other)).defined());
  EXPECT_EQ(acc.jvp(exp(other), UnconnectedGradients::kZero).to_vector<double>(),
            std::vector<double>(3, 0.0));
  EXPECT_FALSE(acc.jvp(argmax(x, 0)).defined());
  EXPECT_FALSE(acc.jvp(stop_gradient(x) * 2.0).defined());
  // Several primals: each contributes its own tangent.
  Tensor a = uniform({2}, 12), b = uniform({2}, 13);
  ForwardAccumulator two(
      {a, b}, {Tensor::from_vector<double>({1, 0}), Tensor::from_vector<double>({0, 2})});
  Tensor y = a * b;  // dy = da·b + a·db
  std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>();
  expect_near(two.jvp(y), {bv[0], 2 * av[1]}, 1e-15);
}

// H·v of f(x) = sum(sin(x) * x^2 ...) three ways: the gradient of the JVP (reverse over forward),
// the JVP of the gradient (forward over reverse), and nested tapes.
TEST(ForwardAccumulator, HessianVectorProductsAgreeThreeWays) {
  Tensor x = uniform({5}, 14), v = uniform({5}, 15);
  Tensor w = uniform({5, 5}, 16);
  auto f = [&](const Tensor& t) { return sum(sin(matmul(reshape(t, {1, 5}), w)) * t); };
  Tensor reverse_over_forward;
  {
    GradientTape tape;
    tape.watch(x);
    ForwardAccumulator acc({x}, {v});
    Tensor jvp = acc.jvp(f(x));
    reverse_over_forward = tape.gradient(jvp, x);
  }
  Tensor forward_over_reverse;
  {
    ForwardAccumulator acc({x}, {v});
    GradientTape tape;
    tape.watch(x);
    Tensor g = tape.gradient(f(x), x);
    forward_over_reverse = acc.jvp(g);
  }
  Tensor nested;
  {
    GradientTape outer;
    outer.watch(x);
    GradientTape inner;
    inner.watch(x);
    Tensor g = inner.gradient(f(x), x);
    nested = outer.gradient(sum(g * v), x);
  }
  expect_near(reverse_over_forward, nested.to_vector<double>(), 1e-12);
  expect_near(forward_over_reverse, nested.to_vector<double>(), 1e-12);
}

TEST(ForwardAccumulator, ForwardOverForwardIsTheSecondDirectionalDerivative) {
  Tensor x = uniform({4}, 17), v = uniform({4}, 18), u = uniform({4}, 19);
  ForwardAccumulator outer({x}, {v});
  Tensor inner_tangent;
  {
    ForwardAccumulator inner({x}, {u});
    Tensor y = sin(x) * x;
    inner_tangent = inner.jvp(y);  // (cos(x)·x + sin(x))·u
  }
  Tensor second = outer.jvp(inner_tangent);  // (2cos(x) - x·sin(x))·u·v
  std::vector<double> xv = x.to_vector<double>(), vv = v.to_vector<double>(),
                      uv = u.to_vector<double>(), want(4);
  for (size_t i = 0; i < 4; ++i) {
    want[i] = (2 * std::cos(xv[i]) - xv[i] * std::sin(xv[i])) * uv[i] * vv[i];
  }
  expect_near(second, want, 1e-14);
}

// TF's documented example: log(1 + e^x) whose gradient is written to stay finite for large x.
std::vector<Tensor> log1pexp(const Tensor& x) {
  return custom_gradient({x}, [](const std::vector<Tensor>& xs) {
    Tensor e = exp(xs[0]);
    autodiff::BackwardFn grad = [e](const autodiff::Grads& g) {
      return std::vector<Tensor>{g[0] * (1.0 - 1.0 / (1.0 + e))};
    };
    return std::pair{std::vector<Tensor>{log(1.0 + e)}, grad};
  });
}

TEST(CustomGradient, TapesAndAccumulatorsUseTheGivenGradient) {
  Tensor x = Tensor::from_vector<double>({0.0, 100.0, -3.0});
  GradientTape tape;
  tape.watch(x);
  Tensor y = log1pexp(x)[0];
  std::vector<double> g = tape.gradient(y, x).to_vector<double>();
  EXPECT_DOUBLE_EQ(g[0], 0.5);
  EXPECT_DOUBLE_EQ(g[1], 1.0);  // differentiating log(1 + e^x) itself gives NaN (inf / inf)
  EXPECT_NEAR(g[2], 1 / (1 + std::exp(3.0)), 1e-15);
  Tensor v = Tensor::from_vector<double>({1, 2, 3});
  ForwardAccumulator acc({x}, {v});
  std::vector<double> jvp = acc.jvp(log1pexp(x)[0]).to_vector<double>();
  EXPECT_DOUBLE_EQ(jvp[0], 0.5);
  EXPECT_DOUBLE_EQ(jvp[1], 2.0);
  EXPECT_NEAR(jvp[2], 3 / (1 + std::exp(3.0)), 1e-15);
  // A second derivative through the gradient function: its ops on the upstream gradient are
  // recorded (e is a constant to them, as in TF).
  GradientTape outer;
  Tensor seed = Tensor::from_vector<double>({1, 1, 1});
  outer.watch(seed);
  GradientTape inner;
  inner.watch(x);
  Tensor gx = inner.gradient(log1pexp(x)[0], x, seed);
  expect_near(outer.gradient(sum(gx), seed), g, 1e-15);
  EXPECT_THAT(
      [&] {
        custom_gradient({x}, [](const std::vector<Tensor>& xs) {
          return std::pair{std::vector<Tensor>{xs[0] * 2.0}, autodiff::BackwardFn()};
        });
      },
      ThrowsMessage<InvalidArgument>(HasSubstr("returned no gradient function")));
}

TEST(ForwardAccumulator, ScanAndFusedGradientsAndBadInputAreRefused) {
  Tensor x = uniform({2, 4}, 20);
  ForwardAccumulator acc({x}, {uniform({2, 4}, 21)});
  EXPECT_THAT([&] { cumprod(x, 1); }, ThrowsMessage<FailedPrecondition>(HasSubstr(
                                          "ForwardAccumulator: no forward mode through cumprod")));
  // Max pooling's tangent is the tangent at each window's maximum (its gradient gathers).
  Tensor image = Tensor::from_vector<double>({1, 7, 7, 2, 0, 3, 3, 3, 5}, {1, 3, 3, 1});
  Tensor v = Tensor::from_vector<double>({10, 20, 30, 40, 50, 60, 70, 80, 90}, {1, 3, 3, 1});
  ForwardAccumulator pooled({image}, {v});
  // Windows {1,7,2,0}: 7 at 1; {7,7,0,3}: the first 7, at 1; {2,0,3,3}: the first 3, at 6;
  // {0,3,3,5}: 5 at 8.
  EXPECT_EQ(pooled.jvp(max_pool2d(image, {2, 2}, {1, 1})).to_vector<double>(),
            (std::vector<double>{20, 20, 70, 90}));
  EXPECT_THAT([] { ForwardAccumulator({uniform({2}, 1)}, {uniform({3}, 2)}); },
              ThrowsMessage<InvalidArgument>(
                  HasSubstr("tangent 0 is float64 (3,) but its primal is float64 (2,)")));
  EXPECT_THAT([] { ForwardAccumulator({uniform({2}, 1)}, {}); },
              ThrowsMessage<InvalidArgument>(HasSubstr("1 primals but 0 tangents")));
  Tensor p = uniform({2}, 3);
  EXPECT_THAT(
      [&] {
        ForwardAccumulator({p, p}, {p, p});
      },
      ThrowsMessage<InvalidArgument>(HasSubstr("primal 1 is given twice")));
  EXPECT_THAT(
      [] {
        Tensor ids = Tensor::from_vector<int64_t>({1, 2});
        ForwardAccumulator({ids}, {ids});
      },
      ThrowsMessage<InvalidArgument>(HasSubstr("only floating-point primals")));
}

TEST(ForwardAccumulator, BelongsToItsThread) {
  Tensor x = uniform({3}, 22);
  ForwardAccumulator acc({x}, {uniform({3}, 23)});
  Tensor elsewhere;
  std::thread([&] { elsewhere = exp(x); }).join();
  EXPECT_FALSE(acc.jvp(elsewhere).defined());
  EXPECT_TRUE(acc.jvp(exp(x)).defined());
  {
    autodiff::NoRecordScope hidden;
    EXPECT_FALSE(acc.jvp(exp(x)).defined());
  }
}

}  // namespace
}  // namespace weft
