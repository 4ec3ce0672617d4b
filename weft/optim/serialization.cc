// optim::deserialize: an optimizer from its get_config() (weft/optim/optimizer.h).
#include "weft/core/errors.h"
#include "weft/optim/adadelta.h"
#include "weft/optim/adagrad.h"
#include "weft/optim/adam.h"
#include "weft/optim/adamax.h"
#include "weft/optim/ftrl.h"
#include "weft/optim/loss_scale_optimizer.h"
#include "weft/optim/nadam.h"
#include "weft/optim/optimizer.h"
#include "weft/optim/rmsprop.h"
#include "weft/optim/sgd.h"

namespace weft::optim {
namespace {

// The options every optimizer shares, read into an optimizer's own options struct.
template <typename Options>
Options common(const ConfigDict& c, Options o) {
  o.name = c.get_string("name", o.name);
  // Keras's from_config leaves a missing hyperparameter at its default.
  if (c.has("learning_rate")) o.learning_rate = schedules::deserialize(c.get_dict("learning_rate"));
  o.clipnorm = c.get_optional_double("clipnorm");
  o.clipvalue = c.get_optional_double("clipvalue");
  o.global_clipnorm = c.get_optional_double("global_clipnorm");
  return o;
}

Optimizer make(const std::string& kind, const ConfigDict& c) {
  if (kind == "SGD") {
    SGDOptions o = common(c, SGDOptions{});
    o.momentum = c.get_double("momentum", o.momentum);
    o.nesterov = c.get_bool("nesterov", o.nesterov);
    return SGD(o);
  }
  if (kind == "Adam" || kind == "AdamW") {
    auto adam = [&](auto o) {
      o.beta_1 = c.get_double("beta_1", o.beta_1);
      o.beta_2 = c.get_double("beta_2", o.beta_2);
      o.epsilon = c.get_double("epsilon", o.epsilon);
      o.amsgrad = c.get_bool("amsgrad", o.amsgrad);
      return o;
    };
    if (kind == "Adam") return Adam(adam(common(c, AdamOptions{})));
    AdamWOptions o = adam(common(c, AdamWOptions{}));
    o.weight_decay = c.get_double("weight_decay", o.weight_decay);
    return AdamW(o);
  }
  if (kind == "RMSprop") {
    RMSpropOptions o = common(c, RMSpropOptions{});
    o.rho = c.get_double("rho", o.rho);
    o.momentum = c.get_double("momentum", o.momentum);
    o.epsilon = c.get_double("epsilon", o.epsilon);
    o.centered = c.get_bool("centered", o.centered);
    return RMSprop(o);
  }
  if (kind == "Adagrad") {
    AdagradOptions o = common(c, AdagradOptions{});
    o.initial_accumulator_value =
        c.get_double("initial_accumulator_value", o.initial_accumulator_value);
    o.epsilon = c.get_double("epsilon", o.epsilon);
    return Adagrad(o);
  }
  if (kind == "Adadelta") {
    AdadeltaOptions o = common(c, AdadeltaOptions{});
    o.rho = c.get_double("rho", o.rho);
    o.epsilon = c.get_double("epsilon", o.epsilon);
    return Adadelta(o);
  }
  if (kind == "Adamax" || kind == "Nadam") {
    auto betas = [&](auto o) {
      o.beta_1 = c.get_double("beta_1", o.beta_1);
      o.beta_2 = c.get_double("beta_2", o.beta_2);
      o.epsilon = c.get_double("epsilon", o.epsilon);
      return o;
    };
    if (kind == "Adamax") return Adamax(betas(common(c, AdamaxOptions{})));
    return Nadam(betas(common(c, NadamOptions{})));
  }
  if (kind == "Ftrl") {
    FtrlOptions o = common(c, FtrlOptions{});
    o.learning_rate_power = c.get_double("learning_rate_power", o.learning_rate_power);
    o.initial_accumulator_value =
        c.get_double("initial_accumulator_value", o.initial_accumulator_value);
    o.l1_regularization_strength =
        c.get_double("l1_regularization_strength", o.l1_regularization_strength);
    o.l2_regularization_strength =
        c.get_double("l2_regularization_strength", o.l2_regularization_strength);
    o.l2_shrinkage_regularization_strength = c.get_double("l2_shrinkage_regularization_strength",
                                                          o.l2_shrinkage_regularization_strength);
    o.beta = c.get_double("beta", o.beta);
    return Ftrl(o);
  }
  WEFT_FAIL(InvalidArgument) << "unknown optimizer \"" << kind
                             << "\"; expected SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, "
                                "Adamax, Nadam or Ftrl";
  return SGD();
}

}  // namespace

Optimizer deserialize(const ConfigDict& config) {
  Optimizer optimizer = make(config.get_string("class_name"), config);
  if (config.is_null("loss_scale")) return optimizer;
  ConfigDict ls = config.get_dict("loss_scale");
  LossScaleOptions o;
  o.dynamic = ls.get_bool("dynamic", o.dynamic);
  o.initial_scale = ls.get_double("initial_scale", o.initial_scale);
  o.dynamic_growth_steps = ls.get_int("dynamic_growth_steps", o.dynamic_growth_steps);
  return mixed_precision::LossScaleOptimizer(optimizer, o);
}

}  // namespace weft::optim
