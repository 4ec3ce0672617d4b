// DTensor across processes: each process of a cluster (`weft launch -n 2`, or TF_CONFIG by hand)
// is a client holding 4 logical CPUs, and one mesh spans them all. With --mismatch the last client
// asks for another mesh, and every client's creation fails naming both.
//
//   weft launch -n 2 -- ./dtensor_clients
#include <weft/weft.h>

#include <cstring>
#include <iostream>

namespace dtensor = weft::dtensor;

int main(int argc, char** argv) {
  bool mismatch = argc > 1 && std::strcmp(argv[1], "--mismatch") == 0;
  try {
    weft::config::set_logical_cpu_devices(4);
    dtensor::initialize_accelerator_system();
    const int clients = dtensor::num_clients();
    // dtensor.create_distributed_mesh([("batch", 4 * clients)])
    int64_t batch = 4 * clients;
    if (mismatch && dtensor::client_id() == clients - 1) batch = 2 * clients;
    std::vector<dtensor::MeshDimension> dims{{"batch", batch}};
    if (batch != 4 * clients) dims.push_back({"model", 2});
    dtensor::Mesh mesh = dtensor::create_distributed_mesh(dims);
    std::cout << "client " << dtensor::client_id() << " of " << clients << ": devices "
              << mesh.local_device_ids().front() << "-" << mesh.local_device_ids().back() << " of "
              << mesh.size() << ", first " << mesh.local_devices().front() << "\n";
    dtensor::shutdown_accelerator_system();
  } catch (const weft::Error& e) {
    std::cerr << "dtensor_clients: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
