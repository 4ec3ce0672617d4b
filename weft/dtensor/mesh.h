// DTensor's Mesh (tf.experimental.dtensor.Mesh): devices arranged in a named, row-major grid,
// over which a Layout shards a tensor's axes.
//
//   weft::config::set_logical_cpu_devices(8);                  // the tutorial's 8 CPUs
//   weft::dtensor::Mesh mesh = weft::dtensor::create_mesh({{"batch", 2}, {"model", 4}});
//   mesh.dim_size("model");                                    // 4
//   mesh.device_location(6);                                   // {1, 2}: batch 1, model 2
//   mesh.to_string();  //
//   "|batch=2,model=4|0,...,7|0,...,7|/job:localhost/replica:0/task:0/device:CPU:0,..."
//
// A mesh's devices have the global ids 0 ... size - 1, in row-major order of the grid (the last
// dimension varies fastest, as TensorFlow requires of its global_device_ids). This process holds
// `local_devices`, whose global ids are `local_device_ids`: every device in one process, or a
// contiguous part of them in each client of a mesh across processes. A Mesh is a value: copies
// share its description.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace weft::dtensor {

// Sharding specs (Layout) that name no mesh dimension: an axis not sharded, and, in relayout only,
// an axis that keeps the layout it has.
inline constexpr const char* kUnsharded = "unsharded";
inline constexpr const char* kMatch = "match";

struct MeshDimension {
  std::string name;
  int64_t size = 0;
  bool operator==(const MeshDimension&) const = default;
};

class Mesh {
 public:
  // The empty mesh (is_empty()), as TensorFlow's Mesh.Empty: the mesh of no layout.
  Mesh() = default;
  // TensorFlow's Mesh(dim_names, global_device_ids, local_device_ids, local_devices, mesh_name,
  // global_devices), the global ids being 0 ... size - 1 laid out as `dims` says. InvalidArgument,
  // naming the value, for no dimension, a dimension without a name, named twice or named as a
  // sharding spec ("unsharded", "match", "any", "scalar"), or with a character of the string
  // form (",|= "), a size below 1, local ids outside the mesh or given twice, as many local
  // devices as ids or not, a device named twice, or a number of local devices that does not
  // divide the mesh's size.
  Mesh(std::vector<MeshDimension> dims, std::vector<int64_t> local_device_ids,
       std::vector<std::string> local_devices, std::string name = "",
       std::vector<std::string> global_devices = {});

  bool is_empty() const { return data_ == nullptr; }
  const std::string& name() const;
  const std::vector<MeshDimension>& dims() const;
  std::vector<std::string> dim_names() const;
  // The mesh's shape: each dimension's size.
  std::vector<int64_t> shape() const;
  int rank() const;
  // The number of devices (0 for the empty mesh).
  int64_t size() const;
  bool contains_dim(const std::string& name) const;
  // The position of dimension `name`, and its size; InvalidArgument naming the mesh's dimensions
  // for another name.
  int dim_index(const std::string& name) const;
  int64_t dim_size(const std::string& name) const;

  // 0 ... size - 1.
  std::vector<int64_t> global_device_ids() const;
  const std::vector<int64_t>& local_device_ids() const;
  const std::vector<std::string>& local_devices() const;
  int num_local_devices() const;
  // Every device's name, by global id, when the mesh was given them (a mesh across processes);
  // otherwise empty.
  const std::vector<std::string>& global_devices() const;

  // The coordinates of device `device_id` in the grid, one per dimension, and back.
  // InvalidArgument for an id outside the mesh or coordinates outside the grid.
  std::vector<int64_t> device_location(int64_t device_id) const;
  int64_t device_id(const std::vector<int64_t>& location) const;
  // Each local device's coordinates by dimension name, in the order of local_devices()
  // (TensorFlow's Mesh.local_device_locations, which the tutorial's repack_local_tensor reads).
  std::vector<std::map<std::string, int64_t>> local_device_locations() const;

  // TensorFlow's string form: "name|dim=size,...|global ids|local ids|local devices[|global
  // devices]", or "empty_mesh"; from_string reads it back (InvalidArgument naming the part that
  // is wrong).
  std::string to_string() const;
  static Mesh from_string(const std::string& text);

  bool operator==(const Mesh& other) const;
  bool operator!=(const Mesh& other) const { return !(*this == other); }

 private:
  struct Data;
  std::shared_ptr<const Data> data_;
};

// tf.experimental.dtensor.create_mesh: a mesh of `dims` over this process's logical CPU devices
// (weft::config::set_logical_cpu_devices), `devices` (any of TensorFlow's spellings: "CPU:3",
// "/cpu:3", the full name) or, when empty, all of them, in order. InvalidArgument when the
// mesh's size is not the number of devices, naming both, or for a device that does not exist.
Mesh create_mesh(const std::vector<MeshDimension>& dims,
                 const std::vector<std::string>& devices = {}, const std::string& mesh_name = "");

}  // namespace weft::dtensor
