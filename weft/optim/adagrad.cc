#include "weft/optim/adagrad.h"

#include <cmath>

#include "weft/optim/internal/fused_update.h"
#include "weft/optim/internal/options.h"

namespace weft::optim {
namespace {

class AdagradAlgorithm : public Optimizer::Algorithm {
 public:
  ConfigDict get_config() const override {
    return ConfigDict()
        .set("class_name", "Adagrad")
        .set("initial_accumulator_value", initial_accumulator_value_)
        .set("epsilon", epsilon_);
  }
  explicit AdagradAlgorithm(const AdagradOptions& o)
      : initial_accumulator_value_(o.initial_accumulator_value), epsilon_(o.epsilon) {
    internal::check_range(o.name, "initial_accumulator_value", o.initial_accumulator_value, 0,
                          HUGE_VAL);
    internal::check_range(o.name, "epsilon", o.epsilon, 0, HUGE_VAL);
  }

  bool elementwise() const override { return true; }  // fused_update

  std::vector<Slot> slots() const override { return {{"accumulator", initial_accumulator_value_}}; }

  // ResourceApplyAdagradV2.
  void update(const Tensor& grad, const Tensor& var, std::span<const Tensor> slots,
              const Step& step) const override {
    const double lr = step.learning_rate, eps = epsilon_;
    internal::fused_update<1>(grad, var, slots, [=](auto g, auto& w, auto& acc) {
      using C = decltype(g);
      acc += g * g;
      w -= g * C(lr) / (std::sqrt(acc) + C(eps));
    });
  }

 private:
  double initial_accumulator_value_, epsilon_;
};

}  // namespace

Adagrad::Adagrad(AdagradOptions options)
    : Optimizer(std::make_shared<AdagradAlgorithm>(options), internal::common_options(options)) {}

Adagrad::Adagrad(schedules::LearningRateSchedule learning_rate)
    : Adagrad(AdagradOptions{.learning_rate = std::move(learning_rate)}) {}

}  // namespace weft::optim
