// Keras's regularizers and constraints, the two things a layer's weights take besides an
// initializer. A Regularizer is a penalty on a weight (kernel_regularizer, bias_regularizer, ...)
// or on a layer's output (activity_regularizer): the layer's losses(), which fit adds to the
// training loss (and to the loss it reports) as Keras's model.losses. A Constraint projects a
// weight after each optimizer update (kernel_constraint, bias_constraint), as Keras's
// variable.constraint.
//
//   weft::nn::Dense dense(64, "relu", {.kernel_regularizer = weft::nn::regularizers::l2(1e-4),
//                                      .kernel_constraint = weft::nn::constraints::max_norm(3)});
//   weft::nn::Dense other(10, "", {.bias_regularizer = "l1", .bias_constraint = "non_neg"});
//
// Both are saved in a model's config as Keras serializes them ({"class_name": "L2", "config":
// {"l2": 0.0001}}); a custom one (a name, a function and its config) loads once its class is
// registered (register_regularizer / register_constraint), as Keras's custom_objects.
#pragma once

#include <functional>
#include <string>

#include "weft/core/config_dict.h"
#include "weft/core/tensor.h"

namespace weft::nn {

namespace internal {

// A function of one tensor with a Keras class name and a config; Kind says what it is in
// messages ("regularizer") and holds the built-in classes and the registry of custom ones.
template <typename Kind>
class ConfiguredFn {
 public:
  using Fn = std::function<Tensor(const Tensor& x)>;
  using Factory = std::function<ConfiguredFn(const ConfigDict& config)>;

  ConfiguredFn() = default;  // none
  // By Keras name ("l2", "max_norm", ...), with Keras's default options; InvalidArgument listing
  // the names otherwise. An empty name is none.
  ConfiguredFn(const char* name);         // NOLINT(google-explicit-constructor)
  ConfiguredFn(const std::string& name);  // NOLINT(google-explicit-constructor)
  // A custom one: `class_name` and `config` describe it in a saved model.
  ConfiguredFn(std::string class_name, Fn fn, ConfigDict config = {});

  bool defined() const { return fn_ != nullptr; }
  Tensor operator()(const Tensor& x) const;
  const std::string& class_name() const { return class_name_; }
  const ConfigDict& config() const { return config_; }
  const Fn& function() const { return fn_; }

  // {"class_name": ..., "config": ...}; and back (by the built-in or registered class; an
  // InvalidArgument names an unknown one and how to register it).
  ConfigDict serialize() const;
  static ConfiguredFn deserialize(const ConfigDict& config);
  // A later registration replaces an earlier one; built-in names are refused.
  static void register_class(const std::string& class_name, Factory factory);

 private:
  std::string class_name_;
  Fn fn_;
  ConfigDict config_;
};

struct RegularizerKind;
struct ConstraintKind;

}  // namespace internal

using Regularizer = internal::ConfiguredFn<internal::RegularizerKind>;
using Constraint = internal::ConfiguredFn<internal::ConstraintKind>;

namespace regularizers {
// l1 * sum(|x|) ("l1", class L1); l2 * sum(x^2) ("l2", class L2, no one half); both ("l1_l2",
// class L1L2). The string names take Keras's defaults, 0.01.
Regularizer l1(double l1 = 0.01);
Regularizer l2(double l2 = 0.01);
Regularizer l1_l2(double l1 = 0.01, double l2 = 0.01);
}  // namespace regularizers

namespace constraints {
// Norms are over `axis` (Keras's default 0: a Dense kernel's incoming weights of each unit; use
// {0, 1, 2} for a Conv2D kernel's filters), with Keras's epsilon 1e-7 added to the divisor.
// w * clip(norm, 0, max_value) / (eps + norm)  ("max_norm", class MaxNorm)
Constraint max_norm(double max_value = 2, std::vector<int64_t> axis = {0});
// w * (rate * clip(norm, min_value, max_value) + (1 - rate) * norm) / (eps + norm)
// ("min_max_norm", class MinMaxNorm)
Constraint min_max_norm(double min_value = 0, double max_value = 1, double rate = 1,
                        std::vector<int64_t> axis = {0});
// w * (w >= 0)  ("non_neg", class NonNeg)
Constraint non_neg();
// w / (eps + norm)  ("unit_norm", class UnitNorm)
Constraint unit_norm(std::vector<int64_t> axis = {0});
}  // namespace constraints

// Keras's custom_objects for the two: how a saved model's custom class is made again.
void register_regularizer(const std::string& class_name, Regularizer::Factory factory);
void register_constraint(const std::string& class_name, Constraint::Factory factory);

}  // namespace weft::nn
