// Adadelta, as keras.optimizers.Adadelta (TF 2.x, ResourceApplyAdadelta):
//   accum_grad = rho accum_grad + (1 - rho) g^2
//   update = sqrt(accum_var + epsilon) / sqrt(accum_grad + epsilon) g
//   w -= lr update;   accum_var = rho accum_var + (1 - rho) update^2
// Slots: "accum_grad", "accum_var". Keras's default learning rate is 0.001 (Zeiler's paper has
// none, i.e. 1.0).
//
//   weft::optim::Adadelta adadelta({.learning_rate = 1.0, .rho = 0.95});
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "weft/optim/optimizer.h"

namespace weft::optim {

struct AdadeltaOptions {
  schedules::LearningRateSchedule learning_rate = 0.001;
  double rho = 0.95;  // in [0, 1]
  double epsilon = 1e-7;
  std::optional<double> clipnorm{};
  std::optional<double> clipvalue{};
  std::optional<double> global_clipnorm{};
  std::vector<GradientTransformer> gradient_transformers{};
  GradientAggregator gradient_aggregator{};
  std::string name = "Adadelta";
};

class Adadelta : public Optimizer {
 public:
  explicit Adadelta(AdadeltaOptions options = {});
  explicit Adadelta(schedules::LearningRateSchedule learning_rate);
};

}  // namespace weft::optim
