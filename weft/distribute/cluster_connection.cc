#include "weft/distribute/cluster_connection.h"

#include <algorithm>
#include <cstdlib>
#include <exception>

#include "weft/core/errors.h"
#include "weft/distribute/cluster/slurm.h"
#include "weft/distribute/cluster/tf_config.h"
#include "weft/distribute/collective/mpi/communicator.h"
#include "weft/distribute/collective/tcp/communicator.h"

namespace weft::distribute {
namespace {

using std::chrono::milliseconds;

// The training tasks in rank order: the chief first, then the workers.
std::vector<std::string> training_tasks(const ClusterSpec& cluster) {
  std::vector<std::string> tasks;
  for (const char* job : {"chief", "worker"}) {
    for (int i = 0; i < cluster.num_tasks(job); ++i) {
      tasks.push_back(std::string(job) + ":" + std::to_string(i));
    }
  }
  return tasks;
}

std::string address_of(const ClusterSpec& cluster, const std::string& task) {
  auto colon = task.find(':');
  return cluster.task_address(task.substr(0, colon), std::stoi(task.substr(colon + 1)));
}

}  // namespace

std::unique_ptr<cluster_resolver::ClusterResolver> default_cluster_resolver() {
  auto tf_config = std::make_unique<cluster_resolver::TFConfigClusterResolver>();
  if (!tf_config->cluster_spec().empty() || collective::mpi_world_size_from_environment() > 1 ||
      !cluster_resolver::SlurmClusterResolver::in_multi_task_step()) {
    return tf_config;
  }
  return std::make_unique<cluster_resolver::SlurmClusterResolver>();
}

ClusterConnection::ClusterConnection(const cluster_resolver::ClusterResolver& resolver,
                                     ClusterConnectionOptions options)
    : options_(std::move(options)) {
  const ClusterSpec& cluster = resolver.cluster_spec();
  if (!cluster.empty()) {
    tasks_ = training_tasks(cluster);
    task_ = resolver.task_type() + ":" + std::to_string(resolver.task_id());
    auto me = std::find(tasks_.begin(), tasks_.end(), task_);
    WEFT_CHECK(me != tasks_.end(), InvalidArgument)
        << options_.who << " runs on the chief and worker tasks; the cluster resolver's task is "
        << task_;
    rank_ = static_cast<int>(me - tasks_.begin());
  } else if (collective::mpi_world_size_from_environment() > 1) {
    // Under mpirun without TF_CONFIG: MPI's ranks are the workers.
    WEFT_CHECK(collective::mpi_available(), FailedPrecondition)
        << options_.who
        << ": started by mpirun, but this weft was built without MPI (configure with "
           "-DWEFT_WITH_MPI=ON), and there is no TF_CONFIG";
    comm_ = std::make_unique<collective::MpiCommunicator>();
    rank_ = comm_->rank();
    for (int r = 0; r < comm_->size(); ++r) tasks_.push_back("worker:" + std::to_string(r));
    task_ = tasks_[static_cast<size_t>(rank_)];
  } else {
    tasks_ = {task_};
  }
  if (tasks_.size() > 1 && !comm_) connect(cluster);
}

ClusterConnection::~ClusterConnection() {
  if (client_) {
    if (std::uncaught_exceptions() > 0) {
      // Leaving while an error unwinds: the others must not wait for this task.
      client_->report_error("it stopped with an error");
    } else {
      try {
        client_->shutdown(milliseconds(30000));
      } catch (const std::exception&) {
        // The cluster failed or a task never came: the error was reported where it happened.
      }
    }
  }
  comm_.reset();
  if (service_) service_->wait_for_tasks_to_leave(milliseconds(10000));
  client_.reset();
  service_.reset();
}

void ClusterConnection::report_error(const std::string& message) const {
  if (client_) client_->report_error(message);
}

std::string ClusterConnection::failed_peer() const {
  std::string failed = client_ ? client_->failed_task() : "";
  return failed == task_ ? "" : failed;
}

void ClusterConnection::connect(const ClusterSpec& cluster) {
  coordination::CoordinationOptions co = options_.coordination;
  if (co.token.empty()) {
    const char* env = std::getenv(coordination::kTokenEnvironmentVariable);
    co.token = env != nullptr ? env : "";
  }
  WEFT_CHECK(!co.token.empty(), InvalidArgument)
      << options_.who << ": " << coordination::kTokenEnvironmentVariable
      << " is not set; every task of the cluster needs the same token (weft launch sets it; "
         "by hand, e.g. export "
      << coordination::kTokenEnvironmentVariable << "=$(openssl rand -hex 16) on every host)";
  const std::string& chief = tasks_[0];
  const std::string own_address = address_of(cluster, task_);
  if (rank_ == 0) {
    service_ = std::make_unique<coordination::CoordinationService>(own_address, tasks_, co);
  }
  client_ = std::make_unique<coordination::CoordinationClient>(task_, chief,
                                                               address_of(cluster, chief), co);
  client_->connect(options_.startup_timeout);
  const std::string host = listen_host(own_address);
  milliseconds timeout = options_.timeout_seconds > 0
                             ? milliseconds(static_cast<int64_t>(options_.timeout_seconds * 1000))
                             : collective::kDefaultTimeout;
  collective::TcpOptions tcp;
  tcp.timeout = timeout;
  tcp.startup_timeout = options_.startup_timeout;
  tcp.first_port = options_.first_data_port;
  tcp.last_port = options_.last_data_port;
  comm_ = std::make_unique<collective::TcpCommunicator>(*client_, tasks_, rank_, host, tcp);
  // No task leaves the constructor before every task has connected: an error a task meets right
  // after it (a bad dataset option, say) then ends that task with its own message, not the
  // others' connecting with "task worker:1 failed".
  client_->wait_at_barrier("weft/strategy/connected", options_.startup_timeout);
}

}  // namespace weft::distribute
