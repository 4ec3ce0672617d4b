#include "weft/optim/adadelta.h"

#include <cmath>

#include "weft/optim/internal/fused_update.h"
#include "weft/optim/internal/options.h"

namespace weft::optim {
namespace {

class AdadeltaAlgorithm : public Optimizer::Algorithm {
 public:
  explicit AdadeltaAlgorithm(const AdadeltaOptions& o) : rho_(o.rho), epsilon_(o.epsilon) {
    internal::check_range(o.name, "rho", o.rho, 0, 1);
    internal::check_range(o.name, "epsilon", o.epsilon, 0, HUGE_VAL);
  }
  ConfigDict get_config() const override {
    return ConfigDict().set("class_name", "Adadelta").set("rho", rho_).set("epsilon", epsilon_);
  }
  bool elementwise() const override { return true; }  // fused_update

  std::vector<Slot> slots() const override { return {{"accum_grad", 0.0}, {"accum_var", 0.0}}; }

  // ResourceApplyAdadelta.
  void update(const Tensor& grad, const Tensor& var, std::span<const Tensor> slots,
              const Step& step) const override {
    const double lr = step.learning_rate, rho = rho_, eps = epsilon_;
    internal::fused_update<2>(grad, var, slots, [=](auto g, auto& w, auto& acc_g, auto& acc_v) {
      using C = decltype(g);
      acc_g = acc_g * C(rho) + g * g * (C(1) - C(rho));
      C update = std::sqrt(acc_v + C(eps)) / std::sqrt(acc_g + C(eps)) * g;
      w -= update * C(lr);
      acc_v = acc_v * C(rho) + update * update * (C(1) - C(rho));
    });
  }

 private:
  double rho_, epsilon_;
};

}  // namespace

Adadelta::Adadelta(AdadeltaOptions o)
    : Optimizer(std::make_shared<AdadeltaAlgorithm>(o), internal::common_options(o)) {}

Adadelta::Adadelta(schedules::LearningRateSchedule learning_rate)
    : Adadelta(AdadeltaOptions{.learning_rate = std::move(learning_rate)}) {}

}  // namespace weft::optim
