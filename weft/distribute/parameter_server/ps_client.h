// A connection to one parameter server (ps_service.h): create variables on it, pull their
// values, push gradients or values staged under a closure id, then commit or abort the closure.
// Tensors travel in chunks of at most kChunkBytes, every call has a deadline
// (options.call_timeout), and the channel keeps itself alive with pings.
//
//   ParameterServerClient ps0("ps:0", "10.0.0.3:2222", {.token = token});
//   ps0.create({kernel, bias}, optimizer_config_json);
//   ps0.push(closure, PushKind::kValue, {kernel, bias}, {k0, b0});
//   ps0.push(closure, PushKind::kGradient, {kernel}, {dk},
//            {.optimizer = adam_config_json, .learning_rate = 0.001, .iterations = 0});
//   ps0.commit(closure);
//   std::vector<weft::Tensor> values = ps0.pull({kernel, bias});
//
// Errors name the task and its address: Unavailable when it cannot be reached (or, for a commit,
// has restarted since the updates were staged), DeadlineExceeded past the call's deadline,
// FailedPrecondition for a refused token or an unknown variable (a server that restarted holds
// none of the variables it was given),
// ResourceExhausted for a message over the limit, InvalidArgument for a value of another shape or
// dtype than its variable's.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "weft/checkpoint/held_slices.h"
#include "weft/core/tensor.h"
#include "weft/distribute/parameter_server/options.h"

namespace weft::distribute::parameter_server {

enum class PushKind {
  kGradient,  // applied by the optimizer's update at commit
  kValue,     // assigned at commit
  kAdd,       // added at commit
};

// What a pushed gradient is applied with at its closure's commit: the optimizer's algorithm (its
// Keras config as JSON: the class and hyperparameters; optim::Optimizer::Algorithm::get_config)
// and the step. `index` orders several steps of one closure (steps_per_execution); an addition
// (PushKind::kAdd) carries only it.
struct GradientStep {
  std::string optimizer;
  double learning_rate = 0.0;
  int64_t iterations = 0;
  uint32_t index = 0;
};

class ParameterServerClient final : public checkpoint::SliceHolder {
 public:
  ParameterServerClient(std::string task, std::string address, ServiceOptions options);
  ~ParameterServerClient() override;
  ParameterServerClient(const ParameterServerClient&) = delete;
  ParameterServerClient& operator=(const ParameterServerClient&) = delete;

  const std::string& task() const override;
  const std::string& address() const;

  // Creates `variables` (zero-filled) with the slots of the optimizer whose Keras config (JSON)
  // is `optimizer_config` ("": none).
  void create(const std::vector<VariableSpec>& variables, const std::string& optimizer_config);
  // The values of `variables`, in order. FailedPrecondition for one that has no value yet.
  std::vector<Tensor> pull(const std::vector<VariableSpec>& variables);
  // Rows `rows` of `variable` (along axis 0, in that order, repeats allowed): only their bytes
  // travel (an embedding lookup's). InvalidArgument for a row out of range or a scalar.
  Tensor pull_rows(const VariableSpec& variable, const std::vector<int64_t>& rows);
  // Whether every one of `variables` exists there with a value (a pull would succeed).
  bool readable(const std::vector<VariableSpec>& variables);
  // Stages values[i] for variables[i] under `closure_id` (gradients with `step`).
  void push(uint64_t closure_id, PushKind kind, const std::vector<VariableSpec>& variables,
            const std::vector<Tensor>& values, const GradientStep& step = {});
  // Applies what `closure_id` staged, with what the closures `with` staged as the same step
  // (their gradients summed in order); false when it had been applied already (dropped).
  // `incarnation`: the server's incarnation the updates were staged on (incarnation() after the
  // pushes); Unavailable, nothing applied, when the server has another (0: not checked).
  bool commit(uint64_t closure_id, const std::vector<uint64_t>& with = {},
              uint64_t incarnation = 0);
  // Drops what `closure_id` staged, and what it pushes from now on.
  void abort(uint64_t closure_id);
  // Has the server write `slices` of its variables (HeldSlice::id, and `which`: 0 the value, k
  // slot k - 1) as part `part` of `parts` of the checkpoint `dir` saved as `save_id`, on its own
  // file system (checkpoint/held_slices.h).
  void save(const std::string& dir, const std::string& save_id, int part, int parts,
            const std::vector<checkpoint::HeldSlice>& slices) override;
  // Has the server read `slices` of its variables from the checkpoint `dir`, on its own file
  // system, and assign them (checkpoint/held_slices.h).
  void restore(const std::string& dir, const std::vector<checkpoint::HeldSlice>& slices) override;

  // The server's incarnation as it last answered (0 before any answer): a change says it
  // restarted.
  uint64_t incarnation() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft::distribute::parameter_server
