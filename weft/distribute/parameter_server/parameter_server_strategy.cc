#include "weft/distribute/parameter_server/parameter_server_strategy.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "weft/autodiff/tape.h"
#include "weft/core/errors.h"
#include "weft/distribute/coordination/client.h"
#include "weft/distribute/coordination/service.h"
#include "weft/distribute/parameter_server/internal/remote_variable.h"
#include "weft/distribute/parameter_server/ps_client.h"
#include "weft/distribute/parameter_server/ps_service.h"
#include "weft/distribute/parameter_server/worker_service.h"

namespace weft::distribute {
namespace {

using std::chrono::milliseconds;
namespace ps = parameter_server;

// The key the chief sets when the job is done, which join() waits for.
constexpr const char* kDoneKey = "weft/parameter_server/done";
constexpr const char* kStartedKey = "weft/parameter_server/started";  // a barrier, then a key
// The key the chief sets when its fit stops early (a preemption's backup), which leave() checks.
constexpr const char* kStoppingKey = "weft/parameter_server/stopping";

class ParameterServerImpl : public StrategyImpl {
 public:
  ParameterServerImpl(const cluster_resolver::ClusterResolver& resolver,
                      ParameterServerOptions options)
      : options_(std::move(options)) {
    const ClusterSpec& cluster = resolver.cluster_spec();
    for (const char* job : {"chief", "worker", "ps"}) {
      WEFT_CHECK(cluster.num_tasks(job) > 0, InvalidArgument)
          << "ParameterServerStrategy needs a cluster with a chief, workers and ps tasks; "
             "TF_CONFIG's cluster has no \""
          << job << "\" job (weft launch --ps K -n N sets TF_CONFIG for each task)";
    }
    type_ = resolver.task_type();
    WEFT_CHECK(type_ == "chief" || type_ == "worker" || type_ == "ps", InvalidArgument)
        << "ParameterServerStrategy runs on the chief, worker and ps tasks, not on a task of "
           "type \""
        << type_ << "\"";
    task_ = type_ + ":" + std::to_string(resolver.task_id());
    if (options_.max_staleness) {
      WEFT_CHECK(*options_.max_staleness >= 0, InvalidArgument)
          << "ParameterServerStrategy: max_staleness must be at least 0, got "
          << *options_.max_staleness;
      WEFT_CHECK(!options_.synchronous, InvalidArgument)
          << "ParameterServerStrategy: max_staleness bounds asynchronous training; synchronous "
             "steps always read the last step's values";
    }
    for (const char* job : {"chief", "worker", "ps"}) {
      for (int i = 0; i < cluster.num_tasks(job); ++i) {
        std::string name = std::string(job) + ":" + std::to_string(i);
        tasks_.push_back(name);
        addresses_[name] = cluster.task_address(job, i);
        if (std::strcmp(job, "worker") == 0) workers_.emplace_back(name, addresses_[name]);
        if (std::strcmp(job, "ps") == 0) ps_tasks_.push_back(name);
      }
    }
    WEFT_CHECK(options_.backup_workers == 0 ||
                   (options_.synchronous && options_.backup_workers > 0 &&
                    options_.backup_workers < static_cast<int>(workers_.size())),
               InvalidArgument)
        << "ParameterServerStrategy: backup_workers = " << options_.backup_workers
        << (options_.synchronous ? "" : " is for synchronous training (synchronous = true)")
        << "; it must be at least 0 and fewer than the " << workers_.size()
        << " workers, which leaves the rest each step's parts";
    coordination::CoordinationOptions co = options_.coordination;
    if (co.token.empty()) {
      const char* env = std::getenv(coordination::kTokenEnvironmentVariable);
      co.token = env != nullptr ? env : "";
    }
    WEFT_CHECK(!co.token.empty(), InvalidArgument)
        << "ParameterServerStrategy: " << coordination::kTokenEnvironmentVariable
        << " is not set; every task of the cluster needs the same token (weft launch sets it)";
    co.recoverable_jobs = {"worker", "ps"};
    service_options_.token = co.token;
    service_options_.tls = co.tls;
    const std::string& own = addresses_.at(task_);
    // Each task serves on its own address: the chief the coordination service, a ps task its
    // variables, a worker its closures; then every task meets the others.
    if (type_ == "chief") {
      service_ = std::make_unique<coordination::CoordinationService>(own, tasks_, co);
    } else if (type_ == "ps") {
      ps_server_ = std::make_unique<ps::ParameterServer>(own, task_, service_options_);
    } else {
      worker_ = std::make_unique<ps::WorkerService>(own, task_, service_options_);
    }
    client_ = std::make_unique<coordination::CoordinationClient>(task_, "chief:0",
                                                                 addresses_.at("chief:0"), co);
    client_->connect(options_.startup_timeout);
    // A worker or ps task started again (weft launch --max-restarts) joins a cluster that met
    // already, which the chief records: it does not wait for the others again.
    if (type_ == "chief" || !client_->try_get_key_value(kStartedKey)) {
      client_->wait_at_barrier(kStartedKey, options_.startup_timeout);
      if (type_ == "chief") client_->insert_key_value(kStartedKey, "1");
    }
    chief_incarnation_ = client_->task_states().of("chief:0").incarnation;
    if (type_ != "ps") {
      for (const auto& t : ps_tasks_) {
        ps_clients_.push_back(
            std::make_shared<ps::ParameterServerClient>(t, addresses_.at(t), service_options_));
      }
    }
    std::random_device device;
    write_ids_ = std::make_shared<ps::internal::UniqueIds>(ps::internal::UniqueIds::kWrites,
                                                           uint64_t{device()});
  }

  ~ParameterServerImpl() override {
    if (type_ == "chief") {
      try {
        if (std::uncaught_exceptions() > 0) {
          client_->report_error("the chief stopped with an error");
        } else {
          // The others leave once they see the key; the service waits for them, this task
          // included, before it stops.
          client_->insert_key_value(kDoneKey, "1");
          client_.reset();
          service_->wait_for_tasks_to_leave(milliseconds(10000));
        }
      } catch (const std::exception&) {
        // The cluster failed: the others hear it from the service as it stops.
      }
    }
    client_.reset();
    service_.reset();
  }

  int num_replicas_in_sync() const override { return 1; }
  std::string name() const override { return "parameter_server"; }
  void run_replicas(const std::function<void(int)>& fn) override { fn(0); }

  std::optional<VariableCreator> variable_creator() const override {
    if (type_ == "ps") return std::nullopt;  // a ps task's own copies are never read
    return
        [this](const VariableArgs& args, const std::function<Variable(const VariableArgs&)>& next) {
          Variable v = next(args);
          // An optimizer's slot is not a variable of its own: it lives beside its variable, and
          // the optimizer binds it there.
          if (args.slot_of != nullptr) return v;
          std::lock_guard lock(creating_);
          autodiff::NoRecordScope no_record;
          auto binding = std::make_shared<ps::internal::RemoteVariable>(place(args), write_ids_);
          if (type_ == "chief") {
            binding->create();
            binding->write(v.value());
            made_.push_back(binding);
          } else {
            // Its first read (building a model reads its variables) waits for the chief's value.
            binding->wait_until_readable(options_.startup_timeout, [this] { return chief_gone(); });
          }
          v.bind(binding);
          return v;
        };
  }

  void report_error(const std::string& message) const override { client_->report_error(message); }
  std::string failed_peer() const override {
    std::string failed = client_->failed_task();
    return failed == task_ ? "" : failed;
  }

  // Whether the chief has finished (its done key is set) or cannot be reached.
  bool chief_gone() const {
    try {
      return client_->try_get_key_value(kDoneKey).has_value();
    } catch (const Unavailable&) {
      return true;
    }
  }

  void join() const {
    WEFT_CHECK(type_ != "chief", FailedPrecondition)
        << "ParameterServerStrategy::join is for worker and ps tasks; the chief coordinates";
    // Until the chief is done, or this worker has left (leave()).
    for (;;) {
      try {
        client_->get_key_value(kDoneKey, milliseconds(500));
        return;
      } catch (const DeadlineExceeded&) {
        if (left_) return;
      } catch (const Unavailable&) {
        if (left_) return;
        // The chief failed or is gone. Its own report may come on the watch a moment after the
        // call failed: wait for what this task learns (bounded), so that the error names why.
        auto learned = std::make_shared<std::promise<std::string>>();
        client_->on_failure([learned](const std::string& f) { learned->set_value(f); });
        auto f = learned->get_future();
        if (f.wait_for(std::chrono::seconds(2)) == std::future_status::ready) {
          throw Unavailable(f.get());
        }
        throw;
      } catch (const Error&) {
        if (left_) return;
        throw;
      }
    }
  }

  bool leave(const std::string& why, milliseconds wait) const {
    WEFT_CHECK(type_ == "worker", FailedPrecondition)
        << "ParameterServerStrategy::leave is for workers; this is " << task_;
    try {
      client_->get_key_value(kStoppingKey, wait);
      return false;  // the chief is stopping: it needs its workers until it has backed up
    } catch (const Error&) {
      // Not within `wait` (or the chief is gone, and with it the job).
    }
    worker_->stop_taking_closures();
    left_ = true;
    client_->report_error(task_ + " left: " + why);
    return true;
  }

  void announce_stopping() const {
    check_chief("announce_stopping");
    client_->insert_key_value(kStoppingKey, "1");
  }

  void remove(const std::string& key) const { client_->delete_key_value(key); }

  uint64_t run_id() const { return chief_incarnation_; }
  int64_t next_call() const { return calls_.fetch_add(1); }

  // A value in pieces, the count under `key` itself, written last, so that a
  // reader waiting for it finds every piece there.
  void put(const std::string& key, const std::string& value) const {
    const std::size_t piece = coordination::kMaxValueBytes;
    std::size_t n = 0;
    for (std::size_t at = 0; at < value.size(); at += piece, ++n) {
      client_->insert_key_value(key + "/" + std::to_string(n), value.substr(at, piece));
    }
    client_->insert_key_value(key, std::to_string(n));
  }
  std::string get(const std::string& key, milliseconds timeout) const {
    const std::string count = client_->get_key_value(key, timeout);
    std::string value;
    for (std::size_t i = 0, n = std::stoull(count); i < n; ++i) {
      value += client_->get_key_value(key + "/" + std::to_string(i), timeout);
    }
    return value;
  }

  std::string task() const override { return task_; }
  coordination::CoordinationClient* coordination_client() const override { return client_.get(); }
  bool is_chief() const { return type_ == "chief"; }
  int num_workers() const { return static_cast<int>(workers_.size()); }
  int num_ps() const { return static_cast<int>(ps_tasks_.size()); }
  const std::vector<std::pair<std::string, std::string>>& workers() const { return workers_; }
  std::vector<std::pair<std::string, std::string>> ps_tasks() const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& t : ps_tasks_) out.emplace_back(t, addresses_.at(t));
    return out;
  }
  const ps::ServiceOptions& service_options() const { return service_options_; }

  coordination::TaskStates wait_for_task_states(uint64_t after_generation,
                                                milliseconds timeout) const {
    return client_->wait_for_task_states(after_generation, timeout);
  }

  std::vector<std::string> lost_ps_tasks() const {
    check_chief("lost_ps_tasks");
    std::vector<std::string> lost;
    for (const auto& ps : ps_clients_) {
      try {
        if (!holds_its_variables(*ps)) lost.push_back(ps->task());
      } catch (const Error&) {
        lost.push_back(ps->task());  // it cannot be reached
      }
    }
    return lost;
  }

  void recreate_lost_variables(const std::vector<std::string>& tasks) const {
    check_chief("recreate_lost_variables");
    const auto deadline = std::chrono::steady_clock::now() + options_.startup_timeout;
    for (const auto& ps : ps_clients_) {
      if (std::find(tasks.begin(), tasks.end(), ps->task()) == tasks.end()) continue;
      std::string why;
      for (;;) {
        try {
          std::lock_guard lock(creating_);
          for (const auto& v : made_) {
            if (!v->held_on(*ps)) v->create_on(*ps);
          }
          break;
        } catch (const Unavailable& e) {
          why = e.message();
        } catch (const DeadlineExceeded& e) {
          why = e.message();
        }
        WEFT_CHECK(std::chrono::steady_clock::now() < deadline, DeadlineExceeded)
            << "parameter server " << ps->task() << " at " << ps->address()
            << " did not come back within " << options_.startup_timeout.count()
            << " ms (the startup timeout): " << why;
        std::this_thread::sleep_for(milliseconds(100));
      }
    }
  }

  bool synchronous() const { return options_.synchronous; }
  int backup_workers() const { return options_.backup_workers; }
  int64_t max_staleness() const {
    if (options_.synchronous) return 0;
    return options_.max_staleness.value_or(2 * static_cast<int64_t>(workers_.size()) - 1);
  }

 private:
  void check_chief(const char* what) const {
    WEFT_CHECK(type_ == "chief", FailedPrecondition)
        << "ParameterServerStrategy::" << what << " is the chief's; this is " << task_;
  }
  // Whether `ps` holds every variable the chief made on it; Unavailable when it cannot be
  // reached.
  bool holds_its_variables(ps::ParameterServerClient& ps) const {
    std::lock_guard lock(creating_);
    for (const auto& v : made_) {
      if (!v->held_on(ps)) return false;
    }
    return true;
  }

  // Where a new variable goes: its shards (one without a partitioner, or for a scalar), each on
  // the next ps task round-robin, numbered in creation order (the same on every task).
  std::vector<ps::internal::RemoteVariable::Shard> place(const VariableArgs& args) const {
    const Tensor& init = args.initial_value;
    int64_t shards = 1;
    if (options_.variable_partitioner && init.rank() > 0) {
      std::vector<int64_t> parts = options_.variable_partitioner(init.shape(), init.dtype());
      WEFT_CHECK(parts.size() == static_cast<size_t>(init.rank()), InvalidArgument)
          << "variable_partitioner for \"" << args.name << "\" returned " << parts.size()
          << " partition counts for a rank-" << init.rank() << " variable";
      for (size_t a = 1; a < parts.size(); ++a) {
        WEFT_CHECK(parts[a] == 1, InvalidArgument)
            << "variable_partitioner for \"" << args.name
            << "\": ParameterServerStrategy partitions only along axis 0, not axis " << a;
      }
      shards = parts[0];
    }
    std::vector<ps::internal::RemoteVariable::Shard> out;
    std::vector<int64_t> rows =
        shards > 1 ? shard_rows(init.shape()[0], shards) : std::vector<int64_t>{};
    const int64_t row_bytes = init.rank() > 0 && init.shape()[0] > 0
                                  ? init.numel() / init.shape()[0] * dtype_size(init.dtype())
                                  : 0;
    size_t offset = 0;
    for (int64_t s = 0; s < shards; ++s) {
      ps::VariableSpec spec;
      spec.id = next_id_++;
      spec.name = shards > 1 ? args.name + "/part_" + std::to_string(s) : args.name;
      spec.dtype = init.dtype();
      spec.shape = init.shape();
      if (shards > 1) spec.shape[0] = rows[static_cast<size_t>(s)];
      spec.trainable = args.trainable;
      const size_t ps_index = next_ps_++ % ps_clients_.size();
      out.push_back({ps_clients_[ps_index], spec, offset});
      offset +=
          shards > 1 ? static_cast<size_t>(rows[static_cast<size_t>(s)] * row_bytes) : spec.bytes();
    }
    return out;
  }

  ParameterServerOptions options_;
  std::string type_;
  std::string task_;
  std::vector<std::string> tasks_;
  std::map<std::string, std::string> addresses_;
  std::vector<std::pair<std::string, std::string>> workers_;
  std::vector<std::string> ps_tasks_;
  ps::ServiceOptions service_options_;
  std::unique_ptr<coordination::CoordinationService> service_;
  std::unique_ptr<ps::ParameterServer> ps_server_;
  std::unique_ptr<ps::WorkerService> worker_;
  std::unique_ptr<coordination::CoordinationClient> client_;
  std::vector<std::shared_ptr<ps::ParameterServerClient>> ps_clients_;
  std::shared_ptr<ps::internal::UniqueIds> write_ids_;
  mutable std::mutex creating_;
  // The chief's: the variables it made on the ps tasks, in creation order (under creating_).
  mutable std::vector<std::shared_ptr<ps::internal::RemoteVariable>> made_;
  mutable uint64_t next_id_ = 0;
  mutable size_t next_ps_ = 0;
  mutable std::atomic<bool> left_{false};  // a worker's: leave() took it out of the cluster
  uint64_t chief_incarnation_ = 0;
  mutable std::atomic<int64_t> calls_{0};  // next_call()
};

ParameterServerImpl& ps_impl_of(const Strategy& s) {
  return static_cast<ParameterServerImpl&>(s.extended());
}

}  // namespace

ParameterServerStrategy::ParameterServerStrategy(const cluster_resolver::ClusterResolver& resolver,
                                                 ParameterServerOptions options)
    : Strategy(std::make_shared<ParameterServerImpl>(resolver, std::move(options))) {}
ParameterServerStrategy::ParameterServerStrategy(const Strategy& strategy) : Strategy(strategy) {
  WEFT_CHECK(is(strategy), InvalidArgument)
      << "a ParameterServerStrategy was expected, got the " << strategy.name() << " strategy";
}
bool ParameterServerStrategy::is(const Strategy& strategy) {
  return dynamic_cast<const ParameterServerImpl*>(&strategy.extended()) != nullptr;
}
std::string ParameterServerStrategy::task() const { return ps_impl_of(*this).task(); }
bool ParameterServerStrategy::is_chief() const { return ps_impl_of(*this).is_chief(); }
int ParameterServerStrategy::num_workers() const { return ps_impl_of(*this).num_workers(); }
int ParameterServerStrategy::num_ps() const { return ps_impl_of(*this).num_ps(); }
std::vector<std::pair<std::string, std::string>> ParameterServerStrategy::workers() const {
  return ps_impl_of(*this).workers();
}
std::vector<std::pair<std::string, std::string>> ParameterServerStrategy::ps_tasks() const {
  return ps_impl_of(*this).ps_tasks();
}
bool ParameterServerStrategy::synchronous() const { return ps_impl_of(*this).synchronous(); }
int64_t ParameterServerStrategy::max_staleness() const { return ps_impl_of(*this).max_staleness(); }
int ParameterServerStrategy::backup_workers() const { return ps_impl_of(*this).backup_workers(); }
void ParameterServerStrategy::join() const { ps_impl_of(*this).join(); }
bool ParameterServerStrategy::leave(const std::string& why, std::chrono::milliseconds wait) const {
  return ps_impl_of(*this).leave(why, wait);
}
void ParameterServerStrategy::announce_stopping() const { ps_impl_of(*this).announce_stopping(); }
void ParameterServerStrategy::remove(const std::string& key) const {
  ps_impl_of(*this).remove(key);
}
uint64_t ParameterServerStrategy::run_id() const { return ps_impl_of(*this).run_id(); }
int64_t ParameterServerStrategy::next_call() const { return ps_impl_of(*this).next_call(); }
void ParameterServerStrategy::put(const std::string& key, const std::string& value) const {
  ps_impl_of(*this).put(key, value);
}
std::string ParameterServerStrategy::get(const std::string& key,
                                         std::chrono::milliseconds timeout) const {
  return ps_impl_of(*this).get(key, timeout);
}
coordination::TaskStates ParameterServerStrategy::wait_for_task_states(
    uint64_t after_generation, std::chrono::milliseconds timeout) const {
  return ps_impl_of(*this).wait_for_task_states(after_generation, timeout);
}
std::vector<std::string> ParameterServerStrategy::lost_ps_tasks() const {
  return ps_impl_of(*this).lost_ps_tasks();
}
void ParameterServerStrategy::recreate_lost_variables(const std::vector<std::string>& tasks) const {
  ps_impl_of(*this).recreate_lost_variables(tasks);
}
const parameter_server::ServiceOptions& ParameterServerStrategy::service_options() const {
  return ps_impl_of(*this).service_options();
}

}  // namespace weft::distribute
