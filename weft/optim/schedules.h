// Learning-rate schedules, as keras.optimizers.schedules: a function of the optimizer's step (its
// `iterations` before the update, so the first update uses step 0) giving that step's rate. A
// plain number converts to a constant schedule, so an optimizer's `learning_rate` takes either.
//
//   namespace schedules = weft::optim::schedules;
//   weft::optim::SGD sgd({.learning_rate = schedules::ExponentialDecay(0.1, 1000, 0.96, true)});
//   // Keras 3's warmup: 0 -> 1e-3 linearly over 500 steps, then cosine decay over 10000 steps.
//   schedules::CosineDecay warm(0.0, 10000, 0.0, /*warmup_target=*/1e-3, /*warmup_steps=*/500);
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "weft/core/config_dict.h"

namespace weft::optim::schedules {

// A cheap copyable value. The schedules below derive from it only to give Keras' constructor
// names; they add no members, so storing one as a LearningRateSchedule loses nothing.
class LearningRateSchedule {
 public:
  using Fn = std::function<double(int64_t step)>;

  // A constant rate. Implicit, so `.learning_rate = 1e-3` works like `.learning_rate = schedule`.
  LearningRateSchedule(double constant);  // NOLINT(google-explicit-constructor)
  // Any function of the step (what subclassing keras' LearningRateSchedule does).
  explicit LearningRateSchedule(Fn fn, std::string name = "LearningRateSchedule");

  double operator()(int64_t step) const { return fn_ ? fn_(step) : constant_; }
  bool is_constant() const { return !fn_; }
  // "constant", "ExponentialDecay", ...: for error messages.
  const std::string& name() const { return name_; }
  // A built-in schedule's arguments (Keras's get_config); nullopt for a constant or a function.
  const std::optional<ConfigDict>& get_config() const { return config_; }

 protected:
  void set_config(ConfigDict config) { config_ = std::move(config); }

 private:
  Fn fn_;
  double constant_ = 0;
  std::string name_;
  std::optional<ConfigDict> config_;
};

// initial_learning_rate * decay_rate ^ (step / decay_steps); with staircase the exponent is
// floor(step / decay_steps). decay_steps > 0.
class ExponentialDecay : public LearningRateSchedule {
 public:
  ExponentialDecay(double initial_learning_rate, int64_t decay_steps, double decay_rate,
                   bool staircase = false);
};

// values[0] while step <= boundaries[0], values[i] while boundaries[i-1] < step <= boundaries[i],
// values.back() after the last boundary. Boundaries strictly increase; one more value than
// boundaries.
class PiecewiseConstantDecay : public LearningRateSchedule {
 public:
  PiecewiseConstantDecay(std::vector<int64_t> boundaries, std::vector<double> values);
};

// Cosine decay with optional linear warmup, as Keras 3's CosineDecay (weft's choice for warmup).
// Without warmup_target: initial * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) /
// decay_steps)) + alpha). With it: for step < warmup_steps the rate rises linearly from
// initial_learning_rate to warmup_target, then decays as above from warmup_target, the decay's
// step being step - warmup_steps. decay_steps > 0, warmup_steps >= 0.
class CosineDecay : public LearningRateSchedule {
 public:
  CosineDecay(double initial_learning_rate, int64_t decay_steps, double alpha = 0.0,
              std::optional<double> warmup_target = std::nullopt, int64_t warmup_steps = 0);
};

// Keras's serialize/deserialize: a constant as {"class_name": "constant", "value": v}, a built-in
// schedule as {"class_name": name(), "config": get_config()}. serialize throws InvalidArgument
// for a schedule made from a function (it is code); deserialize for an unknown class_name.
ConfigDict serialize(const LearningRateSchedule& schedule);
LearningRateSchedule deserialize(const ConfigDict& config);

}  // namespace weft::optim::schedules
