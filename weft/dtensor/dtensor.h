// DTensors (tf.experimental.dtensor): a weft::Tensor laid out on a Mesh, holding one component per
// local device, each that device's block of the global tensor (Layout::local_shape). Ops take
// DTensors as they take any tensor: each public op passes OpScope, which hands a DTensor operand
// to the op's SPMD rule (weft/dtensor/spmd.cc), so the tutorial's layer code runs unchanged.
//
//   Mesh mesh = create_mesh({{"batch", 8}});
//   Tensor x = copy_to_mesh(images, Layout::batch_sharded(mesh, "batch", 2));  // 8 blocks of rows
//   DVariable w(call_with_layout([] { return zeros({784, 10}); }, Layout::replicated(mesh, 2)));
//   Tensor logits = matmul(x, w);     // batch-sharded, computed block by block
//   fetch_layout(logits).to_string(); // "sharding_specs:batch,unsharded, mesh:|batch=8|..."
//
// A sharded DTensor's values are not in this process as one array: reading them (data(),
// to_vector, item) fails naming its layout; a fully replicated one reads as its value, as
// TensorFlow's numpy() does. Gradients need nothing DTensor-specific: a tape records the ops on the
// components, and a source's gradient sums its components' over the devices that hold the same
// block (the all-reduce of data-parallel training).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "weft/autodiff/variable.h"
#include "weft/core/tensor.h"
#include "weft/dtensor/layout.h"

namespace weft::dtensor {

// Whether `t` is a DTensor.
bool is_dtensor(const Tensor& t);

// A DTensor's layout (tf dtensor.fetch_layout); InvalidArgument for a tensor that is not one.
Layout fetch_layout(const Tensor& t);

// tf dtensor.pack: the DTensor laid out as `layout` whose component on the i-th local device of
// its mesh is components[i]. The components must have one dtype and the shape `layout` gives
// each device (InvalidArgument naming the first that does not); devices that hold the same block
// should be given equal components, as TensorFlow asks. Nothing moves between processes.
Tensor pack(const std::vector<Tensor>& components, const Layout& layout);

// tf dtensor.unpack: this process's components, one per local device, in the mesh's order.
std::vector<Tensor> unpack(const Tensor& t);

// tf dtensor.relayout: the same global tensor laid out as `layout` (same mesh; kMatch keeps an
// axis as it is). One mesh dimension at a time: replicated -> sharded cuts each device's block
// locally; sharded -> replicated gathers; sharded on another axis gathers, then cuts. A tape
// records the components' moves, so its gradient moves the gradient back.
Tensor relayout(const Tensor& t, const Layout& layout);

// tf dtensor.copy_to_mesh: a local tensor laid out on a mesh: each device takes its block.
Tensor copy_to_mesh(const Tensor& t, const Layout& layout);

// tf dtensor.call_with_layout: the tensor `fn` makes (an initialiser: zeros,
// stateless_random_uniform), laid out as `layout`. weft computes it once and cuts it, so a seeded
// initialiser gives the same global values on every layout (a checkpoint or a comparison with one
// device needs that).
Tensor call_with_layout(const std::function<Tensor()>& fn, const Layout& layout);

// tf dtensor.DVariable: a Variable whose value is a DTensor, its layout fixed: assigning a DTensor
// of another layout is refused naming both (a local tensor is cut into the layout first).
class DVariable : public Variable {
 public:
  DVariable() = default;
  explicit DVariable(const Tensor& initial_value, std::string name = "Variable",
                     bool trainable = true);
  Layout layout() const { return fetch_layout(value()); }
};

}  // namespace weft::dtensor
