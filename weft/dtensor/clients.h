// DTensor across processes (TensorFlow's dtensor.initialize_accelerator_system, num_clients,
// client_id and create_distributed_mesh): the clients are the cluster's training tasks
// (TF_CONFIG's chief and workers, or mpirun's ranks) in MultiWorkerMirroredStrategy's rank order,
// each holding its own logical devices; a mesh across them numbers client k's devices after
// client k - 1's.
//
//   dtensor::initialize_accelerator_system();       // joins the cluster TF_CONFIG describes
//   dtensor::Mesh mesh = dtensor::create_distributed_mesh({{"batch", 8}});  // 4 devices each
//   ...
//   dtensor::shutdown_accelerator_system();
#pragma once

#include <string>
#include <vector>

#include "weft/dtensor/mesh.h"

namespace weft::distribute {
class ClusterConnection;
namespace collective {
class Communicator;
}
}  // namespace weft::distribute

namespace weft::dtensor {

// Joins this process to the cluster (once; later calls do nothing): TF_CONFIG's tasks, or
// mpirun's ranks, or this process alone. Every task of the cluster must call it.
void initialize_accelerator_system();
// Leaves the cluster, after the others have come here too (or at once while an error unwinds).
void shutdown_accelerator_system();

// How many clients there are, and which this one is (0 first), joining the cluster if needed.
int num_clients();
int client_id();

// A mesh of `dims` over every client's devices: this client's `local_devices` (as create_mesh
// takes them; empty: all its logical devices), each client holding as many. Creating one is a
// barrier: every client must create the same mesh, in the same order, and a client whose mesh
// differs fails, naming both.
Mesh create_distributed_mesh(const std::vector<MeshDimension>& dims,
                             const std::string& mesh_name = "",
                             const std::vector<std::string>& local_devices = {});

// Waits until every client of `mesh` has come here too (TF's dtensor.barrier); nothing on a
// mesh in one process.
void barrier(const Mesh& mesh);

namespace internal {
// The cluster this process joined (initialize_accelerator_system).
distribute::ClusterConnection& connection();
// The communicator of the clients that hold this client's groups of devices along mesh dimension
// `dim` of `mesh` (a mesh across processes): the cluster's own when they are all the clients, else
// the one create_distributed_mesh split off for them.
distribute::collective::Communicator& communicator_along(const Mesh& mesh, const std::string& dim);
}  // namespace internal

}  // namespace weft::dtensor
