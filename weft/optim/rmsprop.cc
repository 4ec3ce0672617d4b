#include "weft/optim/rmsprop.h"

#include <cmath>

#include "weft/optim/internal/fused_update.h"
#include "weft/optim/internal/options.h"

namespace weft::optim {
namespace {

class RmspropAlgorithm : public Optimizer::Algorithm {
 public:
  ConfigDict get_config() const override {
    ConfigDict c;
    c.set("class_name", "RMSprop").set("rho", rho_).set("momentum", momentum_);
    return c.set("epsilon", epsilon_).set("centered", centered_);
  }
  explicit RmspropAlgorithm(const RMSpropOptions& o)
      : rho_(o.rho), momentum_(o.momentum), epsilon_(o.epsilon), centered_(o.centered) {
    internal::check_range(o.name, "rho", o.rho, 0, 1);
    internal::check_range(o.name, "momentum", o.momentum, 0, 1);
    internal::check_range(o.name, "epsilon", o.epsilon, 0, HUGE_VAL);
  }

  bool elementwise() const override { return true; }  // fused_update

  std::vector<Slot> slots() const override {
    std::vector<Slot> s{{"rms", 0.0}};
    if (momentum_ > 0) s.push_back({"momentum", 0.0});
    if (centered_) s.push_back({"mg", 0.0});
    return s;
  }

  // Without momentum, TF 2.x's Python update; with it, ResourceApply(Centered)RMSProp.
  void update(const Tensor& grad, const Tensor& var, std::span<const Tensor> slots,
              const Step& step) const override {
    const double lr = step.learning_rate, rho = rho_, mom = momentum_, eps = epsilon_;
    if (mom == 0 && !centered_) {
      internal::fused_update<1>(grad, var, slots, [=](auto g, auto& w, auto& rms) {
        using C = decltype(g);
        rms = C(rho) * rms + (C(1) - C(rho)) * (g * g);
        w -= C(lr) * g / (std::sqrt(rms) + C(eps));
      });
    } else if (mom == 0) {
      internal::fused_update<2>(grad, var, slots, [=](auto g, auto& w, auto& rms, auto& mg) {
        using C = decltype(g);
        rms = C(rho) * rms + (C(1) - C(rho)) * (g * g);
        mg = C(rho) * mg + (C(1) - C(rho)) * g;
        w -= C(lr) * g / (std::sqrt(rms - mg * mg) + C(eps));
      });
    } else if (!centered_) {
      internal::fused_update<2>(grad, var, slots, [=](auto g, auto& w, auto& ms, auto& m) {
        using C = decltype(g);
        ms += (g * g - ms) * (C(1) - C(rho));
        m = m * C(mom) + C(lr) * g / std::sqrt(ms + C(eps));
        w -= m;
      });
    } else {
      internal::fused_update<3>(grad, var, slots,
                                [=](auto g, auto& w, auto& ms, auto& m, auto& mg) {
                                  using C = decltype(g);
                                  ms += (g * g - ms) * (C(1) - C(rho));
                                  mg += (g - mg) * (C(1) - C(rho));
                                  m = m * C(mom) + C(lr) * g / std::sqrt(ms - mg * mg + C(eps));
                                  w -= m;
                                });
    }
  }

 private:
  double rho_, momentum_, epsilon_;
  bool centered_;
};

}  // namespace

RMSprop::RMSprop(RMSpropOptions options)
    : Optimizer(std::make_shared<RmspropAlgorithm>(options), internal::common_options(options)) {}

RMSprop::RMSprop(schedules::LearningRateSchedule learning_rate)
    : RMSprop(RMSpropOptions{.learning_rate = std::move(learning_rate)}) {}

}  // namespace weft::optim
