// TF_CONFIG as TensorFlow reads it: the cluster, this task and the chief; every malformed config
// fails naming its field.
#include "weft/distribute/cluster/tf_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>
#include <vector>

#include "weft/core/errors.h"
#include "weft/distribute/cluster/local_ports.h"

namespace weft::distribute::cluster_resolver {
namespace {

using ::testing::HasSubstr;

std::string error_of(const std::string& tf_config) {
  try {
    TFConfigClusterResolver::from_json(tf_config);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "no error";
}

TEST(TFConfig, ReadsTheClusterAndTheTask) {
  auto r = TFConfigClusterResolver::from_json(
      R"({"cluster": {"chief": ["host0:2222"], "worker": ["host1:2222", "10.0.0.2:2222"],
                      "ps": ["[::1]:2223"]},
          "task": {"type": "worker", "index": 1}, "rpc_layer": "grpc"})");
  EXPECT_EQ(r.task_type(), "worker");
  EXPECT_EQ(r.task_id(), 1);
  EXPECT_EQ(r.rpc_layer(), "grpc");
  EXPECT_EQ(r.environment(), "");
  EXPECT_FALSE(r.is_chief());
  EXPECT_EQ(r.num_workers(), 3);
  const ClusterSpec& c = r.cluster_spec();
  EXPECT_EQ(c.jobs(), (std::vector<std::string>{"chief", "ps", "worker"}));
  EXPECT_EQ(c.num_tasks("worker"), 2);
  EXPECT_EQ(c.num_tasks("evaluator"), 0);
  EXPECT_EQ(c.task_address("worker", 1), "10.0.0.2:2222");
  EXPECT_EQ(c.task_address("ps", 0), "[::1]:2223");
  EXPECT_THAT([&] { c.task_address("worker", 2); },
              ::testing::ThrowsMessage<InvalidArgument>(HasSubstr("task 2 of job \"worker\"")));
}

TEST(TFConfig, TheChiefIsTheChiefTaskElseWorkerZero) {
  auto chief = TFConfigClusterResolver::from_json(
      R"({"cluster": {"chief": ["a:1"], "worker": ["b:1"]}, "task": {"type": "chief"}})");
  EXPECT_TRUE(chief.is_chief());
  auto worker0 = TFConfigClusterResolver::from_json(
      R"({"cluster": {"chief": ["a:1"], "worker": ["b:1"]}, "task": {"type": "worker"}})");
  EXPECT_FALSE(worker0.is_chief());
  auto no_chief = TFConfigClusterResolver::from_json(
      R"({"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 0}})");
  EXPECT_TRUE(no_chief.is_chief());
  // The evaluator runs beside the cluster: it need not be in it, and is never the chief.
  auto evaluator = TFConfigClusterResolver::from_json(
      R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "evaluator", "index": 0}})");
  EXPECT_FALSE(evaluator.is_chief());
}

TEST(TFConfig, UnsetOrEmptyIsASingleProcess) {
  const char* saved = std::getenv("TF_CONFIG");
  std::string restore = saved ? saved : "";
  ::unsetenv("TF_CONFIG");
  TFConfigClusterResolver unset;
  EXPECT_TRUE(unset.cluster_spec().empty());
  EXPECT_EQ(unset.task_type(), "");
  EXPECT_TRUE(unset.is_chief());
  EXPECT_EQ(unset.num_workers(), 1);
  ::setenv("TF_CONFIG", "", 1);
  EXPECT_TRUE(TFConfigClusterResolver().cluster_spec().empty());
  ::setenv("TF_CONFIG", R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker"}})", 1);
  EXPECT_EQ(TFConfigClusterResolver().cluster_spec().num_tasks("worker"), 1);
  ::setenv("TF_CONFIG", "{}", 1);
  EXPECT_THAT([] { TFConfigClusterResolver(); },
              ::testing::ThrowsMessage<InvalidArgument>(HasSubstr("TF_CONFIG: no \"cluster\"")));
  if (saved) {
    ::setenv("TF_CONFIG", restore.c_str(), 1);
  } else {
    ::unsetenv("TF_CONFIG");
  }
}

TEST(TFConfig, MalformedConfigsNameTheField) {
  const std::string task = R"("task": {"type": "worker", "index": 0})";
  struct Case {
    std::string config;
    std::string message;
  };
  const Case cases[] = {
      {R"({"cluster": {"worker": ["a:1"]}, )", "TF_CONFIG: invalid JSON at byte"},
      {R"(["a:1"])", "expected a JSON object"},
      {"{" + task + "}", "no \"cluster\" field"},
      {R"({"cluster": ["a:1"], )" + task + "}", "cluster must be an object of jobs"},
      {R"({"cluster": {"worker": "a:1"}, )" + task + "}", "cluster.worker must be a list"},
      {R"({"cluster": {"worker": [1]}, )" + task + "}", "cluster.worker[0] must be a"},
      {R"({"cluster": {"worker": []}, )" + task + "}", "cluster.worker is empty"},
      {R"({"cluster": {"trainer": ["a:1"]}, )" + task + "}", "unknown job \"trainer\""},
      {R"({"cluster": {"chief": ["a:1", "b:1"], "worker": ["c:1"]}, )" + task + "}",
       "cluster.chief has 2 tasks"},
      {R"({"cluster": {"worker": ["a:1", "a:1"]}, )" + task + "}",
       "cluster.worker[1] \"a:1\" is also cluster.worker[0]"},
      {R"({"cluster": {"worker": ["a"]}, )" + task + "}", "cluster.worker[0] \"a\" is not"},
      {R"({"cluster": {"worker": ["a:70000"]}, )" + task + "}", "port 70000 is not in 1-65535"},
      {R"({"cluster": {"worker": ["a:x"]}, )" + task + "}", "port \"x\" is not a number"},
      {R"({"cluster": {"worker": ["a_b:1"]}, )" + task + "}",
       "host \"a_b\" is not a host name or IP address"},
      {R"({"cluster": {"worker": ["300.1.1.1:1"]}, )" + task + "}", "host \"300.1.1.1\""},
      {R"({"cluster": {"worker": ["::1:2222"]}, )" + task + "}", "in brackets"},
      {R"({"cluster": {"worker": ["a:1"]}})", "no \"task\" field"},
      {R"({"cluster": {"worker": ["a:1"]}, "task": {"index": 0}})", "task has no \"type\""},
      {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "master"}})",
       "unknown task.type \"master\""},
      {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "ps"}})",
       "task.type \"ps\" has no job in cluster"},
      {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": "1"}})",
       "task.index must be an integer, got the string \"1\""},
      {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 1.5}})",
       "task.index must be an integer, got 1.5"},
      {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": -1}})",
       "task.index -1 is negative"},
      {R"({"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 2}})",
       "task.index 2 is out of range: cluster.worker has 2 tasks"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(error_of(c.config), HasSubstr(c.message)) << c.config;
  }
}

// A socket bound to 127.0.0.1:port with SO_REUSEADDR (as servers bind) and, if asked,
// SO_REUSEPORT; fd is -1 when the bind failed, and error says why.
struct Bound {
  int fd;
  int error;
};
Bound bind_local(int port, bool reuse_port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int on = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  if (reuse_port) ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    int error = errno;
    ::close(fd);
    return {-1, error};
  }
  return {fd, 0};
}

// The ports `weft launch` gives a local cluster's tasks: all different; while reserved, refused
// to every other bind, but bound by a listener with SO_REUSEPORT (as the chief's coordination
// service binds its own), which then gets the connections; free again once released.
TEST(ReservedLocalPorts, AreDifferentAndHeldForTheirTasksUntilReleased) {
  std::vector<int> ports;
  {
    ReservedLocalPorts reserved(64);
    ports = reserved.ports();
    ASSERT_EQ(ports.size(), 64u);
    EXPECT_EQ(std::set<int>(ports.begin(), ports.end()).size(), 64u);
    EXPECT_EQ(reserved.address(5), "127.0.0.1:" + std::to_string(ports[5]));
    for (int port : ports) {
      Bound other = bind_local(port, /*reuse_port=*/false);
      EXPECT_EQ(other.error, EADDRINUSE) << "port " << port << " was not held";
      if (other.fd >= 0) ::close(other.fd);
    }
    Bound task = bind_local(ports[0], /*reuse_port=*/true);
    ASSERT_GE(task.fd, 0) << std::strerror(task.error);
    ASSERT_EQ(::listen(task.fd, 4), 0) << std::strerror(errno);
    int client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(ports[0]));
    int connected = ::connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    EXPECT_EQ(connected, 0) << std::strerror(errno);
    if (connected == 0) {
      int accepted = ::accept4(task.fd, nullptr, nullptr, SOCK_CLOEXEC);
      EXPECT_GE(accepted, 0) << std::strerror(errno);
      if (accepted >= 0) ::close(accepted);
    }
    ::close(client);
    ::close(task.fd);
  }
  // Released, a port is free again (ports[1] saw no connection, which would leave a TIME_WAIT).
  Bound again = bind_local(ports[1], /*reuse_port=*/false);
  EXPECT_GE(again.fd, 0) << "port " << ports[1] << " still held: " << std::strerror(again.error);
  if (again.fd >= 0) ::close(again.fd);
}

}  // namespace
}  // namespace weft::distribute::cluster_resolver
