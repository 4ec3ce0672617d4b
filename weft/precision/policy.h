// Keras mixed precision policies (tf.keras.mixed_precision.Policy): the dtype a layer computes
// in and the dtype its variables are kept in.
//
//   weft::mixed_precision::set_global_policy("mixed_bfloat16");  // layers built from now on
//   weft::nn::Dense hidden(700, "relu");           // bfloat16 compute, float32 kernel and bias
//   weft::nn::Activation probs("softmax", {.dtype = "float32"});  // the usual float32 output
//
// "mixed_bfloat16" and "mixed_float16" compute in the half type and keep float32 variables;
// a floating dtype name ("float32", "float64", "bfloat16", "float16") uses that dtype for both.
// A layer takes the global policy in force when it is constructed, unless given a dtype. Under
// mixed_float16, Model::compile and Optimizer::minimize add dynamic loss scaling (see
// weft/optim/loss_scale_optimizer.h). The global policy lives in weft::config (ARCHITECTURE
// principle 5).
#pragma once

#include <string>
#include <string_view>

#include "weft/core/dtype.h"

namespace weft::mixed_precision {

class Policy {
 public:
  // InvalidArgument naming the policy for anything but the names above.
  explicit Policy(std::string_view name);
  const std::string& name() const { return name_; }
  DType compute_dtype() const { return compute_; }
  DType variable_dtype() const { return variable_; }
  bool operator==(const Policy& other) const { return name_ == other.name_; }

 private:
  std::string name_;
  DType compute_, variable_;
};

// The policy of layers constructed from now on; "float32" at start-up.
void set_global_policy(const Policy& policy);
void set_global_policy(std::string_view name);
Policy global_policy();

// Sets the global policy for its lifetime, then restores the previous one.
class PolicyScope {
 public:
  explicit PolicyScope(std::string_view name);
  ~PolicyScope();
  PolicyScope(const PolicyScope&) = delete;
  PolicyScope& operator=(const PolicyScope&) = delete;

 private:
  Policy previous_;
};

}  // namespace weft::mixed_precision
