// Nadam, as keras.optimizers.Nadam (TF 2.x): Adam with Nesterov momentum and Dozat's momentum
// schedule mu_t = beta_1 (1 - 0.5 * 0.96^(0.004 t)). With t = iterations + 1 and
// M_t = mu_1 ... mu_t (Keras keeps it in a variable, "momentum_cache"; here it is derived from
// the iterations, so a checkpoint needs nothing more):
//   m = beta_1 m + (1 - beta_1) g;   v = beta_2 v + (1 - beta_2) g^2
//   m_bar = (1 - mu_t) g / (1 - M_t) + mu_{t+1} m / (1 - M_t mu_{t+1})
//   w -= lr m_bar / (sqrt(v / (1 - beta_2^t)) + epsilon)
// Slots: "m", "v".
//
//   weft::optim::Nadam nadam(1e-3);
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "weft/optim/optimizer.h"

namespace weft::optim {

struct NadamOptions {
  schedules::LearningRateSchedule learning_rate = 0.001;
  double beta_1 = 0.9;  // in [0, 1)
  double beta_2 = 0.999;
  double epsilon = 1e-7;
  std::optional<double> clipnorm{};
  std::optional<double> clipvalue{};
  std::optional<double> global_clipnorm{};
  std::vector<GradientTransformer> gradient_transformers{};
  GradientAggregator gradient_aggregator{};
  std::string name = "Nadam";
};

class Nadam : public Optimizer {
 public:
  explicit Nadam(NadamOptions options = {});
  explicit Nadam(schedules::LearningRateSchedule learning_rate);
};

}  // namespace weft::optim
