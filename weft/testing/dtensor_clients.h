// DTensor tests on logical CPU devices, in one process or as one of the clients of
// `weft launch -n 2` (CTest's *Across2Clients tests set WEFT_DTENSOR_TEST_CLIENTS=2): each client
// then holds its share of the devices, and test_mesh's meshes span the clients. Header-only.
//
//   class MyTest : public weft::testing::LogicalDevices {};  // 8 devices in all
//   TEST_F(MyTest, X) { dtensor::Mesh mesh = weft::testing::test_mesh({{"batch", 8}}); ... }
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "weft/core/config.h"
#include "weft/distribute/cluster_connection.h"
#include "weft/distribute/collective/communicator.h"
#include "weft/dtensor/clients.h"
#include "weft/dtensor/mesh.h"

namespace weft::testing {

// How many processes share the meshes: 1, or WEFT_DTENSOR_TEST_CLIENTS under `weft launch`.
inline int dtensor_test_clients() {
  const char* env = std::getenv("WEFT_DTENSOR_TEST_CLIENTS");
  return env ? std::atoi(env) : 1;
}

// `devices` logical CPUs in all (each client its share) while a test runs; across clients, the
// cluster is joined and its size checked.
class LogicalDevices : public ::testing::Test {
 protected:
  explicit LogicalDevices(int devices = 8) : devices_(devices) {}
  void SetUp() override {
    config::set_logical_cpu_devices(devices_ / dtensor_test_clients());
    if (dtensor_test_clients() > 1) {
      dtensor::initialize_accelerator_system();
      ASSERT_EQ(dtensor::num_clients(), dtensor_test_clients());
    }
  }
  void TearDown() override { config::set_logical_cpu_devices(previous_); }

 private:
  int devices_;
  int previous_ = config::logical_cpu_devices();
};

// Waits until every client has come here too (nothing in one process).
inline void clients_barrier() {
  if (dtensor_test_clients() > 1) {
    distribute::collective::barrier(*dtensor::internal::connection().communicator());
  }
}

// A mesh of `dims` over the first devices: in this process, or across the clients, each holding
// its share of them.
inline dtensor::Mesh test_mesh(const std::vector<dtensor::MeshDimension>& dims) {
  int64_t size = 1;
  for (const dtensor::MeshDimension& d : dims) size *= d.size;
  std::vector<std::string> devices;
  for (int64_t i = 0; i < size / dtensor_test_clients(); ++i) {
    devices.push_back("CPU:" + std::to_string(i));
  }
  return dtensor_test_clients() > 1 ? dtensor::create_distributed_mesh(dims, "", devices)
                                    : dtensor::create_mesh(dims, devices);
}

}  // namespace weft::testing
