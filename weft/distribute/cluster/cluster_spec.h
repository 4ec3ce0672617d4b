// tf.train.ClusterSpec: the jobs of a cluster ("chief", "worker", "ps", "evaluator") and each
// job's task addresses ("host:port"), in task-index order. Made from TF_CONFIG by
// TFConfigClusterResolver (tf_config.h), or directly:
//
//   weft::distribute::ClusterSpec cluster({{"worker", {"10.0.0.1:2222", "10.0.0.2:2222"}}});
//   cluster.num_tasks("worker");        // 2
//   cluster.task_address("worker", 1);  // "10.0.0.2:2222"
#pragma once

#include <map>
#include <string>
#include <vector>

namespace weft::distribute {

// The task types TF_CONFIG may name, in the order messages list them.
inline constexpr const char* kTaskTypes[] = {"chief", "worker", "ps", "evaluator"};

// A task's address, split: `host` is a DNS name, dotted IPv4 or bracketed IPv6 ("[::1]").
struct HostPort {
  std::string host;
  int port = 0;
};
// Parses "host:port", or explains in one phrase why it is not one (the result's host is then
// empty and *why says what is wrong: "port 70000 is not in 1-65535").
HostPort parse_host_port(const std::string& address, std::string* why);
// The host of a task's "host:port" as a socket binds it: an IPv6 address without its brackets.
std::string listen_host(const std::string& address);

class ClusterSpec {
 public:
  ClusterSpec() = default;  // no jobs: a single process
  // InvalidArgument, naming the job and index, for an unknown job name, an empty job, more than
  // one chief, an address that is not host:port, or an address used twice.
  explicit ClusterSpec(std::map<std::string, std::vector<std::string>> jobs);

  bool empty() const { return jobs_.empty(); }
  std::vector<std::string> jobs() const;
  // 0 for a job the cluster does not have.
  int num_tasks(const std::string& job) const;
  // InvalidArgument when the job or index does not exist.
  const std::string& task_address(const std::string& job, int index) const;
  const std::vector<std::string>& job_tasks(const std::string& job) const;
  const std::map<std::string, std::vector<std::string>>& as_dict() const { return jobs_; }
  bool operator==(const ClusterSpec&) const = default;

 private:
  std::map<std::string, std::vector<std::string>> jobs_;
};

}  // namespace weft::distribute
