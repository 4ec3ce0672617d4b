#include "weft/distribute/coordination/client.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

#include "weft/core/errors.h"
#include "weft/core/trace_me.h"
#include "weft/distribute/coordination/coordination.grpc.pb.h"
#include "weft/distribute/coordination/internal/failures.h"
#include "weft/distribute/coordination/internal/task_states.h"
#include "weft/distribute/internal/grpc_glue.h"

namespace weft::distribute::coordination {
namespace {

namespace pb = ::weft::coordination;
using SystemClock = std::chrono::system_clock;  // gRPC deadlines are system_clock
using std::chrono::milliseconds;

// How much longer than the wait it asks for a call may take before the client gives up on the
// service (the service answers a wait that passes its deadline itself).
constexpr milliseconds kCallMargin{5000};

uint64_t draw_incarnation() {
  std::random_device device;
  return (uint64_t{device()} << 32) ^ device() ^ static_cast<uint64_t>(::getpid());
}

}  // namespace

class CoordinationClient::Impl {
 public:
  Impl(std::string task, std::string service_task, std::string service_address,
       CoordinationOptions options)
      : task_(std::move(task)),
        service_task_(std::move(service_task)),
        service_address_(std::move(service_address)),
        options_(std::move(options)),
        incarnation_(draw_incarnation()) {
    distribute::internal::quiet_grpc_logs();
    WEFT_CHECK(!options_.token.empty(), InvalidArgument)
        << "coordination client for task " << task_ << ": the cluster token is empty (set "
        << kTokenEnvironmentVariable << "; weft launch makes one)";
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(static_cast<int>(kMaxMessageBytes));
    args.SetMaxSendMessageSize(static_cast<int>(kMaxMessageBytes));
    // Reconnect quickly while the chief is still starting.
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
    channel_ = grpc::CreateCustomChannel(
        service_address_, distribute::internal::channel_credentials(options_.tls), args);
    stub_ = pb::Coordination::NewStub(channel_);
    caller_.set_task(task_);
    caller_.set_incarnation(incarnation_);
  }

  ~Impl() { leave(); }

  void connect(milliseconds timeout) {
    auto deadline = SystemClock::now() + timeout;
    pb::RegisterRequest request;
    *request.mutable_caller() = caller_;
    grpc::Status status;
    for (;;) {
      auto ctx = context(deadline);
      ctx->set_wait_for_ready(true);  // the service may not be up yet
      pb::Empty reply;
      status = stub_->Register(ctx.get(), request, &reply);
      if (status.ok() || status.error_code() != grpc::StatusCode::UNAVAILABLE ||
          SystemClock::now() >= deadline) {
        break;
      }
      std::this_thread::sleep_for(milliseconds(100));
    }
    if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
        (status.error_code() == grpc::StatusCode::UNAVAILABLE && SystemClock::now() >= deadline)) {
      throw DeadlineExceeded("task " + task_ + " could not reach the coordination service of " +
                             service_task_ + " at " + service_address_ + " within " +
                             std::to_string(timeout.count()) + " ms: " + status.error_message());
    }
    check(status, "connect");
    {
      std::lock_guard lock(mu_);
      connected_ = true;
    }
    heartbeat_ = std::thread([this] { heartbeats(); });
    watch_ = std::thread([this] { watch(); });
  }

  void insert_key_value(const std::string& key, const std::string& value) {
    pb::SetRequest request;
    *request.mutable_caller() = caller_;
    request.set_key(key);
    request.set_value(value);
    pb::Empty reply;
    auto ctx = context(SystemClock::now() + kCallMargin);
    check(stub_->Set(ctx.get(), request, &reply), "insert_key_value(\"" + key + "\")");
  }

  void delete_key_value(const std::string& key) {
    pb::DeleteRequest request;
    *request.mutable_caller() = caller_;
    request.set_key(key);
    pb::Empty reply;
    auto ctx = context(SystemClock::now() + kCallMargin);
    check(stub_->Delete(ctx.get(), request, &reply), "delete_key_value(\"" + key + "\")");
  }

  std::optional<std::string> get(const std::string& key, milliseconds timeout) {
    pb::GetRequest request;
    *request.mutable_caller() = caller_;
    request.set_key(key);
    request.set_timeout_ms(static_cast<uint64_t>(std::max<int64_t>(timeout.count(), 0)));
    pb::GetResponse reply;
    auto ctx = context(SystemClock::now() + timeout + kCallMargin);
    grpc::Status status = stub_->Get(ctx.get(), request, &reply);
    if (status.error_code() == grpc::StatusCode::NOT_FOUND) return std::nullopt;
    check(status, "get_key_value(\"" + key + "\")");
    return reply.value();
  }

  void wait_at_barrier(const std::string& id, milliseconds timeout,
                       const std::vector<std::string>& tasks) {
    pb::BarrierRequest request;
    *request.mutable_caller() = caller_;
    request.set_id(id);
    for (const auto& t : tasks) request.add_tasks(t);
    request.set_timeout_ms(static_cast<uint64_t>(std::max<int64_t>(timeout.count(), 1)));
    pb::Empty reply;
    auto ctx = context(SystemClock::now() + timeout + kCallMargin);
    check(stub_->Barrier(ctx.get(), request, &reply), "wait_at_barrier(\"" + id + "\")");
  }

  TaskStates task_states(uint64_t after_generation, milliseconds timeout) {
    pb::GetTaskStatesRequest request;
    *request.mutable_caller() = caller_;
    request.set_after_generation(after_generation);
    request.set_timeout_ms(static_cast<uint64_t>(std::max<int64_t>(timeout.count(), 0)));
    pb::GetTaskStatesResponse reply;
    auto ctx = context(SystemClock::now() + timeout + kCallMargin);
    check(stub_->GetTaskStates(ctx.get(), request, &reply), "task_states");
    return internal::task_states_of(reply);
  }

  void report_error(const std::string& message) {
    {
      std::lock_guard lock(mu_);
      if (reported_) return;  // the first error is the one the cluster hears
      reported_ = true;
    }
    pb::ReportErrorRequest request;
    *request.mutable_caller() = caller_;
    request.set_message(message);
    pb::Empty reply;
    auto ctx = context(SystemClock::now() + milliseconds(2000));
    // Best effort: the task is failing anyway, and the service notices its exit regardless.
    stub_->ReportError(ctx.get(), request, &reply);
  }

  std::string failure() const {
    std::lock_guard lock(mu_);
    return failure_;
  }

  void on_failure(std::function<void(const std::string&)> fn) {
    std::unique_lock lock(mu_);
    if (!failure_.empty()) {
      std::string f = failure_;
      lock.unlock();
      fn(f);
      return;
    }
    on_failure_.push_back(std::move(fn));
  }

  void shutdown(milliseconds timeout) {
    wait_at_barrier("weft/shutdown", timeout, {});
    leave();
  }

  const std::string& task() const { return task_; }
  const CoordinationOptions& options() const { return options_; }

 private:
  std::unique_ptr<grpc::ClientContext> context(SystemClock::time_point deadline) const {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->AddMetadata(distribute::internal::kTokenMetadataKey, options_.token);
    ctx->set_deadline(deadline);
    return ctx;
  }

  void check(const grpc::Status& status, const std::string& what) {
    if (status.ok()) return;
    if (status.error_code() == grpc::StatusCode::ABORTED) learned(status.error_message());
    distribute::internal::throw_status(status, "task " + task_ + ": " + what,
                                       "the coordination service at " + service_address_);
  }

  // The cluster failed: remember the first failure and tell whoever asked, once.
  void learned(const std::string& failure) {
    std::vector<std::function<void(const std::string&)>> callbacks;
    {
      std::lock_guard lock(mu_);
      if (!failure_.empty()) return;
      failure_ = failure;
      callbacks.swap(on_failure_);
    }
    cv_.notify_all();
    for (auto& fn : callbacks) fn(failure);
  }

  std::string service_lost(const grpc::Status& status) const {
    return internal::failure_of(service_task_, "its coordination service at " + service_address_ +
                                                   " is unreachable (" + status.error_message() +
                                                   ")");
  }

  void heartbeats() {
    pb::HeartbeatRequest request;
    *request.mutable_caller() = caller_;
    auto last_answer = SystemClock::now();
    std::unique_lock lock(mu_);
    while (!leaving_ && failure_.empty()) {
      lock.unlock();
      pb::Empty reply;
      auto ctx = context(SystemClock::now() + options_.heartbeat_interval + milliseconds(1000));
      grpc::Status status = stub_->Heartbeat(ctx.get(), request, &reply);
      if (status.ok()) {
        last_answer = SystemClock::now();
      } else if (status.error_code() == grpc::StatusCode::ABORTED) {
        learned(status.error_message());
      } else if (SystemClock::now() - last_answer > options_.heartbeat_timeout) {
        learned(service_lost(status));
      }
      lock.lock();
      cv_.wait_for(lock, options_.heartbeat_interval,
                   [&] { return leaving_ || !failure_.empty(); });
    }
  }

  // One call held open while the task lives: the service answers it with the cluster's failure,
  // or with nothing when this task leaves; a broken call means the service is gone.
  void watch() {
    pb::WatchRequest request;
    *request.mutable_caller() = caller_;
    pb::WatchResponse reply;
    grpc::ClientContext ctx;
    ctx.AddMetadata(distribute::internal::kTokenMetadataKey, options_.token);
    {
      std::lock_guard lock(mu_);
      if (leaving_) return;
      watch_context_ = &ctx;
    }
    grpc::Status status = stub_->Watch(&ctx, request, &reply);
    bool leaving;
    {
      std::lock_guard lock(mu_);
      watch_context_ = nullptr;
      leaving = leaving_;
    }
    if (status.ok() && !reply.failure().empty()) {
      learned(reply.failure());
    } else if (!status.ok() && !leaving) {
      if (status.error_code() == grpc::StatusCode::ABORTED) {
        learned(status.error_message());
      } else {
        learned(service_lost(status));
      }
    }
  }

  void leave() {
    bool was_connected;
    {
      std::lock_guard lock(mu_);
      if (leaving_) return;
      leaving_ = true;
      was_connected = connected_;
    }
    cv_.notify_all();
    if (was_connected) {
      pb::LeaveRequest request;
      *request.mutable_caller() = caller_;
      pb::Empty reply;
      auto ctx = context(SystemClock::now() + milliseconds(2000));
      stub_->Leave(ctx.get(), request, &reply);  // best effort: the service may be gone
      std::lock_guard lock(mu_);
      if (watch_context_ != nullptr) watch_context_->TryCancel();
    }
    if (heartbeat_.joinable()) heartbeat_.join();
    if (watch_.joinable()) watch_.join();
  }

  const std::string task_;
  const std::string service_task_;
  const std::string service_address_;
  const CoordinationOptions options_;
  const uint64_t incarnation_;
  pb::Caller caller_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::Coordination::Stub> stub_;
  std::thread heartbeat_;
  std::thread watch_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool connected_ = false;
  bool leaving_ = false;
  bool reported_ = false;
  grpc::ClientContext* watch_context_ = nullptr;
  std::string failure_;
  std::vector<std::function<void(const std::string&)>> on_failure_;
};

CoordinationClient::CoordinationClient(std::string task, std::string service_task,
                                       std::string service_address, CoordinationOptions options)
    : impl_(std::make_unique<Impl>(std::move(task), std::move(service_task),
                                   std::move(service_address), std::move(options))) {}
CoordinationClient::~CoordinationClient() = default;
void CoordinationClient::connect(milliseconds timeout) { impl_->connect(timeout); }
void CoordinationClient::insert_key_value(const std::string& key, const std::string& value) {
  impl_->insert_key_value(key, value);
}
void CoordinationClient::delete_key_value(const std::string& key) { impl_->delete_key_value(key); }
std::string CoordinationClient::get_key_value(const std::string& key, milliseconds timeout) {
  TraceMe trace("get_key_value", 1, TraceCategory::kCoordination);
  trace.stat("key", key);
  return *impl_->get(key, std::max(timeout, milliseconds(1)));
}
std::optional<std::string> CoordinationClient::try_get_key_value(const std::string& key) {
  return impl_->get(key, milliseconds(0));
}
void CoordinationClient::wait_at_barrier(const std::string& id, milliseconds timeout,
                                         const std::vector<std::string>& tasks) {
  TraceMe trace("wait_at_barrier", 1, TraceCategory::kCoordination);
  trace.stat("id", id);
  impl_->wait_at_barrier(id, timeout, tasks);
}
TaskStates CoordinationClient::task_states() { return impl_->task_states(0, milliseconds(0)); }
TaskStates CoordinationClient::wait_for_task_states(uint64_t after_generation,
                                                    milliseconds timeout) {
  return impl_->task_states(after_generation, std::max(timeout, milliseconds(1)));
}
void CoordinationClient::report_error(const std::string& message) { impl_->report_error(message); }
std::string CoordinationClient::failure() const { return impl_->failure(); }
std::string CoordinationClient::failed_task() const {
  return internal::task_of_failure(impl_->failure());
}
void CoordinationClient::on_failure(std::function<void(const std::string&)> fn) {
  impl_->on_failure(std::move(fn));
}
void CoordinationClient::shutdown(milliseconds timeout) { impl_->shutdown(timeout); }
const std::string& CoordinationClient::task() const { return impl_->task(); }
const CoordinationOptions& CoordinationClient::options() const { return impl_->options(); }

}  // namespace weft::distribute::coordination
