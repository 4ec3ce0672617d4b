#include "weft/dtensor/clients.h"

#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "weft/core/config.h"
#include "weft/core/errors.h"
#include "weft/distribute/cluster_connection.h"
#include "weft/distribute/collective/communicator.h"

namespace weft::dtensor {
namespace {

std::mutex g_mu;
std::unique_ptr<distribute::ClusterConnection> g_connection;
// Sub-communicators of the meshes' dimensions whose groups reach some clients but not all, by
// mesh and dimension.
std::map<std::string, std::unique_ptr<distribute::collective::Communicator>> g_along;

// The clients that hold the devices of the group along `dim` of this client's first device.
std::set<int64_t> clients_along(const Mesh& mesh, const std::string& dim) {
  const int d = mesh.dim_index(dim);
  const int64_t per_client = mesh.num_local_devices();
  std::vector<int64_t> at = mesh.device_location(mesh.local_device_ids()[0]);
  std::set<int64_t> out;
  for (int64_t c = 0; c < mesh.dim_size(dim); ++c) {
    at[static_cast<size_t>(d)] = c;
    out.insert(mesh.device_id(at) / per_client);
  }
  return out;
}

std::string along_key(const Mesh& mesh, const std::string& dim) {
  return mesh.to_string() + "/" + dim;
}

std::string device_name(const std::string& task, const std::string& local) {
  // "chief:0" and ".../device:CPU:3" -> "/job:chief/replica:0/task:0/device:CPU:3"
  const auto colon = task.find(':');
  return "/job:" + task.substr(0, colon) + "/replica:0/task:" + task.substr(colon + 1) +
         local.substr(local.find("/device:"));
}

}  // namespace

void initialize_accelerator_system() {
  std::lock_guard lock(g_mu);
  if (g_connection) return;
  distribute::ClusterConnectionOptions options;
  options.who = "dtensor::initialize_accelerator_system";
  g_connection = std::make_unique<distribute::ClusterConnection>(
      *distribute::default_cluster_resolver(), std::move(options));
}

void shutdown_accelerator_system() {
  std::lock_guard lock(g_mu);
  g_along.clear();
  g_connection.reset();
}

distribute::ClusterConnection& internal::connection() {
  initialize_accelerator_system();
  return *g_connection;
}

int num_clients() { return internal::connection().size(); }
int client_id() { return internal::connection().rank(); }

Mesh create_distributed_mesh(const std::vector<MeshDimension>& dims, const std::string& mesh_name,
                             const std::vector<std::string>& local_devices) {
  distribute::ClusterConnection& cluster = internal::connection();
  std::vector<std::string> local =
      config::resolve_logical_devices(local_devices, "create_distributed_mesh");
  const int64_t per_client = static_cast<int64_t>(local.size());
  int64_t size = 1;
  for (const MeshDimension& d : dims) size *= d.size;
  WEFT_CHECK(size == per_client * cluster.size(), InvalidArgument)
      << "create_distributed_mesh: the mesh has " << size << " devices, but " << cluster.size()
      << " clients hold " << per_client
      << " each (weft::config::set_logical_cpu_devices sets "
         "how many)";
  std::vector<std::string> global_devices;
  for (const std::string& task : cluster.tasks()) {
    for (const std::string& d : local) global_devices.push_back(device_name(task, d));
  }
  std::vector<int64_t> ids;
  std::vector<std::string> names;
  for (int64_t i = 0; i < per_client; ++i) {
    ids.push_back(cluster.rank() * per_client + i);
    names.push_back(global_devices[static_cast<size_t>(ids.back())]);
  }
  Mesh mesh(dims, ids, names, mesh_name, global_devices);
  if (cluster.size() == 1) return mesh;
  // The barrier: every client sends the others the mesh it asks for (without its own devices),
  // then compares, over the cluster's communicator (TCP or MPI). It waits up to 10 minutes for
  // the last client, which may still be loading its data.
  std::string mine = "\"" + mesh_name + "\" ";
  for (size_t i = 0; i < dims.size(); ++i) {
    mine += (i ? "," : "") + dims[i].name + "=" + std::to_string(dims[i].size);
  }
  mine += " over";
  for (const std::string& d : local) mine += " " + d.substr(d.find("/device:") + 8);
  mine += " on each client";
  namespace collective = distribute::collective;
  collective::CommunicationOptions wait;
  wait.timeout_seconds = 600;
  std::vector<int64_t> lengths;
  const std::vector<int32_t> all =
      collective::all_gather(*cluster.communicator(),
                             Tensor::from_vector(std::vector<int32_t>(mine.begin(), mine.end())),
                             wait, &lengths)
          .to_vector<int32_t>();
  auto at = all.begin();
  for (size_t r = 0; r < lengths.size(); ++r) {
    const std::string theirs(at, at + lengths[r]);
    at += lengths[r];
    WEFT_CHECK(theirs == mine, InvalidArgument)
        << "create_distributed_mesh: client " << cluster.task() << " creates mesh " << mine
        << ", but client " << cluster.tasks()[r] << " creates " << theirs
        << "; every client must create the same mesh";
  }
  // A communicator for each dimension whose groups reach some clients but not all (every
  // client splits, in the mesh's order of dimensions).
  for (const MeshDimension& d : dims) {
    const std::set<int64_t> holders = clients_along(mesh, d.name);
    if (holders.size() == 1 || static_cast<int>(holders.size()) == cluster.size()) continue;
    std::lock_guard lock(g_mu);
    auto [it, fresh] = g_along.try_emplace(along_key(mesh, d.name));
    if (fresh) it->second = cluster.communicator()->split(static_cast<int>(*holders.begin()), wait);
  }
  return mesh;
}

distribute::collective::Communicator& internal::communicator_along(const Mesh& mesh,
                                                                   const std::string& dim) {
  std::lock_guard lock(g_mu);
  auto it = g_along.find(along_key(mesh, dim));
  distribute::collective::Communicator& comm =
      it != g_along.end() ? *it->second : *g_connection->communicator();
  WEFT_ASSERT(static_cast<size_t>(comm.size()) == clients_along(mesh, dim).size())
      << "the communicator along " << dim << " of " << mesh.to_string() << " has " << comm.size()
      << " ranks";
  return comm;
}

void barrier(const Mesh& mesh) {
  if (mesh.num_local_devices() == mesh.size()) return;
  distribute::collective::barrier(*internal::connection().communicator());
}

}  // namespace weft::dtensor
