#include "weft/distribute/multi_worker_mirrored_strategy.h"

#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>

#include "weft/autodiff/tape.h"
#include "weft/core/config.h"
#include "weft/core/errors.h"
#include "weft/distribute/collective/mpi_communicator.h"
#include "weft/distribute/collective/tcp_communicator.h"
#include "weft/distribute/coordination/client.h"
#include "weft/distribute/coordination/service.h"
#include "weft/distribute/internal/replica_group.h"

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

class MultiWorkerImpl : public StrategyImpl {
 public:
  MultiWorkerImpl(const cluster_resolver::ClusterResolver& resolver,
                  MultiWorkerOptions options)
      : options_(std::move(options)) {
    WEFT_CHECK(options_.replicas_per_worker >= 1, InvalidArgument)
        << "MultiWorkerMirroredStrategy: replicas_per_worker must be at least 1, got "
        << options_.replicas_per_worker;
    const ClusterSpec& cluster = resolver.cluster_spec();
    if (!cluster.empty()) {
      tasks_ = training_tasks(cluster);
      task_ = resolver.task_type() + ":" + std::to_string(resolver.task_id());
      auto me = std::find(tasks_.begin(), tasks_.end(), task_);
      WEFT_CHECK(me != tasks_.end(), InvalidArgument)
          << "MultiWorkerMirroredStrategy runs on the chief and worker tasks; the cluster "
             "resolver's task is "
          << task_;
      rank_ = static_cast<int>(me - tasks_.begin());
    } else if (collective::mpi_world_size_from_environment() > 1) {
      // Under mpirun without TF_CONFIG: MPI's ranks are the workers.
      WEFT_CHECK(collective::mpi_available(), FailedPrecondition)
          << "MultiWorkerMirroredStrategy: started by mpirun, but this weft was built without "
             "MPI (configure with -DWEFT_WITH_MPI=ON), and there is no TF_CONFIG";
      comm_ = std::make_unique<collective::MpiCommunicator>();
      rank_ = comm_->rank();
      for (int r = 0; r < comm_->size(); ++r) tasks_.push_back("worker:" + std::to_string(r));
      task_ = tasks_[static_cast<size_t>(rank_)];
    } else {
      tasks_ = {task_};
    }
    if (tasks_.size() > 1 && !comm_) connect(cluster);
    int local = options_.replicas_per_worker;
    std::optional<internal::Workers> workers;
    if (comm_) {
      collective::CommunicationOptions o = options_.communication;
      workers = internal::Workers{comm_.get(), rank_ * local, num_workers() * local, o,
                                  options_.overlap_all_reduce};
    }
    group_ = std::make_unique<internal::ReplicaGroup>(local, config::num_threads(), workers);
  }

  ~MultiWorkerImpl() override {
    group_.reset();
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

  int num_replicas_in_sync() const override { return group_->global_size(); }
  int num_local_replicas() const override { return group_->size(); }
  int first_local_replica() const override { return group_->first_replica(); }
  std::string name() const override { return "multi_worker"; }

  void run_replicas(const std::function<void(int)>& fn) override {
    try {
      group_->run(fn);
    } catch (const std::exception& e) {
      report_error(e.what());
      throw;
    }
  }

  Tensor sum_across_workers(const Tensor& value) const override {
    return group_->sum_across_workers(value);
  }
  Tensor all_gather_across_workers(const Tensor& value) const override {
    return group_->all_gather_across_workers(value);
  }
  Tensor broadcast_across_workers(const Tensor& value) const override {
    return group_->broadcast_across_workers(value);
  }
  void barrier_across_workers() const override { group_->barrier_across_workers(); }

  // Variables start with the chief's values: one broadcast as each is made, wherever it is made.
  // On a replica thread that is a layer built by its first call inside run() (one replica
  // builds, the others wait for its build lock), an optimizer's slots made in a merge step (one
  // replica makes them, the others wait for the optimizer's lock), or a variable every replica
  // makes for itself in run()'s function: each worker makes them in the same order, one at a time
  // (a lock here), and the broadcast waits for the group's communication thread to be idle
  // (ReplicaGroup::broadcast_across_workers), so the workers' broadcasts pair up.
  std::optional<VariableCreator> variable_creator() const override {
    if (!comm_) return std::nullopt;
    internal::ReplicaGroup* group = group_.get();
    std::mutex* one_at_a_time = &creating_;
    return [group, one_at_a_time](const VariableArgs& args,
                                  const std::function<Variable(const VariableArgs&)>& next) {
      VariableArgs chiefs = args;
      {
        std::lock_guard lock(*one_at_a_time);
        autodiff::NoRecordScope no_record;
        chiefs.initial_value = group->broadcast_across_workers(args.initial_value);
      }
      return next(chiefs);
    };
  }

  void report_error(const std::string& message) const override {
    if (client_) client_->report_error(message);
  }
  std::string failed_peer() const override {
    std::string failed = client_ ? client_->failed_task() : "";
    return failed == task_ ? "" : failed;
  }

  uint64_t collective_calls() const { return comm_ ? comm_->calls() : 0; }
  std::string transport() const override { return comm_ ? comm_->transport() : "none"; }
  int num_workers() const { return static_cast<int>(tasks_.size()); }
  int rank() const { return rank_; }
  const std::string& task() const { return task_; }

 private:
  void connect(const ClusterSpec& cluster) {
    coordination::CoordinationOptions co = options_.coordination;
    if (co.token.empty()) {
      const char* env = std::getenv(coordination::kTokenEnvironmentVariable);
      co.token = env != nullptr ? env : "";
    }
    WEFT_CHECK(!co.token.empty(), InvalidArgument)
        << "MultiWorkerMirroredStrategy: " << coordination::kTokenEnvironmentVariable
        << " is not set; every task of the cluster needs the same token (weft launch sets it; "
           "by hand, e.g. export "
        << coordination::kTokenEnvironmentVariable << "=$(openssl rand -hex 16) on every host)";
    const std::string& chief = tasks_[0];
    const std::string own_address = address_of(cluster, task_);
    if (rank_ == 0) {
      service_ = std::make_unique<coordination::CoordinationService>(own_address, tasks_, co);
    }
    client_ = std::make_unique<coordination::CoordinationClient>(
        task_, chief, address_of(cluster, chief), co);
    client_->connect(options_.startup_timeout);
    const std::string host = listen_host(own_address);
    milliseconds timeout =
        options_.communication.timeout_seconds > 0
            ? milliseconds(static_cast<int64_t>(options_.communication.timeout_seconds * 1000))
            : collective::kDefaultTimeout;
    collective::TcpOptions tcp;
    tcp.timeout = timeout;
    tcp.startup_timeout = options_.startup_timeout;
    tcp.first_port = options_.first_data_port;
    tcp.last_port = options_.last_data_port;
    comm_ = std::make_unique<collective::TcpCommunicator>(*client_, tasks_, rank_, host, tcp);
    // No task leaves the constructor before every task has connected: an error a task meets
    // right after it (a bad dataset option, say) then ends that task with its own message, not
    // the others' connecting with "task worker:1 failed".
    client_->wait_at_barrier("weft/strategy/connected", options_.startup_timeout);
  }

  MultiWorkerOptions options_;
  std::vector<std::string> tasks_;
  std::string task_ = "worker:0";
  int rank_ = 0;
  std::unique_ptr<coordination::CoordinationService> service_;
  std::unique_ptr<coordination::CoordinationClient> client_;
  std::unique_ptr<collective::Communicator> comm_;  // TCP (TF_CONFIG) or MPI (mpirun)
  std::unique_ptr<internal::ReplicaGroup> group_;
  mutable std::mutex creating_;  // variables made on replica threads, one at a time
};

MultiWorkerImpl& impl_of(const Strategy& s) { return static_cast<MultiWorkerImpl&>(s.extended()); }

}  // namespace

namespace {
// TF_CONFIG when it is set; else mpirun's ranks (an empty cluster: MultiWorkerImpl asks MPI);
// else the Slurm job step's tasks; else a single process.
std::unique_ptr<cluster_resolver::ClusterResolver> default_resolver() {
  auto tf_config = std::make_unique<cluster_resolver::TFConfigClusterResolver>();
  if (!tf_config->cluster_spec().empty() || collective::mpi_world_size_from_environment() > 1 ||
      !cluster_resolver::SlurmClusterResolver::in_multi_task_step()) {
    return tf_config;
  }
  return std::make_unique<cluster_resolver::SlurmClusterResolver>();
}
}  // namespace

MultiWorkerMirroredStrategy::MultiWorkerMirroredStrategy(MultiWorkerOptions options)
    : MultiWorkerMirroredStrategy(*default_resolver(), std::move(options)) {}

MultiWorkerMirroredStrategy::MultiWorkerMirroredStrategy(
    const cluster_resolver::ClusterResolver& resolver, MultiWorkerOptions options)
    : Strategy(std::make_shared<MultiWorkerImpl>(resolver, std::move(options))) {}

int MultiWorkerMirroredStrategy::num_workers() const { return impl_of(*this).num_workers(); }
int MultiWorkerMirroredStrategy::worker_index() const { return impl_of(*this).rank(); }
bool MultiWorkerMirroredStrategy::is_chief() const { return impl_of(*this).rank() == 0; }
std::string MultiWorkerMirroredStrategy::task() const { return impl_of(*this).task(); }
void MultiWorkerMirroredStrategy::report_error(const std::string& message) const {
  impl_of(*this).report_error(message);
}
uint64_t MultiWorkerMirroredStrategy::collective_calls() const {
  return impl_of(*this).collective_calls();
}
std::string MultiWorkerMirroredStrategy::transport() const { return impl_of(*this).transport(); }

}  // namespace weft::distribute
