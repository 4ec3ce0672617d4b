// What a DTensor is made of (weft::TensorParts): its layout, its pending sums and its components,
// and the moves between layouts that relayout and the SPMD rules make of them. One process holds
// its devices' components; a move over devices of several processes crosses them in
// internal/across.h.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "weft/core/op_scope.h"
#include "weft/core/tensor.h"
#include "weft/dtensor/layout.h"

namespace weft::dtensor::internal {

// A pending reduction ("partial", JAX's unreduced): over each of these mesh dimensions the
// devices hold terms whose combination (sum, max or min) is the value. Internal to DTensor: the
// op that consumes such a tensor resolves it (an all-reduce) first.
using Pending = std::map<std::string, SpmdRule::Reduce>;

class Parts final : public TensorParts {
 public:
  Parts(Layout layout, Pending pending, std::vector<Tensor> components)
      : layout_(std::move(layout)),
        pending_(std::move(pending)),
        components_(std::move(components)) {}
  const Layout& layout() const { return layout_; }
  const Pending& pending() const { return pending_; }

  const std::vector<Tensor>& components() const override { return components_; }
  std::string describe() const override;
  Tensor replicated_value() const override;
  Tensor with_components(std::vector<Tensor> components) const override;
  Tensor empty_like() const override;
  std::vector<std::pair<Tensor, Tensor>> seeds(const Tensor& output_gradient) const override;
  Tensor gradient(const std::vector<Tensor>& component_gradients) const override;
  std::vector<TensorBlock> blocks() const override;

 private:
  Layout layout_;
  Pending pending_;
  std::vector<Tensor> components_;
};

// The DTensor of these parts (its global shape from the first component's).
Tensor make(Layout layout, Pending pending, std::vector<Tensor> components);
// t's parts, or null for a local tensor.
const Parts* parts_of(const Tensor& t);

// The local devices' places on the mesh: the local device i's coordinate on mesh dimension `dim`.
int64_t coordinate(const Mesh& mesh, size_t local_device, int dim);
// The local devices grouped by mesh dimension `dim`: devices that differ only there, each group
// in the order of its coordinate. On a mesh across clients a group may continue on other clients
// (`across`: then every group along `dim` does, each client holding a contiguous run of it, and
// they meet over communicator_along(mesh, dim)).
struct Groups {
  std::vector<std::vector<size_t>> local;
  bool across = false;
};
Groups groups_along(const Mesh& mesh, const std::string& dim);

// What the moves between layouts in this process have carried, counted as ring collectives on
// separate devices would carry it: bytes received, summed over the devices of each group (an
// all-reduce of B bytes over n devices 2(n - 1)B, an all-gather of n blocks of b bytes n(n - 1)b),
// a move made while a tape records counted again for its backward (all-reduce's is an all-reduce,
// all-gather's a reduce-scatter of the same volume), and the sums of gradient terms over the mesh
// dimensions a variable is replicated on. What benchmarks compare with the analytic count.
struct Traffic {
  int64_t collectives = 0;  // one per group of devices
  int64_t bytes = 0;
};
Traffic traffic();

// t (a DTensor) with its pending sums resolved: each combined in a fixed tree over its devices.
Tensor resolve(const Tensor& t);
// t (a DTensor without pending sums) laid out as `target` (same mesh and rank; no kMatch).
Tensor move(const Tensor& t, const Layout& target);
// A local tensor as a DTensor: the same tensor on every device of `mesh` (replicated).
Tensor replicate(const Tensor& t, const Mesh& mesh);

}  // namespace weft::dtensor::internal
