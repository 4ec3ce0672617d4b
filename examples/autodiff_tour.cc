// GradientTape and Variable: gradients of several sources, persistent and nested tapes,
// stop_gradient. docs/autodiff.md quotes it; CI runs it.
#include <weft/weft.h>

#include <iostream>

int main() {
  // Trainable variables are watched automatically.
  weft::Variable w(weft::ones({3, 2}), "w");
  weft::Variable b(weft::zeros({2}), "b");
  weft::Tensor x = weft::Tensor::from_vector<float>({1, 2, 3}, {1, 3});
  weft::GradientTape tape;
  weft::Tensor loss = weft::sum(weft::square(weft::matmul(x, w) + b));
  std::vector<weft::Tensor> grads = tape.gradient(loss, {w, b});
  std::cout << grads[0] << "\n" << grads[1] << "\n";

  // Plain tensors need watch(); a persistent tape answers more than once.
  weft::Tensor v = weft::Tensor::from_vector<double>({3.0});
  weft::GradientTape persistent(/*persistent=*/true);
  persistent.watch(v);
  weft::Tensor y = v * v;
  weft::Tensor z = y * y;
  std::cout << persistent.gradient(z, v).item<double>() << " "    // 4 v^3 = 108
            << persistent.gradient(y, v).item<double>() << "\n";  // 2 v = 6

  // Nested tapes give second derivatives: d²/dv² v³ = 6 v = 18.
  weft::GradientTape outer;
  outer.watch(v);
  weft::Tensor dy_dv;
  {
    weft::GradientTape inner;
    inner.watch(v);
    dy_dv = inner.gradient(v * v * v, v);
  }
  std::cout << outer.gradient(dy_dv, v).item<double>() << "\n";  // 18

  // stop_gradient cuts the tape; optimizer-style updates go through assign*.
  weft::GradientTape cut;
  cut.watch(v);
  weft::Tensor g = cut.gradient(weft::stop_gradient(v) * v, v);
  std::cout << g.item<double>() << "\n";  // 3: only the second factor is differentiated
  w.assign_sub(grads[0] * 0.1f);
  std::cout << w.value() << "\n";

  // Jacobians: every d y[i] / d x[j]; batch_jacobian keeps examples apart.
  weft::Tensor xs = weft::Tensor::from_vector<double>({1, 2, 3, 4}, {2, 2});
  weft::GradientTape jac(/*persistent=*/true);
  jac.watch(xs);
  weft::Tensor ys = xs * xs;
  weft::Tensor full = jac.jacobian(ys, xs);               // shape (2, 2, 2, 2)
  weft::Tensor per_example = jac.batch_jacobian(ys, xs);  // shape (2, 2, 2)
  std::cout << "jacobian " << weft::shape_str(full.shape()) << ", batch_jacobian";
  for (double d : per_example.to_vector<double>()) std::cout << " " << d;  // 2 0 0 4 6 0 0 8
  std::cout << "\n";

  // Several targets at once (the gradient of their sum), and the variables a tape watched.
  weft::GradientTape two;
  weft::Tensor first = weft::sum(w.value()), second = weft::sum(b.value() * 3.0f);
  std::vector<weft::Tensor> both = two.gradient({first, second}, {w.value(), b.value()});
  std::cout << "watched:";
  for (const weft::Variable& var : two.watched_variables()) std::cout << " " << var.name();
  std::cout << "\n";

  // Forward mode: the derivative of everything computed from `point` along `direction`.
  weft::Tensor point = weft::Tensor::from_vector<double>({1.0, 2.0});
  weft::Tensor direction = weft::Tensor::from_vector<double>({1.0, 0.0});
  weft::ForwardAccumulator acc({point}, {direction});
  weft::Tensor cubes = weft::sum(point * point * point);
  std::cout << "jvp " << acc.jvp(cubes).item<double>() << "\n";  // 3 x0^2 = 3

  // custom_gradient: log(1 + e^x), whose own derivative overflows for large x, with its
  // gradient written to stay finite (TensorFlow's example).
  weft::Tensor big = weft::Tensor::from_vector<double>({100.0});
  weft::GradientTape custom;
  custom.watch(big);
  std::vector<weft::Tensor> softplus = weft::custom_gradient({big}, [](const auto& in) {
    weft::Tensor e = weft::exp(in[0]);
    weft::autodiff::BackwardFn grad = [e](const weft::autodiff::Grads& up) {
      return std::vector<weft::Tensor>{up[0] * (1.0 - 1.0 / (1.0 + e))};
    };
    return std::pair{std::vector<weft::Tensor>{weft::log(1.0 + e)}, grad};
  });
  std::cout << "custom gradient at 100: " << custom.gradient(softplus[0], big).item<double>()
            << "\n";  // 1
  return 0;
}
