#include "weft/distribute/coordination/service.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "weft/core/errors.h"
#include "weft/distribute/coordination/coordination.grpc.pb.h"
#include "weft/distribute/coordination/internal/failures.h"
#include "weft/distribute/coordination/internal/task_states.h"
#include "weft/distribute/internal/grpc_glue.h"

namespace weft::distribute::coordination {
namespace {

namespace pb = ::weft::coordination;
using Clock = std::chrono::steady_clock;
using grpc::Status;
using grpc::StatusCode;

// Every method raw: the handler gets the request's bytes and checks the token before parsing.
using RawService = pb::Coordination::WithRawCallbackMethod_Register<
    pb::Coordination::WithRawCallbackMethod_Heartbeat<
        pb::Coordination::WithRawCallbackMethod_ReportError<
            pb::Coordination::WithRawCallbackMethod_Set<pb::Coordination::WithRawCallbackMethod_Get<
                pb::Coordination::WithRawCallbackMethod_Delete<
                    pb::Coordination::WithRawCallbackMethod_Barrier<
                        pb::Coordination::WithRawCallbackMethod_Watch<
                            pb::Coordination::WithRawCallbackMethod_Leave<
                                pb::Coordination::WithRawCallbackMethod_GetTaskStates<
                                    pb::Coordination::Service>>>>>>>>>>;

template <typename Names>
std::string join(const Names& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

long long millis(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

// "worker" of "worker:1".
std::string job_of(const std::string& task) { return task.substr(0, task.find(':')); }

}  // namespace

class CoordinationService::Impl final : public RawService {
 public:
  Impl(const std::string& address, std::vector<std::string> tasks, CoordinationOptions options)
      : options_(std::move(options)) {
    distribute::internal::quiet_grpc_logs();
    WEFT_CHECK(!options_.token.empty(), InvalidArgument)
        << "coordination service: the cluster token is empty (set " << kTokenEnvironmentVariable
        << "; weft launch makes one)";
    WEFT_CHECK(!tasks.empty(), InvalidArgument) << "coordination service: no tasks";
    for (const auto& t : tasks) {
      WEFT_CHECK(tasks_.emplace(t, Task{}).second, InvalidArgument)
          << "coordination service: task " << t << " named twice";
      task_order_.push_back(t);
    }
    for (const auto& job : options_.recoverable_jobs) recoverable_.insert(job);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort(
        address, distribute::internal::server_credentials(options_.tls, "the coordination service"),
        &port);
    // SO_REUSEPORT (gRPC's default on Linux, asked for here so that it stays on): `weft launch`
    // and the tests hold the port of a local cluster's chief until this binds it (local_ports.h).
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 1);
    builder.SetMaxReceiveMessageSize(static_cast<int>(kMaxMessageBytes));
    builder.SetMaxSendMessageSize(static_cast<int>(kMaxMessageBytes));
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
    WEFT_CHECK(server_ != nullptr && port != 0, Unavailable)
        << "coordination service: cannot listen on " << address
        << " (is the address this host's own, and the port free?)";
    address_ = address.substr(0, address.rfind(':') + 1) + std::to_string(port);
    port_ = port;
    monitor_ = std::thread([this] { monitor(); });
  }

  ~Impl() override {
    std::vector<Completion> done;
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      for (auto& w : waiters_) {
        complete(w, Status(StatusCode::UNAVAILABLE, "the coordination service is stopping"), {},
                 &done);
      }
      waiters_.clear();
    }
    cv_.notify_all();
    finish(done);
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    server_->Wait();
    monitor_.join();
  }

  const std::string& address() const { return address_; }
  int port() const { return port_; }

  bool wait_for_tasks_to_leave(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return !failure_.empty() || all_left(); });
    return all_left();
  }

  std::string failure() const {
    std::lock_guard lock(mu_);
    return failure_;
  }

  TaskStates task_states() const {
    std::lock_guard lock(mu_);
    return internal::task_states_of(states_proto());
  }

  bool wait_for_pending_call(const std::string& task, const std::string& method,
                             std::chrono::milliseconds timeout) {
    Waiter::Kind kind = Waiter::kGet;
    if (method == "Barrier") {
      kind = Waiter::kBarrier;
    } else if (method == "Watch") {
      kind = Waiter::kWatch;
    } else if (method == "GetTaskStates") {
      kind = Waiter::kStates;
    } else {
      WEFT_CHECK(method == "Get", InvalidArgument)
          << "coordination service: only Get, Barrier, Watch and GetTaskStates calls wait, not "
          << method;
    }
    // Every call's handler notifies cv_ once it has decided, under mu_, to hold the call.
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] {
      return std::any_of(waiters_.begin(), waiters_.end(), [&](const auto& w) {
        return w->kind == kind && w->task == task && !w->done;
      });
    });
  }

  // ---- the calls ----------------------------------------------------------------------------
  grpc::ServerUnaryReactor* Register(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                     grpc::ByteBuffer* out) override {
    return handle<pb::RegisterRequest>(
        ctx, in, out, [&](const pb::RegisterRequest& r, Reply& reply) {
          const auto& caller = r.caller();
          auto it = tasks_.find(caller.task());
          if (it == tasks_.end()) return reply.error(unknown_task(caller.task()));
          Task& task = it->second;
          if (!failure_.empty()) return reply.error(Status(StatusCode::ABORTED, failure_));
          const bool again = task.state != TaskState::kUnregistered;
          if (again && task.incarnation == caller.incarnation()) {
            if (task.state == TaskState::kConnected) return reply.ok(pb::Empty{});  // a retry
            return reply.error(refusal(caller.task(), task));
          }
          if (again) {
            const std::string why = "it restarted (it registered again with a new incarnation)";
            if (!recoverable(caller.task())) {
              fail_task(caller.task(), why, reply.completions);
              return reply.error(Status(StatusCode::ABORTED, failure_));
            }
            // A recoverable task's new process takes its place: the old one, if it still lives,
            // hears that it was replaced.
            lose_task(caller.task(), why, reply.completions);
          }
          task.state = TaskState::kConnected;
          task.incarnation = caller.incarnation();
          task.error.clear();
          task.last_heartbeat = Clock::now();
          states_changed(reply.completions);
          reply.ok(pb::Empty{});
        });
  }

  grpc::ServerUnaryReactor* Heartbeat(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                      grpc::ByteBuffer* out) override {
    return handle<pb::HeartbeatRequest>(ctx, in, out, [&](const auto& r, Reply& reply) {
      if (!admitted(r.caller(), reply)) return;
      tasks_[r.caller().task()].last_heartbeat = Clock::now();
      reply.ok(pb::Empty{});
    });
  }

  grpc::ServerUnaryReactor* ReportError(grpc::CallbackServerContext* ctx,
                                        const grpc::ByteBuffer* in,
                                        grpc::ByteBuffer* out) override {
    return handle<pb::ReportErrorRequest>(ctx, in, out, [&](const auto& r, Reply& reply) {
      // Only the task's registered incarnation speaks for it: an earlier process of a restarted
      // task cannot fail the cluster.
      if (!admitted(r.caller(), reply)) return;
      fail_task(r.caller().task(), r.message(), reply.completions);
      reply.ok(pb::Empty{});
    });
  }

  grpc::ServerUnaryReactor* Set(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                grpc::ByteBuffer* out) override {
    return handle<pb::SetRequest>(ctx, in, out, [&](const pb::SetRequest& r, Reply& reply) {
      if (!admitted(r.caller(), reply) || !key_fits(r.key(), reply)) return;
      if (r.value().size() > kMaxValueBytes) {
        return reply.error(
            Status(StatusCode::INVALID_ARGUMENT, "value of " + std::to_string(r.value().size()) +
                                                     " bytes is over the limit of " +
                                                     std::to_string(kMaxValueBytes)));
      }
      kv_[r.key()] = r.value();
      pb::GetResponse answer;
      answer.set_value(r.value());
      answer_waiters([&](const Waiter& w) { return w.kind == Waiter::kGet && w.key == r.key(); },
                     answer.SerializeAsString(), reply.completions);
      reply.ok(pb::Empty{});
    });
  }

  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                grpc::ByteBuffer* out) override {
    return handle<pb::GetRequest>(ctx, in, out, [&](const pb::GetRequest& r, Reply& reply) {
      if (!admitted(r.caller(), reply) || !key_fits(r.key(), reply)) return;
      auto it = kv_.find(r.key());
      if (it != kv_.end()) {
        pb::GetResponse answer;
        answer.set_value(it->second);
        return reply.ok(answer);
      }
      if (r.timeout_ms() == 0) {
        return reply.error(Status(StatusCode::NOT_FOUND, "key '" + r.key() + "' is not set"));
      }
      reply.wait(Waiter::kGet, r.caller().task(), r.key(), r.timeout_ms());
    });
  }

  grpc::ServerUnaryReactor* Delete(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                   grpc::ByteBuffer* out) override {
    return handle<pb::DeleteRequest>(ctx, in, out, [&](const pb::DeleteRequest& r, Reply& reply) {
      if (!admitted(r.caller(), reply) || !key_fits(r.key(), reply)) return;
      kv_.erase(r.key());
      const std::string under = r.key() + "/";
      auto it = kv_.lower_bound(under);
      while (it != kv_.end() && it->first.compare(0, under.size(), under) == 0) it = kv_.erase(it);
      reply.ok(pb::Empty{});
    });
  }

  grpc::ServerUnaryReactor* Barrier(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                    grpc::ByteBuffer* out) override {
    return handle<pb::BarrierRequest>(ctx, in, out, [&](const pb::BarrierRequest& r, Reply& reply) {
      if (!admitted(r.caller(), reply) || !key_fits(r.id(), reply)) return;
      std::set<std::string> participants(r.tasks().begin(), r.tasks().end());
      if (participants.empty()) participants.insert(task_order_.begin(), task_order_.end());
      for (const auto& t : participants) {
        if (tasks_.count(t) == 0) return reply.error(unknown_task(t));
      }
      const std::string& me = r.caller().task();
      if (participants.count(me) == 0) {
        return reply.error(Status(StatusCode::INVALID_ARGUMENT,
                                  "barrier '" + r.id() + "': the caller " + me +
                                      " is not one of its participants " + join(participants)));
      }
      auto [it, first] = barriers_.try_emplace(r.id(), BarrierState{participants, {}});
      BarrierState& barrier = it->second;
      if (!first && barrier.participants != participants) {
        return reply.error(Status(StatusCode::INVALID_ARGUMENT,
                                  "barrier '" + r.id() + "': " + me + " names the participants " +
                                      join(participants) + ", an earlier caller " +
                                      join(barrier.participants)));
      }
      for (const auto& t : participants) {
        const Task& task = tasks_[t];
        if (task.state == TaskState::kLost || task.state == TaskState::kLeft) {
          Status gone = participant_gone(r.id(), t, task);
          end_barrier(r.id(), gone, reply.completions);
          return reply.error(gone);
        }
      }
      barrier.arrived.insert(me);
      if (barrier.arrived.size() < barrier.participants.size()) {
        return reply.wait(Waiter::kBarrier, me, r.id(), r.timeout_ms());
      }
      barriers_.erase(r.id());
      answer_waiters([&](const Waiter& w) { return w.kind == Waiter::kBarrier && w.key == r.id(); },
                     pb::Empty{}.SerializeAsString(), reply.completions);
      reply.ok(pb::Empty{});
    });
  }

  grpc::ServerUnaryReactor* Watch(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                  grpc::ByteBuffer* out) override {
    return handle<pb::WatchRequest>(ctx, in, out, [&](const pb::WatchRequest& r, Reply& reply) {
      pb::WatchResponse answer;
      answer.set_failure(failure_);
      if (!failure_.empty()) return reply.ok(answer);
      if (!admitted(r.caller(), reply)) return;
      reply.wait(Waiter::kWatch, r.caller().task(), "", 0);
    });
  }

  grpc::ServerUnaryReactor* Leave(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                  grpc::ByteBuffer* out) override {
    return handle<pb::LeaveRequest>(ctx, in, out, [&](const pb::LeaveRequest& r, Reply& reply) {
      auto it = tasks_.find(r.caller().task());
      if (it == tasks_.end()) return reply.error(unknown_task(r.caller().task()));
      if (it->second.state == TaskState::kUnregistered ||
          it->second.incarnation != r.caller().incarnation()) {
        // Not the process that registered: it cannot end that one's watch.
        return reply.error(
            Status(StatusCode::FAILED_PRECONDITION,
                   "task " + r.caller().task() + " (this incarnation) has not registered"));
      }
      if (it->second.state != TaskState::kConnected) return reply.ok(pb::Empty{});
      it->second.state = TaskState::kLeft;
      // Its watch ends quietly: the task is going away on purpose.
      answer_waiters(
          [&](const Waiter& w) { return w.kind == Waiter::kWatch && w.task == r.caller().task(); },
          pb::WatchResponse{}.SerializeAsString(), reply.completions);
      end_barriers_of(r.caller().task(), reply.completions);
      states_changed(reply.completions);
      reply.ok(pb::Empty{});
    });
  }

  grpc::ServerUnaryReactor* GetTaskStates(grpc::CallbackServerContext* ctx,
                                          const grpc::ByteBuffer* in,
                                          grpc::ByteBuffer* out) override {
    return handle<pb::GetTaskStatesRequest>(ctx, in, out, [&](const auto& r, Reply& reply) {
      if (!admitted(r.caller(), reply)) return;
      if (r.after_generation() < generation_ || r.timeout_ms() == 0) {
        return reply.ok(states_proto());
      }
      reply.wait(Waiter::kStates, r.caller().task(), "", r.timeout_ms());
    });
  }

 private:
  struct Task {
    TaskState state = TaskState::kUnregistered;
    uint64_t incarnation = 0;
    std::string error;  // kLost: why
    Clock::time_point last_heartbeat;
  };
  struct BarrierState {
    std::set<std::string> participants;
    std::set<std::string> arrived;
  };
  // A call the service answers later: a get of a key not yet set, a barrier not yet full, a
  // watch, a wait for the task states to change.
  struct Waiter {
    enum Kind { kGet, kBarrier, kWatch, kStates } kind;
    grpc::ServerUnaryReactor* reactor;
    grpc::ByteBuffer* response;
    std::string task;
    uint64_t incarnation = 0;  // the caller's
    std::string key;           // the key, or the barrier's id
    Clock::time_point deadline;
    long long timeout_ms;
    bool done = false;
  };
  // An answer decided under the lock, sent after it is released (gRPC may call back inline).
  struct Completion {
    std::shared_ptr<Waiter> waiter;
    Status status;
    std::string body;
  };

  class Call final : public grpc::ServerUnaryReactor {
   public:
    explicit Call(Impl* service) : service_(service) {}
    void OnCancel() override { service_->cancelled(this); }
    void OnDone() override { delete this; }

   private:
    Impl* service_;
  };

  // What a handler decides: answer now, or wait.
  struct Reply {
    Impl* service;
    Call* call;
    grpc::ByteBuffer* out;
    std::vector<Completion> completions;
    std::optional<Status> status;
    std::string body;
    void ok(const google::protobuf::Message& m) {
      status = Status::OK;
      body = m.SerializeAsString();
    }
    void error(Status s) { status = std::move(s); }
    void wait(Waiter::Kind kind, const std::string& task, const std::string& key,
              uint64_t timeout_ms) {
      auto w = std::make_shared<Waiter>();
      w->kind = kind;
      w->reactor = call;
      w->response = out;
      w->task = task;
      w->incarnation = service->tasks_[task].incarnation;
      w->key = key;
      w->timeout_ms = static_cast<long long>(std::min<uint64_t>(timeout_ms, 1ull << 40));
      w->deadline = kind == Waiter::kWatch
                        ? Clock::time_point::max()
                        : Clock::now() + std::chrono::milliseconds(w->timeout_ms);
      service->waiters_.push_back(std::move(w));
    }
  };

  template <typename Request, typename Handler>
  grpc::ServerUnaryReactor* handle(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                   grpc::ByteBuffer* out, Handler&& handler) {
    auto* call = new Call(this);
    // The token first: a call without the right one is refused before its bytes are parsed.
    if (auto refusal = distribute::internal::token_refusal(*ctx, options_.token)) {
      call->Finish(*refusal);
      return call;
    }
    Request request;
    const std::string bytes = distribute::internal::bytes_of(*in);
    if (!request.ParseFromString(bytes)) {
      call->Finish(Status(StatusCode::INVALID_ARGUMENT, "malformed request"));
      return call;
    }
    Reply reply{this, call, out, {}, std::nullopt, {}};
    {
      std::lock_guard lock(mu_);
      if (stopping_) {
        reply.error(Status(StatusCode::UNAVAILABLE, "the coordination service is stopping"));
      } else {
        handler(request, reply);
      }
    }
    cv_.notify_all();
    finish(reply.completions);
    if (reply.status) {
      if (reply.status->ok()) *out = distribute::internal::buffer_of(reply.body);
      call->Finish(*reply.status);
    }
    return call;
  }

  // Under the lock: whether `caller` may call (registered, this incarnation, connected, and the
  // cluster has not failed); else sets reply's error.
  bool admitted(const pb::Caller& caller, Reply& reply) {
    auto it = tasks_.find(caller.task());
    if (it == tasks_.end()) {
      reply.error(unknown_task(caller.task()));
    } else if (it->second.state == TaskState::kUnregistered ||
               it->second.incarnation != caller.incarnation()) {
      reply.error(Status(StatusCode::FAILED_PRECONDITION,
                         "task " + caller.task() + " (this incarnation) has not registered"));
    } else if (it->second.state != TaskState::kConnected) {
      reply.error(refusal(caller.task(), it->second));
    } else if (!failure_.empty()) {
      reply.error(Status(StatusCode::ABORTED, failure_));
    } else {
      return true;
    }
    return false;
  }

  // Why a task that has left, or was lost, may not call: a lost one hears its own failure (as
  // the cluster's, so that its client ends its waits).
  static Status refusal(const std::string& name, const Task& task) {
    if (task.state == TaskState::kLost) {
      return Status(StatusCode::ABORTED, internal::failure_of(name, task.error));
    }
    return Status(StatusCode::FAILED_PRECONDITION, "task " + name + " has left the cluster");
  }

  bool recoverable(const std::string& task) const { return recoverable_.count(job_of(task)) != 0; }

  Status participant_gone(const std::string& id, const std::string& name, const Task& task) {
    return Status(StatusCode::FAILED_PRECONDITION,
                  "barrier '" + id + "' cannot complete: its participant " + name +
                      (task.state == TaskState::kLost ? " was lost: " + task.error
                                                      : " has left the cluster"));
  }

  // Under the lock: ends barrier `id` and every call waiting at it with `status`.
  void end_barrier(const std::string& id, const Status& status, std::vector<Completion>& out) {
    barriers_.erase(id);
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      if ((*it)->kind == Waiter::kBarrier && (*it)->key == id) {
        complete(*it, status, {}, &out);
        it = waiters_.erase(it);
      } else {
        ++it;
      }
    }
  }

  // Under the lock: task `name` is lost or has left, so no barrier it takes part in can complete.
  void end_barriers_of(const std::string& name, std::vector<Completion>& out) {
    std::vector<std::string> ids;
    for (const auto& [id, barrier] : barriers_) {
      if (barrier.participants.count(name) != 0) ids.push_back(id);
    }
    for (const auto& id : ids) end_barrier(id, participant_gone(id, name, tasks_[name]), out);
  }

  pb::GetTaskStatesResponse states_proto() const {
    pb::GetTaskStatesResponse r;
    r.set_generation(generation_);
    for (const auto& name : task_order_) {
      const Task& task = tasks_.at(name);
      auto* t = r.add_tasks();
      t->set_task(name);
      t->set_state(static_cast<pb::TaskState>(task.state));
      t->set_incarnation(task.incarnation);
      t->set_error(task.error);
    }
    return r;
  }

  // Under the lock: some task's state changed; the calls waiting for a change hear the states.
  void states_changed(std::vector<Completion>& out) {
    ++generation_;
    answer_waiters([](const Waiter& w) { return w.kind == Waiter::kStates; },
                   states_proto().SerializeAsString(), out);
  }

  bool key_fits(const std::string& key, Reply& reply) {
    if (key.size() <= kMaxKeyBytes) return true;
    reply.error(Status(StatusCode::INVALID_ARGUMENT, "key of " + std::to_string(key.size()) +
                                                         " bytes is over the limit of " +
                                                         std::to_string(kMaxKeyBytes)));
    return false;
  }

  Status unknown_task(const std::string& task) const {
    return Status(StatusCode::INVALID_ARGUMENT,
                  "unknown task '" + task + "'; the cluster's tasks are " + join(task_order_));
  }

  // Every task has left, or was lost (a recoverable task that did not come back).
  bool all_left() const {
    return std::all_of(tasks_.begin(), tasks_.end(), [](const auto& t) {
      return t.second.state == TaskState::kLeft || t.second.state == TaskState::kLost;
    });
  }

  // Under the lock: task `task` failed. A recoverable one is lost (lose_task); otherwise the
  // cluster has failed: every pending get and barrier ends naming the task, every watch is
  // answered, and every later call answers the same.
  void fail_task(const std::string& task, const std::string& why, std::vector<Completion>& out) {
    if (recoverable(task)) return lose_task(task, why, out);
    if (!failure_.empty()) return;
    failure_ = internal::failure_of(task, why);
    pb::WatchResponse watch;
    watch.set_failure(failure_);
    for (auto& w : waiters_) {
      if (w->kind == Waiter::kWatch) {
        complete(w, Status::OK, watch.SerializeAsString(), &out);
      } else {
        complete(w, Status(StatusCode::ABORTED, failure_), {}, &out);
      }
    }
    waiters_.clear();
    cv_.notify_all();
  }

  // Under the lock: recoverable task `name` is lost, for `why`. Its own pending calls end with
  // its failure (its process, if it still lives, learns that it was dropped), the barriers it
  // takes part in fail naming it, and the calls waiting for a change of state hear of it. The
  // other tasks go on.
  void lose_task(const std::string& name, const std::string& why, std::vector<Completion>& out) {
    Task& task = tasks_[name];
    if (task.state != TaskState::kConnected) return;
    task.state = TaskState::kLost;
    task.error = why;
    const std::string failure = internal::failure_of(name, why);
    pb::WatchResponse watch;
    watch.set_failure(failure);
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      auto& w = **it;
      if (w.task != name || w.incarnation != task.incarnation) {
        ++it;
        continue;
      }
      if (w.kind == Waiter::kWatch) {
        complete(*it, Status::OK, watch.SerializeAsString(), &out);
      } else {
        complete(*it, Status(StatusCode::ABORTED, failure), {}, &out);
      }
      it = waiters_.erase(it);
    }
    end_barriers_of(name, out);
    states_changed(out);
    cv_.notify_all();
  }

  // Under the lock: answers (OK, `body`) and drops the pending calls `which` selects.
  template <typename Which>
  void answer_waiters(Which&& which, const std::string& body, std::vector<Completion>& out) {
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      if (which(**it)) {
        complete(*it, Status::OK, body, &out);
        it = waiters_.erase(it);
      } else {
        ++it;
      }
    }
  }

  static void complete(const std::shared_ptr<Waiter>& w, Status status, std::string body,
                       std::vector<Completion>* out) {
    if (w->done) return;
    w->done = true;
    out->push_back({w, std::move(status), std::move(body)});
  }

  static void finish(std::vector<Completion>& done) {
    for (auto& c : done) {
      if (c.status.ok()) *c.waiter->response = distribute::internal::buffer_of(c.body);
      c.waiter->reactor->Finish(c.status);
    }
    done.clear();
  }

  // gRPC cancelled a pending call: its client gave up, or its process died. A broken watch of a
  // task that has not left means the task is gone.
  void cancelled(Call* call) {
    std::vector<Completion> done;
    {
      std::lock_guard lock(mu_);
      auto it = std::find_if(waiters_.begin(), waiters_.end(),
                             [&](const auto& w) { return w->reactor == call; });
      if (it == waiters_.end()) return;
      std::shared_ptr<Waiter> w = *it;
      waiters_.erase(it);
      complete(w, Status(StatusCode::CANCELLED, "cancelled"), {}, &done);
      const Task& task = tasks_[w->task];
      if (w->kind == Waiter::kWatch && !stopping_ && task.state == TaskState::kConnected &&
          task.incarnation == w->incarnation) {
        fail_task(w->task,
                  "its connection to the coordination service broke (the process exited or was "
                  "killed)",
                  done);
      }
    }
    finish(done);
  }

  // Ends waits that pass their deadline, and declares failed a task whose heartbeats stopped.
  void monitor() {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      auto now = Clock::now();
      auto next = now + std::max<Clock::duration>(options_.heartbeat_interval / 2,
                                                  std::chrono::milliseconds(50));
      std::vector<Completion> done;
      for (auto it = waiters_.begin(); it != waiters_.end();) {
        auto& w = **it;
        if (w.deadline > now) {
          next = std::min(next, w.deadline);
          ++it;
          continue;
        }
        std::string why;
        if (w.kind == Waiter::kStates) {
          // No change within the wait: the states as they are.
          complete(*it, Status::OK, states_proto().SerializeAsString(), &done);
          it = waiters_.erase(it);
          continue;
        }
        if (w.kind == Waiter::kGet) {
          why = "key '" + w.key + "' was not set within " + std::to_string(w.timeout_ms) + " ms";
        } else {
          auto& barrier = barriers_[w.key];
          std::vector<std::string> missing;
          for (const auto& t : task_order_) {
            if (barrier.participants.count(t) != 0 && barrier.arrived.count(t) == 0) {
              missing.push_back(t);
            }
          }
          barrier.arrived.erase(w.task);
          if (barrier.arrived.empty()) barriers_.erase(w.key);
          why = "barrier '" + w.key + "' timed out after " + std::to_string(w.timeout_ms) +
                " ms waiting for " + join(missing);
        }
        complete(*it, Status(StatusCode::DEADLINE_EXCEEDED, why), {}, &done);
        it = waiters_.erase(it);
      }
      for (auto& [name, task] : tasks_) {
        if (task.state != TaskState::kConnected || !failure_.empty()) continue;
        auto silent = now - task.last_heartbeat;
        if (silent > options_.heartbeat_timeout) {
          fail_task(name,
                    "no heartbeat for " + std::to_string(millis(silent)) +
                        " ms (the process is stopped, hung or cut off)",
                    done);
        }
      }
      if (!done.empty()) {
        lock.unlock();
        finish(done);
        lock.lock();
        continue;
      }
      cv_.wait_until(lock, next);
    }
  }

  CoordinationOptions options_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  int port_ = 0;
  std::thread monitor_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::map<std::string, Task> tasks_;
  std::vector<std::string> task_order_;
  std::set<std::string> recoverable_;  // jobs
  uint64_t generation_ = 0;            // of the task states
  std::map<std::string, std::string> kv_;
  std::map<std::string, BarrierState> barriers_;  // by id
  std::vector<std::shared_ptr<Waiter>> waiters_;
  std::string failure_;
};

CoordinationService::CoordinationService(const std::string& address, std::vector<std::string> tasks,
                                         CoordinationOptions options)
    : impl_(std::make_unique<Impl>(address, std::move(tasks), std::move(options))) {}
CoordinationService::~CoordinationService() = default;
std::string CoordinationService::address() const { return impl_->address(); }
int CoordinationService::port() const { return impl_->port(); }
bool CoordinationService::wait_for_tasks_to_leave(std::chrono::milliseconds timeout) {
  return impl_->wait_for_tasks_to_leave(timeout);
}
std::string CoordinationService::failure() const { return impl_->failure(); }
TaskStates CoordinationService::task_states() const { return impl_->task_states(); }
bool CoordinationService::wait_for_pending_call(const std::string& task, const std::string& method,
                                                std::chrono::milliseconds timeout) {
  return impl_->wait_for_pending_call(task, method, timeout);
}

}  // namespace weft::distribute::coordination
