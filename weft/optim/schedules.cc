#include "weft/optim/schedules.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <utility>

#include "weft/core/errors.h"

namespace weft::optim::schedules {

LearningRateSchedule::LearningRateSchedule(double constant)
    : constant_(constant), name_("constant") {}

LearningRateSchedule::LearningRateSchedule(Fn fn, std::string name)
    : fn_(std::move(fn)), name_(std::move(name)) {
  WEFT_CHECK(fn_ != nullptr, InvalidArgument)
      << "LearningRateSchedule \"" << name_ << "\": the function is empty";
}

ExponentialDecay::ExponentialDecay(double initial_learning_rate, int64_t decay_steps,
                                   double decay_rate, bool staircase)
    : LearningRateSchedule(
          [=](int64_t step) {
            double p = static_cast<double>(step) / static_cast<double>(decay_steps);
            if (staircase) p = std::floor(p);
            return initial_learning_rate * std::pow(decay_rate, p);
          },
          "ExponentialDecay") {
  WEFT_CHECK(decay_steps > 0, InvalidArgument)
      << "ExponentialDecay: decay_steps must be > 0, got " << decay_steps;
  set_config(ConfigDict()
                 .set("initial_learning_rate", initial_learning_rate)
                 .set("decay_steps", decay_steps)
                 .set("decay_rate", decay_rate)
                 .set("staircase", staircase));
}

namespace {

LearningRateSchedule::Fn piecewise(std::vector<int64_t> boundaries, std::vector<double> values) {
  WEFT_CHECK(values.size() == boundaries.size() + 1, InvalidArgument)
      << "PiecewiseConstantDecay: expected one more value than boundaries, got "
      << boundaries.size() << " boundaries and " << values.size() << " values";
  for (size_t i = 1; i < boundaries.size(); ++i) {
    WEFT_CHECK(boundaries[i - 1] < boundaries[i], InvalidArgument)
        << "PiecewiseConstantDecay: boundaries must strictly increase, got " << boundaries[i - 1]
        << " then " << boundaries[i] << " at index " << i;
  }
  return [boundaries = std::move(boundaries), values = std::move(values)](int64_t step) {
    // The first boundary >= step: its index is the value's (values[i] holds up to boundaries[i]).
    auto it = std::lower_bound(boundaries.begin(), boundaries.end(), step);
    return values[static_cast<size_t>(it - boundaries.begin())];
  };
}

}  // namespace

PiecewiseConstantDecay::PiecewiseConstantDecay(std::vector<int64_t> boundaries,
                                               std::vector<double> values)
    : LearningRateSchedule(piecewise(boundaries, values), "PiecewiseConstantDecay") {
  set_config(ConfigDict().set("boundaries", boundaries).set("values", values));
}

CosineDecay::CosineDecay(double initial_learning_rate, int64_t decay_steps, double alpha,
                         std::optional<double> warmup_target, int64_t warmup_steps)
    : LearningRateSchedule(
          [=](int64_t step) {
            const double steps = static_cast<double>(decay_steps);
            auto decay = [&](double s, double from) {
              double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * (s / steps)));
              return from * ((1.0 - alpha) * cosine + alpha);
            };
            double s = static_cast<double>(step);
            if (!warmup_target) return decay(std::min(s, steps), initial_learning_rate);
            double warmup = static_cast<double>(warmup_steps);
            s = std::min(s, steps + warmup);
            if (s < warmup) {
              return (*warmup_target - initial_learning_rate) * (s / warmup) +
                     initial_learning_rate;
            }
            return decay(s - warmup, *warmup_target);
          },
          "CosineDecay") {
  WEFT_CHECK(decay_steps > 0, InvalidArgument)
      << "CosineDecay: decay_steps must be > 0, got " << decay_steps;
  set_config(ConfigDict()
                 .set("initial_learning_rate", initial_learning_rate)
                 .set("decay_steps", decay_steps)
                 .set("alpha", alpha)
                 .set("warmup_target", warmup_target)
                 .set("warmup_steps", warmup_steps));
  WEFT_CHECK(warmup_steps >= 0, InvalidArgument)
      << "CosineDecay: warmup_steps must be >= 0, got " << warmup_steps;
}

ConfigDict serialize(const LearningRateSchedule& schedule) {
  if (schedule.is_constant()) {
    return ConfigDict().set("class_name", "constant").set("value", schedule(0));
  }
  WEFT_CHECK(schedule.get_config().has_value(), InvalidArgument)
      << "learning-rate schedule \"" << schedule.name()
      << "\" is a function, which cannot be saved; use a constant or one of ExponentialDecay, "
         "PiecewiseConstantDecay, CosineDecay";
  return ConfigDict().set("class_name", schedule.name()).set("config", *schedule.get_config());
}

LearningRateSchedule deserialize(const ConfigDict& config) {
  std::string kind = config.get_string("class_name");
  if (kind == "constant") return config.get_double("value");
  ConfigDict c = config.get_dict("config");
  if (kind == "ExponentialDecay") {
    return ExponentialDecay(c.get_double("initial_learning_rate"), c.get_int("decay_steps"),
                            c.get_double("decay_rate"), c.get_bool("staircase", false));
  }
  if (kind == "PiecewiseConstantDecay") {
    return PiecewiseConstantDecay(c.get_ints("boundaries"), c.get_doubles("values"));
  }
  if (kind == "CosineDecay") {
    return CosineDecay(c.get_double("initial_learning_rate"), c.get_int("decay_steps"),
                       c.get_double("alpha", 0.0), c.get_optional_double("warmup_target"),
                       c.get_int("warmup_steps", 0));
  }
  WEFT_FAIL(InvalidArgument) << "unknown learning-rate schedule \"" << kind
                             << "\"; expected constant, ExponentialDecay, "
                                "PiecewiseConstantDecay or CosineDecay";
  return 0.0;
}

}  // namespace weft::optim::schedules
