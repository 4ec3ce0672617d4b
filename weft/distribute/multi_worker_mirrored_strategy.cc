#include "weft/distribute/multi_worker_mirrored_strategy.h"

#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>

#include "weft/autodiff/tape.h"
#include "weft/core/config.h"
#include "weft/core/errors.h"
#include "weft/distribute/cluster_connection.h"
#include "weft/distribute/collective/mpi/communicator.h"
#include "weft/distribute/internal/replica_group.h"

namespace weft::distribute {
namespace {

class MultiWorkerImpl : public StrategyImpl {
 public:
  MultiWorkerImpl(const cluster_resolver::ClusterResolver& resolver, MultiWorkerOptions options)
      : options_(std::move(options)) {
    WEFT_CHECK(options_.replicas_per_worker >= 1, InvalidArgument)
        << "MultiWorkerMirroredStrategy: replicas_per_worker must be at least 1, got "
        << options_.replicas_per_worker;
    ClusterConnectionOptions c;
    c.who = "MultiWorkerMirroredStrategy";
    c.coordination = options_.coordination;
    c.timeout_seconds = options_.communication.timeout_seconds;
    c.startup_timeout = options_.startup_timeout;
    c.first_data_port = options_.first_data_port;
    c.last_data_port = options_.last_data_port;
    cluster_ = std::make_unique<ClusterConnection>(resolver, std::move(c));
    collective::Communicator* comm = cluster_->communicator();
    int local = options_.replicas_per_worker;
    std::optional<internal::Workers> workers;
    if (comm) {
      collective::CommunicationOptions o = options_.communication;
      workers = internal::Workers{comm, rank() * local, num_workers() * local, o,
                                  options_.overlap_all_reduce};
    }
    group_ = std::make_unique<internal::ReplicaGroup>(local, config::num_threads(), workers);
  }

  ~MultiWorkerImpl() override {
    group_.reset();
    cluster_.reset();  // leaves the cluster (a report if an error unwinds)
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
    if (!cluster_->communicator()) return std::nullopt;
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

  void report_error(const std::string& message) const override { cluster_->report_error(message); }
  std::string failed_peer() const override { return cluster_->failed_peer(); }

  uint64_t collective_calls() const {
    return cluster_->communicator() ? cluster_->communicator()->calls() : 0;
  }
  std::string transport() const override {
    return cluster_->communicator() ? cluster_->communicator()->transport() : "none";
  }
  int num_workers() const { return cluster_->size(); }
  int rank() const { return cluster_->rank(); }
  std::string task() const override { return cluster_->task(); }
  coordination::CoordinationClient* coordination_client() const override {
    return cluster_->client();
  }

 private:
  MultiWorkerOptions options_;
  std::unique_ptr<ClusterConnection> cluster_;
  std::unique_ptr<internal::ReplicaGroup> group_;
  mutable std::mutex creating_;  // variables made on replica threads, one at a time
};

MultiWorkerImpl& impl_of(const Strategy& s) { return static_cast<MultiWorkerImpl&>(s.extended()); }

}  // namespace

MultiWorkerMirroredStrategy::MultiWorkerMirroredStrategy(MultiWorkerOptions options)
    : MultiWorkerMirroredStrategy(*default_cluster_resolver(), std::move(options)) {}

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
