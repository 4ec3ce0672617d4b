#include "weft/optim/sgd.h"

#include "weft/optim/internal/fused_update.h"
#include "weft/optim/internal/options.h"

namespace weft::optim {
namespace {

class SgdAlgorithm : public Optimizer::Algorithm {
 public:
  ConfigDict get_config() const override {
    return ConfigDict()
        .set("class_name", "SGD")
        .set("momentum", momentum_)
        .set("nesterov", nesterov_);
  }
  explicit SgdAlgorithm(const SGDOptions& o) : momentum_(o.momentum), nesterov_(o.nesterov) {
    internal::check_range(o.name, "momentum", o.momentum, 0, 1);
  }

  bool elementwise() const override { return true; }  // fused_update

  std::vector<Slot> slots() const override {
    if (momentum_ == 0) return {};
    return {{"momentum", 0.0}};
  }

  // ResourceApplyGradientDescent, and ResourceApplyKerasMomentum with momentum.
  void update(const Tensor& grad, const Tensor& var, std::span<const Tensor> slots,
              const Step& step) const override {
    const double lr = step.learning_rate, momentum = momentum_;
    if (momentum == 0) {
      internal::fused_update<0>(grad, var, slots, [=](auto g, auto& w) {
        using C = decltype(g);
        w -= g * C(lr);
      });
    } else if (nesterov_) {
      internal::fused_update<1>(grad, var, slots, [=](auto g, auto& w, auto& m) {
        using C = decltype(g);
        m = m * C(momentum) - g * C(lr);
        w += m * C(momentum) - g * C(lr);
      });
    } else {
      internal::fused_update<1>(grad, var, slots, [=](auto g, auto& w, auto& m) {
        using C = decltype(g);
        m = m * C(momentum) - g * C(lr);
        w += m;
      });
    }
  }

 private:
  double momentum_;
  bool nesterov_;
};

}  // namespace

SGD::SGD(SGDOptions options)
    : Optimizer(std::make_shared<SgdAlgorithm>(options), internal::common_options(options)) {}

SGD::SGD(schedules::LearningRateSchedule learning_rate)
    : SGD(SGDOptions{.learning_rate = std::move(learning_rate)}) {}

}  // namespace weft::optim
