// DTensor's Layout (tf.experimental.dtensor.Layout): how a tensor's axes lie on a Mesh. Each axis
// has a sharding spec: a mesh dimension, whose devices each hold one contiguous, equal block of the
// axis, or kUnsharded. A mesh dimension shards at most one axis; over the mesh dimensions no axis
// names, the tensor is replicated.
//
//   Mesh mesh = create_mesh({{"batch", 2}, {"model", 4}});
//   Layout kernel({kUnsharded, "model"}, mesh);        // columns cut in 4, the same on both rows
//   Layout x = Layout::batch_sharded(mesh, "batch", 2);  // {"batch", kUnsharded}
//   kernel.local_shape({784, 512});                    // {784, 128}: each device's block
//   kernel.to_string();  // "sharding_specs:unsharded,model, mesh:|batch=2,model=4|..."
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "weft/core/shape.h"
#include "weft/dtensor/mesh.h"

namespace weft::dtensor {

class Layout {
 public:
  // The empty layout (is_empty()), on the empty mesh.
  Layout() = default;
  // TensorFlow's Layout(sharding_specs, mesh): one spec per axis, each kUnsharded, kMatch (for
  // relayout only) or a dimension of `mesh`, each dimension at most once. InvalidArgument naming
  // the spec and the mesh otherwise, or for the empty mesh.
  Layout(std::vector<std::string> sharding_specs, Mesh mesh);

  // Every axis unsharded: a copy of the tensor on each device.
  static Layout replicated(const Mesh& mesh, int rank);
  // Axis `axis` sharded over `batch_dim`, the others unsharded.
  static Layout batch_sharded(const Mesh& mesh, const std::string& batch_dim, int rank,
                              int axis = 0);
  // The last axis sharded over `inner_dim`, the others unsharded.
  static Layout inner_sharded(const Mesh& mesh, const std::string& inner_dim, int rank);

  // This layout without axes `axes` (TensorFlow's Layout.delete; negative axes count from the
  // end): the layout of a bias beside its kernel's, say. InvalidArgument for an axis outside the
  // rank or given twice.
  Layout delete_axes(const std::vector<int>& axes) const;

  bool is_empty() const { return mesh_.is_empty(); }
  const Mesh& mesh() const { return mesh_; }
  const std::vector<std::string>& sharding_specs() const { return specs_; }
  int rank() const { return static_cast<int>(specs_.size()); }
  // How many blocks axis `axis` is cut into (1 unsharded); InvalidArgument for kMatch.
  int64_t num_shards(int axis) const;
  std::vector<int64_t> num_shards() const;
  // Whether every device holds the whole tensor.
  bool is_fully_replicated() const;

  // The shape of each device's block of a tensor of `global_shape` laid out so; InvalidArgument
  // when the ranks differ or a mesh dimension does not divide its axis (naming both).
  Shape local_shape(const Shape& global_shape) const;
  // The shape of the tensor whose blocks have `local_shape`.
  Shape global_shape(const Shape& local_shape) const;
  // Where device `device_id`'s block of a tensor of `global_shape` starts, per axis.
  std::vector<int64_t> offsets(const Shape& global_shape, int64_t device_id) const;

  // TensorFlow's string form, "sharding_specs:spec,...,spec, mesh:<Mesh::to_string>", or
  // "empty_layout"; from_string reads it back.
  std::string to_string() const;
  static Layout from_string(const std::string& text);

  bool operator==(const Layout& other) const {
    return mesh_ == other.mesh_ && specs_ == other.specs_;
  }
  bool operator!=(const Layout& other) const { return !(*this == other); }

 private:
  std::vector<std::string> specs_;
  Mesh mesh_;
};

}  // namespace weft::dtensor
