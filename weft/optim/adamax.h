// Adamax, as keras.optimizers.Adamax (TF 2.x, ResourceApplyAdaMax), Adam with the infinity norm.
// With t = iterations + 1:
//   m = m + (g - m) (1 - beta_1);   v = max(beta_2 v, |g|)
//   w -= lr / (1 - beta_1^t) m / (v + epsilon)
// Slots: "m", "v".
//
//   weft::optim::Adamax adamax(2e-3);
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "weft/optim/optimizer.h"

namespace weft::optim {

struct AdamaxOptions {
  schedules::LearningRateSchedule learning_rate = 0.001;
  double beta_1 = 0.9;  // in [0, 1)
  double beta_2 = 0.999;
  double epsilon = 1e-7;
  std::optional<double> clipnorm{};
  std::optional<double> clipvalue{};
  std::optional<double> global_clipnorm{};
  std::vector<GradientTransformer> gradient_transformers{};
  GradientAggregator gradient_aggregator{};
  std::string name = "Adamax";
};

class Adamax : public Optimizer {
 public:
  explicit Adamax(AdamaxOptions options = {});
  explicit Adamax(schedules::LearningRateSchedule learning_rate);
};

}  // namespace weft::optim
