#include "weft/optim/adam.h"

#include <algorithm>
#include <cmath>

#include "weft/optim/internal/fused_update.h"
#include "weft/optim/internal/options.h"

namespace weft::optim {
namespace {

class AdamAlgorithm : public Optimizer::Algorithm {
 public:
  AdamAlgorithm(const char* class_name, const std::string& name, double beta_1, double beta_2,
                double epsilon, bool amsgrad, double weight_decay)
      : class_name_(class_name),
        beta_1_(beta_1),
        beta_2_(beta_2),
        epsilon_(epsilon),
        amsgrad_(amsgrad),
        weight_decay_(weight_decay) {
    internal::check_betas(name, beta_1, beta_2, epsilon);
    internal::check_range(name, "weight_decay", weight_decay, 0, HUGE_VAL);
  }

  ConfigDict get_config() const override {
    ConfigDict c;
    c.set("class_name", class_name_).set("beta_1", beta_1_).set("beta_2", beta_2_);
    c.set("epsilon", epsilon_).set("amsgrad", amsgrad_);
    if (std::string(class_name_) == "AdamW") c.set("weight_decay", weight_decay_);
    return c;
  }

  bool elementwise() const override { return true; }  // fused_update

  std::vector<Slot> slots() const override {
    std::vector<Slot> s{{"m", 0.0}, {"v", 0.0}};
    if (amsgrad_) s.push_back({"vhat", 0.0});
    return s;
  }

  // ResourceApplyAdam / ResourceApplyAdamWithAmsgrad, after Keras' AdamW weight decay.
  void update(const Tensor& grad, const Tensor& var, std::span<const Tensor> slots,
              const Step& step) const override {
    const double t = static_cast<double>(step.iterations + 1);
    const double lr = step.learning_rate, wd = weight_decay_, eps = epsilon_;
    const double alpha = lr * std::sqrt(1 - std::pow(beta_2_, t)) / (1 - std::pow(beta_1_, t));
    const double b1 = beta_1_, b2 = beta_2_;
    if (amsgrad_) {
      internal::fused_update<3>(grad, var, slots, [=](auto g, auto& w, auto& m, auto& v, auto& vh) {
        using C = decltype(g);
        if (wd != 0) w -= w * C(wd) * C(lr);
        m += (g - m) * (C(1) - C(b1));
        v += (g * g - v) * (C(1) - C(b2));
        vh = std::max(vh, v);
        w -= (m * C(alpha)) / (std::sqrt(vh) + C(eps));
      });
    } else {
      internal::fused_update<2>(grad, var, slots, [=](auto g, auto& w, auto& m, auto& v) {
        using C = decltype(g);
        if (wd != 0) w -= w * C(wd) * C(lr);
        m += (g - m) * (C(1) - C(b1));
        v += (g * g - v) * (C(1) - C(b2));
        w -= (m * C(alpha)) / (std::sqrt(v) + C(eps));
      });
    }
  }

 private:
  const char* class_name_;
  double beta_1_, beta_2_, epsilon_;
  bool amsgrad_;
  double weight_decay_;
};

}  // namespace

Adam::Adam(AdamOptions o)
    : Optimizer(
          std::make_shared<AdamAlgorithm>("Adam", o.name, o.beta_1, o.beta_2, o.epsilon, o.amsgrad,
                                          /*weight_decay=*/0.0),
          internal::common_options(o)) {}

Adam::Adam(schedules::LearningRateSchedule learning_rate)
    : Adam(AdamOptions{.learning_rate = std::move(learning_rate)}) {}

AdamW::AdamW(AdamWOptions o)
    : Optimizer(std::make_shared<AdamAlgorithm>("AdamW", o.name, o.beta_1, o.beta_2, o.epsilon,
                                                o.amsgrad, o.weight_decay),
                internal::common_options(o)) {}

AdamW::AdamW(schedules::LearningRateSchedule learning_rate)
    : AdamW(AdamWOptions{.learning_rate = std::move(learning_rate)}) {}

}  // namespace weft::optim
