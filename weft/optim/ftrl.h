// FTRL-Proximal, as keras.optimizers.Ftrl (TF 2.x, ResourceApplyFtrl / FtrlV2; McMahan et
// al. 2013). With p = -learning_rate_power, l2' = l2 + beta / (2 lr) and g' = g + 2 s w (s: the
// l2 shrinkage):
//   n' = n + g^2;   z += g' - (n'^p - n^p) / lr w;   n = n'
//   w = |z| > l1 ? (l1 sign(z) - z) / (n'^p / lr + 2 l2') : 0
// Slots: "accumulator" (n, starting at initial_accumulator_value) and "linear" (z).
//
//   weft::optim::Ftrl ftrl({.learning_rate = 0.1, .l1_regularization_strength = 0.01});
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "weft/optim/optimizer.h"

namespace weft::optim {

struct FtrlOptions {
  schedules::LearningRateSchedule learning_rate = 0.001;
  double learning_rate_power = -0.5;       // <= 0
  double initial_accumulator_value = 0.1;  // >= 0
  double l1_regularization_strength = 0;
  double l2_regularization_strength = 0;
  double l2_shrinkage_regularization_strength = 0;
  double beta = 0;
  std::optional<double> clipnorm{};
  std::optional<double> clipvalue{};
  std::optional<double> global_clipnorm{};
  std::vector<GradientTransformer> gradient_transformers{};
  GradientAggregator gradient_aggregator{};
  std::string name = "Ftrl";
};

class Ftrl : public Optimizer {
 public:
  explicit Ftrl(FtrlOptions options = {});
  explicit Ftrl(schedules::LearningRateSchedule learning_rate);
};

}  // namespace weft::optim
