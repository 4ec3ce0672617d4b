// Gradients all-reduced in packs while the backward pass still runs, as fit's training step
// does under a strategy whose replica context asks for it (gradient_pack_bytes() > 0, e.g.
// MultiWorkerMirroredStrategy with overlap on):
//
//   distribute::GradientPacks packs(ctx, vars, ctx.gradient_pack_bytes());
//   tape.gradient(loss, values, [&](size_t i, const Tensor& g) { packs.ready(i, g); });
//   std::vector<Tensor> summed = packs.finish();   // as ctx.all_reduce(SUM, gradients)
//
// The variables, last first (the backward pass finishes the last layers' gradients first), are
// cut into packs of about `bytes` each, one dtype per pack. A pack is begun
// (ReplicaContext::begin_all_reduce) once all its gradients are ready and every pack before it
// has begun, so that every replica begins the same packs in the same order however its backward
// pass reports them; finish() begins the rest and waits. A gradient this replica lacks counts as
// zeros; one that no replica has stays undefined, as all_reduce leaves it.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "weft/autodiff/variable.h"
#include "weft/core/replica_context.h"

namespace weft::distribute {

class GradientPacks {
 public:
  GradientPacks(ReplicaContext& ctx, const std::vector<Variable>& vars, std::size_t bytes);
  // Gradient i (of vars[i]; undefined: none) is final. Once per variable at most.
  void ready(std::size_t i, const Tensor& gradient);
  // The gradients summed over every replica, in the variables' order.
  std::vector<Tensor> finish();

 private:
  struct Pack {
    std::vector<std::size_t> members;  // variable indices
    std::size_t waiting = 0;           // members not ready yet
    std::unique_ptr<ReplicaContext::Pending> pending;
  };
  void begin_ready_packs();

  ReplicaContext& ctx_;
  std::vector<Variable> vars_;
  std::vector<Tensor> gradients_;
  std::vector<bool> ready_;
  std::vector<std::size_t> pack_of_;
  std::vector<Pack> packs_;
  std::size_t next_ = 0;  // the first pack not begun
};

}  // namespace weft::distribute
