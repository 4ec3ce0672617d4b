// The coordination service and its clients in one process, over real gRPC on 127.0.0.1. A raw
// gRPC stub plays the misbehaving parties: a call without the token, a task that stops sending
// heartbeats, a task whose connection breaks, a task that restarts. (Tasks in separate processes
// that are killed or stopped are the multi-worker tests' subject.)
#include <gmock/gmock.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <future>
#include <thread>

#include "weft/core/errors.h"
#include "weft/distribute/coordination/client.h"
#include "weft/distribute/coordination/coordination.pb.h"
#include "weft/distribute/coordination/service.h"
#include "weft/testing/raw_grpc.h"
#include "weft/testing/tls_files.h"

namespace weft::distribute::coordination {
namespace {

namespace pb = ::weft::coordination;
using std::chrono::milliseconds;
using ::testing::HasSubstr;

constexpr const char* kToken = "0123456789abcdef";

CoordinationOptions options(std::string token = kToken) {
  CoordinationOptions o;
  o.token = std::move(token);
  o.heartbeat_interval = milliseconds(100);
  o.heartbeat_timeout = milliseconds(1000);
  return o;
}

struct Cluster {
  explicit Cluster(int tasks) {
    std::vector<std::string> names;
    for (int i = 0; i < tasks; ++i) names.push_back("worker:" + std::to_string(i));
    service = std::make_unique<CoordinationService>("127.0.0.1:0", names, options());
    for (const auto& n : names) {
      clients.push_back(
          std::make_unique<CoordinationClient>(n, "worker:0", service->address(), options()));
    }
  }
  void connect_all() {
    for (auto& c : clients) c->connect(milliseconds(5000));
  }
  std::unique_ptr<CoordinationService> service;
  std::vector<std::unique_ptr<CoordinationClient>> clients;
};

grpc::Status raw_call(const std::string& address, const std::string& method,
                      const std::string& payload, const char* token) {
  return weft::testing::raw_call(address, "/weft.coordination.Coordination/" + method, payload,
                                 token);
}

pb::Caller caller(const std::string& task, uint64_t incarnation) {
  pb::Caller c;
  c.set_task(task);
  c.set_incarnation(incarnation);
  return c;
}

// A task played by raw calls: it registers with `incarnation` and holds its watch open, as a
// client does, but sends no heartbeats; break() ends its connection as a killed process's ends.
class RawTask {
 public:
  RawTask(const std::string& address, const std::string& task, uint64_t incarnation)
      : channel_(grpc::CreateChannel(address, grpc::InsecureChannelCredentials())),
        stub_(channel_) {
    pb::RegisterRequest reg;
    *reg.mutable_caller() = caller(task, incarnation);
    registered_ = raw_call(address, "Register", reg.SerializeAsString(), kToken);
    if (!registered_.ok()) return;
    ctx_.AddMetadata("weft-cluster-token", kToken);
    pb::WatchRequest watch;
    *watch.mutable_caller() = caller(task, incarnation);
    grpc::Slice slice(watch.SerializeAsString());
    request_ = grpc::ByteBuffer(&slice, 1);
    stub_.UnaryCall(&ctx_, "/weft.coordination.Coordination/Watch", grpc::StubOptions(), &request_,
                    &response_, [this](grpc::Status s) { ended_.set_value(s); });
    watching_ = true;
  }
  ~RawTask() {
    if (watching_) {
      ctx_.TryCancel();
      ended_.get_future().wait();
    }
  }
  const grpc::Status& registered() const { return registered_; }
  void break_connection() { ctx_.TryCancel(); }
  // The watch's answer: the failure it was told of ("" when it ended without one).
  std::string watch_answer() {
    watching_ = false;
    grpc::Status s = ended_.get_future().get();
    if (!s.ok()) return "status " + std::to_string(s.error_code());
    std::vector<grpc::Slice> slices;
    std::string bytes;
    if (response_.Dump(&slices).ok()) {
      for (const auto& sl : slices)
        bytes.append(reinterpret_cast<const char*>(sl.begin()), sl.size());
    }
    pb::WatchResponse answer;
    answer.ParseFromString(bytes);
    return answer.failure();
  }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  grpc::GenericStub stub_;
  grpc::ClientContext ctx_;
  grpc::ByteBuffer request_, response_;
  std::promise<grpc::Status> ended_;
  grpc::Status registered_;
  bool watching_ = false;
};

TEST(Coordination, KeyValueWaitsForTheKeyAndTimesOutNamingIt) {
  Cluster cluster(2);
  cluster.connect_all();
  auto& a = *cluster.clients[0];
  auto& b = *cluster.clients[1];
  auto later = std::async(std::launch::async, [&] {
    // Set once worker:1's get is waiting for it.
    EXPECT_TRUE(cluster.service->wait_for_pending_call("worker:1", "Get", milliseconds(10000)));
    a.insert_key_value("gloo/rank0", "127.0.0.1:5000");
  });
  EXPECT_EQ(b.get_key_value("gloo/rank0", milliseconds(5000)), "127.0.0.1:5000");
  later.get();
  EXPECT_FALSE(cluster.service->wait_for_pending_call("worker:1", "Get", milliseconds(50)));
  EXPECT_THROW(cluster.service->wait_for_pending_call("worker:1", "Set", milliseconds(50)),
               InvalidArgument);
  EXPECT_EQ(b.try_get_key_value("gloo/rank0"), "127.0.0.1:5000");
  EXPECT_EQ(b.try_get_key_value("absent"), std::nullopt);
  a.insert_key_value("gloo/rank0", "overwritten");
  EXPECT_EQ(b.get_key_value("gloo/rank0", milliseconds(100)), "overwritten");
  // Deleting a key deletes the keys under it, and no other.
  for (const char* k : {"dir", "dir/0", "dir/1/x", "dir0", "dirt/0"}) a.insert_key_value(k, k);
  b.delete_key_value("dir");
  for (const char* k : {"dir", "dir/0", "dir/1/x"}) EXPECT_EQ(a.try_get_key_value(k), std::nullopt);
  EXPECT_EQ(a.try_get_key_value("dir0"), "dir0");
  EXPECT_EQ(a.try_get_key_value("dirt/0"), "dirt/0");
  b.delete_key_value("dir");  // unset: no error

  auto start = std::chrono::steady_clock::now();
  try {
    b.get_key_value("never", milliseconds(300));
    FAIL() << "no DeadlineExceeded";
  } catch (const DeadlineExceeded& e) {
    EXPECT_THAT(e.what(), HasSubstr("key 'never' was not set within 300 ms"));
    EXPECT_THAT(e.what(), HasSubstr("worker:1"));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(2000));
  EXPECT_THROW(a.insert_key_value(std::string(2000, 'k'), "v"), InvalidArgument);
  EXPECT_THROW(a.insert_key_value("big", std::string(kMaxValueBytes + 1, 'v')), InvalidArgument);
  for (auto& c : cluster.clients) EXPECT_EQ(c->failure(), "");
}

TEST(Coordination, BarrierPassesWhenAllArriveAndNamesWhoIsMissing) {
  Cluster cluster(3);
  cluster.connect_all();
  std::vector<std::future<void>> arrivals;
  for (auto& c : cluster.clients) {
    arrivals.push_back(std::async(std::launch::async,
                                  [&c] { c->wait_at_barrier("epoch 1", milliseconds(5000)); }));
  }
  for (auto& f : arrivals) EXPECT_NO_THROW(f.get());

  auto first = std::async(std::launch::async, [&] {
    cluster.clients[0]->wait_at_barrier("epoch 2", milliseconds(400));
  });
  try {
    cluster.clients[2]->wait_at_barrier("epoch 2", milliseconds(400));
    FAIL() << "no DeadlineExceeded";
  } catch (const DeadlineExceeded& e) {
    // worker:1 never comes (worker:0 may have given up already on a loaded machine).
    EXPECT_THAT(e.what(), HasSubstr("barrier 'epoch 2' timed out after 400 ms waiting for "));
    EXPECT_THAT(e.what(), ::testing::EndsWith("worker:1"));
  }
  EXPECT_THROW(first.get(), DeadlineExceeded);
}

TEST(Coordination, AReportedErrorEndsEveryPendingWaitNamingTheTask) {
  Cluster cluster(3);
  cluster.connect_all();
  std::promise<std::string> told;
  cluster.clients[2]->on_failure([&](const std::string& f) { told.set_value(f); });
  auto waiting = std::async(std::launch::async, [&] {
    return cluster.clients[2]->get_key_value("never", milliseconds(30000));
  });
  auto at_barrier = std::async(std::launch::async, [&] {
    cluster.clients[0]->wait_at_barrier("step", milliseconds(30000));
  });
  // The error comes while both calls wait in the service.
  EXPECT_TRUE(cluster.service->wait_for_pending_call("worker:2", "Get", milliseconds(10000)));
  EXPECT_TRUE(cluster.service->wait_for_pending_call("worker:0", "Barrier", milliseconds(10000)));
  auto start = std::chrono::steady_clock::now();
  cluster.clients[1]->report_error("InvalidArgument: matmul: shapes [2,3] and [4,5]");
  const std::string expected =
      "task worker:1 failed: InvalidArgument: matmul: shapes [2,3] and [4,5]";
  try {
    waiting.get();
    FAIL() << "the wait did not end";
  } catch (const Unavailable& e) {
    EXPECT_THAT(e.what(), HasSubstr(expected));
  }
  EXPECT_THROW(at_barrier.get(), Unavailable);
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(2000));
  auto f = told.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_EQ(f.get(), expected);
  EXPECT_EQ(cluster.service->failure(), expected);
  // Later calls answer the same, and the failure reaches a client that was not waiting.
  EXPECT_THROW(cluster.clients[0]->insert_key_value("k", "v"), Unavailable);
  for (int i = 0; i < 250 && cluster.clients[0]->failure().empty(); ++i) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_EQ(cluster.clients[0]->failure(), expected);
}

TEST(Coordination, ATaskWhoseConnectionBreaksIsNamedAtOnce) {
  CoordinationService service("127.0.0.1:0", {"worker:0", "worker:1"}, options());
  CoordinationClient survivor("worker:0", "worker:0", service.address(), options());
  survivor.connect(milliseconds(5000));
  RawTask worker1(service.address(), "worker:1", 7);
  ASSERT_TRUE(worker1.registered().ok());
  auto waiting = std::async(std::launch::async,
                            [&] { return survivor.get_key_value("never", milliseconds(30000)); });
  // The connection breaks once the service holds worker:1's watch (a watch it never saw could
  // not break) and worker:0's get.
  EXPECT_TRUE(service.wait_for_pending_call("worker:1", "Watch", milliseconds(10000)));
  EXPECT_TRUE(service.wait_for_pending_call("worker:0", "Get", milliseconds(10000)));
  auto start = std::chrono::steady_clock::now();
  worker1.break_connection();
  try {
    waiting.get();
    FAIL() << "the wait did not end";
  } catch (const Unavailable& e) {
    EXPECT_THAT(e.what(), HasSubstr("task worker:1 failed: its connection to the coordination "
                                    "service broke"));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(2000));
}

TEST(Coordination, ATaskThatStopsSendingHeartbeatsIsDeclaredFailed) {
  CoordinationService service("127.0.0.1:0", {"worker:0", "worker:1"}, options());
  CoordinationClient survivor("worker:0", "worker:0", service.address(), options());
  survivor.connect(milliseconds(5000));
  pb::RegisterRequest reg;
  *reg.mutable_caller() = caller("worker:1", 9);
  ASSERT_TRUE(raw_call(service.address(), "Register", reg.SerializeAsString(), kToken).ok());
  auto start = std::chrono::steady_clock::now();
  try {
    survivor.wait_at_barrier("never full", milliseconds(30000));
    FAIL() << "the barrier did not end";
  } catch (const Unavailable& e) {
    EXPECT_THAT(e.what(), HasSubstr("task worker:1 failed: no heartbeat for"));
  }
  auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, milliseconds(900));  // heartbeat_timeout is 1000 ms
  EXPECT_LT(waited, milliseconds(3000));
}

TEST(Coordination, ARestartedTaskFailsTheCluster) {
  Cluster cluster(2);
  cluster.connect_all();
  pb::RegisterRequest again;
  *again.mutable_caller() = caller("worker:1", 12345);  // a new process: a new incarnation
  grpc::Status s =
      raw_call(cluster.service->address(), "Register", again.SerializeAsString(), kToken);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::ABORTED);
  EXPECT_THAT(s.error_message(), HasSubstr("task worker:1 failed: it restarted"));
  EXPECT_THROW(cluster.clients[0]->get_key_value("k", milliseconds(1000)), Unavailable);
}

// An error or a leave from an earlier process of a task (not the incarnation that registered)
// is refused: it does not fail the cluster, nor end the registered process's membership.
TEST(Coordination, AnErrorOrLeaveFromAnotherIncarnationIsRefused) {
  Cluster cluster(2);
  cluster.connect_all();
  pb::ReportErrorRequest stale;
  *stale.mutable_caller() = caller("worker:1", 12345);
  stale.set_message("an old process's error");
  grpc::Status s =
      raw_call(cluster.service->address(), "ReportError", stale.SerializeAsString(), kToken);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(s.error_message(), HasSubstr("task worker:1 (this incarnation) has not registered"));
  EXPECT_EQ(cluster.service->failure(), "");
  pb::LeaveRequest leave;
  *leave.mutable_caller() = caller("worker:1", 12345);
  s = raw_call(cluster.service->address(), "Leave", leave.SerializeAsString(), kToken);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  cluster.clients[0]->insert_key_value("k", "v");
  EXPECT_EQ(cluster.clients[1]->get_key_value("k", milliseconds(1000)), "v");
  cluster.clients[1]->report_error("its own error");
  EXPECT_THAT(cluster.service->failure(), HasSubstr("its own error"));
}

TEST(Coordination, TheTokenIsCheckedBeforeThePayloadIsParsed) {
  CoordinationService service("127.0.0.1:0", {"worker:0"}, options());
  const std::string garbage = "\xff\xff\xff\xff not a protobuf";
  for (const char* method : {"Register", "Set", "Get", "Delete", "Barrier", "Watch", "Heartbeat",
                             "ReportError", "Leave"}) {
    SCOPED_TRACE(method);
    grpc::Status none = raw_call(service.address(), method, garbage, nullptr);
    EXPECT_EQ(none.error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(none.error_message(), "the call carries no cluster token");
    grpc::Status wrong = raw_call(service.address(), method, garbage, "0123456789abcdeX");
    EXPECT_EQ(wrong.error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(wrong.error_message(), "the call's cluster token is wrong");
    grpc::Status parsed = raw_call(service.address(), method, garbage, kToken);
    EXPECT_EQ(parsed.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(parsed.error_message(), "malformed request");
  }
  CoordinationClient intruder("worker:0", "worker:0", service.address(), options("wrong token"));
  try {
    intruder.connect(milliseconds(5000));
    FAIL() << "a wrong token was accepted";
  } catch (const FailedPrecondition& e) {
    EXPECT_THAT(e.what(), HasSubstr("the call's cluster token is wrong"));
  }
  EXPECT_THROW(CoordinationService("127.0.0.1:0", {"worker:0"}, options("")), InvalidArgument);
  EXPECT_THROW(CoordinationClient("worker:0", "worker:0", service.address(), options("")),
               InvalidArgument);
}

TEST(Coordination, TheServiceListensOnlyOnItsOwnAddress) {
  CoordinationService service("127.0.0.2:0", {"worker:0"}, options());
  EXPECT_EQ(service.address(), "127.0.0.2:" + std::to_string(service.port()));
  CoordinationClient elsewhere("worker:0", "worker:0",
                               "127.0.0.1:" + std::to_string(service.port()), options());
  EXPECT_THROW(elsewhere.connect(milliseconds(500)), DeadlineExceeded);
  CoordinationClient right("worker:0", "worker:0", service.address(), options());
  EXPECT_NO_THROW(right.connect(milliseconds(5000)));
}

TEST(Coordination, UnknownTasksAndAddressesAreRefusedNamingThem) {
  CoordinationService service("127.0.0.1:0", {"worker:0", "worker:1"}, options());
  CoordinationClient stranger("worker:7", "worker:0", service.address(), options());
  try {
    stranger.connect(milliseconds(5000));
    FAIL() << "an unknown task was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr("unknown task 'worker:7'; the cluster's tasks are worker:0, "
                                    "worker:1"));
  }
  EXPECT_THROW(CoordinationService("127.0.0.1:0", {"worker:0", "worker:0"}, options()),
               InvalidArgument);
  EXPECT_THROW(CoordinationService("192.0.2.1:0", {"worker:0"}, options()), Unavailable);
}

TEST(Coordination, ShutdownMeetsEveryTaskThenLeaves) {
  Cluster cluster(2);
  cluster.connect_all();
  auto other =
      std::async(std::launch::async, [&] { cluster.clients[1]->shutdown(milliseconds(5000)); });
  cluster.clients[0]->shutdown(milliseconds(5000));
  other.get();
  EXPECT_TRUE(cluster.service->wait_for_tasks_to_leave(milliseconds(2000)));
  EXPECT_EQ(cluster.service->failure(), "");
}

// ---- recoverable tasks (parameter-server clusters) ------------------------------------------

CoordinationOptions recoverable_options() {
  CoordinationOptions o = options();
  o.recoverable_jobs = {"worker", "ps"};
  return o;
}

// chief:0 (not recoverable), worker:0 and ps:0 as clients, worker:1 left to each test.
struct PsCluster {
  PsCluster()
      : service("127.0.0.1:0", {"chief:0", "worker:0", "worker:1", "ps:0"}, recoverable_options()) {
    for (const char* task : {"chief:0", "worker:0", "ps:0"}) {
      clients.push_back(std::make_unique<CoordinationClient>(task, "chief:0", service.address(),
                                                             recoverable_options()));
      clients.back()->connect(milliseconds(5000));
    }
  }
  CoordinationClient& chief() { return *clients[0]; }
  CoordinationClient& worker0() { return *clients[1]; }
  CoordinationClient& ps0() { return *clients[2]; }
  CoordinationService service;
  std::vector<std::unique_ptr<CoordinationClient>> clients;
};

TEST(CoordinationRecoverable, ALostWorkerIsAStateTheChiefSeesNotAClusterFailure) {
  PsCluster cluster;
  auto worker1 = std::make_unique<RawTask>(cluster.service.address(), "worker:1", 7);
  ASSERT_TRUE(worker1->registered().ok());
  TaskStates before = cluster.chief().task_states();
  EXPECT_EQ(before.of("worker:1").state, TaskState::kConnected);
  EXPECT_EQ(before.of("worker:1").incarnation, 7u);
  EXPECT_EQ(before.of("chief:0").state, TaskState::kConnected);
  EXPECT_THROW(before.of("worker:9"), InvalidArgument);
  auto change = std::async(std::launch::async, [&] {
    return cluster.chief().wait_for_task_states(before.generation, milliseconds(30000));
  });
  auto waiting = std::async(std::launch::async, [&] {
    return cluster.worker0().get_key_value("k", milliseconds(30000));
  });
  EXPECT_TRUE(
      cluster.service.wait_for_pending_call("chief:0", "GetTaskStates", milliseconds(10000)));
  EXPECT_TRUE(cluster.service.wait_for_pending_call("worker:0", "Get", milliseconds(10000)));
  EXPECT_TRUE(cluster.service.wait_for_pending_call("worker:1", "Watch", milliseconds(10000)));
  auto start = std::chrono::steady_clock::now();
  worker1->break_connection();
  TaskStates after = change.get();
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(2000));
  EXPECT_GT(after.generation, before.generation);
  EXPECT_EQ(after.of("worker:1").state, TaskState::kLost);
  EXPECT_THAT(after.of("worker:1").error,
              HasSubstr("its connection to the coordination service broke"));
  // The others go on: worker:0's wait is still pending and is answered.
  EXPECT_TRUE(cluster.service.wait_for_pending_call("worker:0", "Get", milliseconds(100)));
  cluster.ps0().insert_key_value("k", "v");
  EXPECT_EQ(waiting.get(), "v");
  EXPECT_EQ(cluster.service.failure(), "");
  EXPECT_EQ(cluster.chief().failure(), "");
  worker1.reset();

  // A new process of worker:1 registers and is connected again; the old incarnation may not call.
  RawTask again(cluster.service.address(), "worker:1", 8);
  ASSERT_TRUE(again.registered().ok()) << again.registered().error_message();
  TaskStates back = cluster.chief().task_states();
  EXPECT_EQ(back.of("worker:1").state, TaskState::kConnected);
  EXPECT_EQ(back.of("worker:1").incarnation, 8u);
  EXPECT_EQ(back.of("worker:1").error, "");
  pb::HeartbeatRequest old;
  *old.mutable_caller() = caller("worker:1", 7);
  grpc::Status s =
      raw_call(cluster.service.address(), "Heartbeat", old.SerializeAsString(), kToken);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(s.error_message(), HasSubstr("task worker:1 (this incarnation) has not registered"));
  EXPECT_EQ(cluster.service.task_states().of("worker:1").state, TaskState::kConnected);
}

TEST(CoordinationRecoverable, ANewIncarnationReplacesARunningOneWhichHearsIt) {
  PsCluster cluster;
  RawTask first(cluster.service.address(), "worker:1", 7);
  ASSERT_TRUE(first.registered().ok());
  EXPECT_TRUE(cluster.service.wait_for_pending_call("worker:1", "Watch", milliseconds(10000)));
  RawTask second(cluster.service.address(), "worker:1", 8);
  ASSERT_TRUE(second.registered().ok()) << second.registered().error_message();
  EXPECT_EQ(first.watch_answer(),
            "task worker:1 failed: it restarted (it registered again with "
            "a new incarnation)");
  EXPECT_EQ(cluster.chief().task_states().of("worker:1").incarnation, 8u);
  EXPECT_EQ(cluster.service.failure(), "");
  // The first incarnation's watch ended on purpose: its end does not lose the second one.
  EXPECT_TRUE(cluster.service.wait_for_pending_call("worker:1", "Watch", milliseconds(10000)));
  EXPECT_EQ(cluster.chief().task_states().of("worker:1").state, TaskState::kConnected);
}

TEST(CoordinationRecoverable, AReportedErrorOrSilenceLosesOnlyThatTaskWhichHearsIt) {
  PsCluster cluster;
  cluster.ps0().report_error("ResourceExhausted: out of memory");
  TaskStates states = cluster.chief().task_states();
  EXPECT_EQ(states.of("ps:0").state, TaskState::kLost);
  EXPECT_EQ(states.of("ps:0").error, "ResourceExhausted: out of memory");
  for (int i = 0; i < 250 && cluster.ps0().failure().empty(); ++i) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_EQ(cluster.ps0().failure(), "task ps:0 failed: ResourceExhausted: out of memory");
  EXPECT_THROW(cluster.ps0().insert_key_value("k", "v"), Unavailable);
  cluster.worker0().insert_key_value("k", "v");
  EXPECT_EQ(cluster.chief().get_key_value("k", milliseconds(1000)), "v");

  // worker:1 registers and then sends no heartbeat: lost after heartbeat_timeout (1000 ms).
  RawTask silent(cluster.service.address(), "worker:1", 9);
  ASSERT_TRUE(silent.registered().ok());
  auto start = std::chrono::steady_clock::now();
  TaskStates now = cluster.chief().task_states();
  while (now.of("worker:1").state == TaskState::kConnected &&
         std::chrono::steady_clock::now() - start < milliseconds(5000)) {
    now = cluster.chief().wait_for_task_states(now.generation, milliseconds(5000));
  }
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(900));
  EXPECT_EQ(now.of("worker:1").state, TaskState::kLost);
  EXPECT_THAT(now.of("worker:1").error, HasSubstr("no heartbeat for"));
  pb::HeartbeatRequest late;
  *late.mutable_caller() = caller("worker:1", 9);
  grpc::Status s =
      raw_call(cluster.service.address(), "Heartbeat", late.SerializeAsString(), kToken);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::ABORTED);
  EXPECT_THAT(s.error_message(), HasSubstr("task worker:1 failed: no heartbeat for"));
  EXPECT_EQ(cluster.service.failure(), "");
  // A wait for a change that does not come ends with the states as they are.
  TaskStates same = cluster.chief().wait_for_task_states(now.generation, milliseconds(200));
  EXPECT_EQ(same.generation, now.generation);
}

TEST(CoordinationRecoverable, BarriersWaitForTheirParticipantsAndFailNamingALostOne) {
  PsCluster cluster;
  // Only the two named tasks meet; worker:1 never registered and is not waited for.
  auto other = std::async(std::launch::async, [&] {
    cluster.worker0().wait_at_barrier("start", milliseconds(5000), {"chief:0", "worker:0"});
  });
  cluster.chief().wait_at_barrier("start", milliseconds(5000), {"worker:0", "chief:0"});
  EXPECT_NO_THROW(other.get());
  try {
    cluster.ps0().wait_at_barrier("b", milliseconds(1000), {"chief:0", "worker:0"});
    FAIL() << "a caller outside the participants was admitted";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr("barrier 'b': the caller ps:0 is not one of its participants "
                                    "chief:0, worker:0"));
  }
  auto pending = std::async(std::launch::async, [&] {
    cluster.chief().wait_at_barrier("c", milliseconds(30000), {"chief:0", "ps:0"});
  });
  EXPECT_TRUE(cluster.service.wait_for_pending_call("chief:0", "Barrier", milliseconds(10000)));
  try {
    cluster.ps0().wait_at_barrier("c", milliseconds(1000), {"chief:0", "ps:0", "worker:0"});
    FAIL() << "a barrier with other participants was admitted";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr("ps:0 names the participants chief:0, ps:0, worker:0, an "
                                    "earlier caller chief:0, ps:0"));
  }
  auto start = std::chrono::steady_clock::now();
  cluster.ps0().report_error("killed");
  try {
    pending.get();
    FAIL() << "the barrier did not end";
  } catch (const FailedPrecondition& e) {
    EXPECT_THAT(e.what(), HasSubstr("barrier 'c' cannot complete: its participant ps:0 was lost: "
                                    "killed"));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(2000));
  // A barrier naming a lost task fails at once; one without it passes.
  EXPECT_THROW(cluster.chief().wait_at_barrier("d", milliseconds(30000), {"chief:0", "ps:0"}),
               FailedPrecondition);
  EXPECT_THROW(cluster.chief().wait_at_barrier("d", milliseconds(30000)), FailedPrecondition);
  EXPECT_EQ(cluster.chief().failure(), "");
}

TEST(CoordinationRecoverable, TheChiefsFailureStillEndsEveryTask) {
  PsCluster cluster;
  auto waiting = std::async(std::launch::async, [&] {
    return cluster.worker0().get_key_value("never", milliseconds(30000));
  });
  EXPECT_TRUE(cluster.service.wait_for_pending_call("worker:0", "Get", milliseconds(10000)));
  cluster.chief().report_error("Internal: the coordinator crashed");
  try {
    waiting.get();
    FAIL() << "the wait did not end";
  } catch (const Unavailable& e) {
    EXPECT_THAT(e.what(), HasSubstr("task chief:0 failed: Internal: the coordinator crashed"));
  }
  EXPECT_EQ(cluster.service.failure(), "task chief:0 failed: Internal: the coordinator crashed");
}

TEST(CoordinationRecoverable, TheServiceStopsWaitingForLostTasksToLeave) {
  PsCluster cluster;
  {
    RawTask worker1(cluster.service.address(), "worker:1", 7);
    ASSERT_TRUE(worker1.registered().ok());
    EXPECT_TRUE(cluster.service.wait_for_pending_call("worker:1", "Watch", milliseconds(10000)));
  }  // its connection breaks: lost
  EXPECT_FALSE(cluster.service.wait_for_tasks_to_leave(milliseconds(100)));
  std::vector<std::future<void>> leaving;
  for (auto& c : cluster.clients) {
    leaving.push_back(std::async(std::launch::async, [&c] {
      c->wait_at_barrier("end", milliseconds(5000), {"chief:0", "worker:0", "ps:0"});
    }));
  }
  for (auto& f : leaving) f.get();
  cluster.clients.clear();  // each leaves
  EXPECT_TRUE(cluster.service.wait_for_tasks_to_leave(milliseconds(5000)));
  EXPECT_EQ(cluster.service.failure(), "");
}

using CoordinationTls = weft::testing::TlsFilesTest;

TEST_F(CoordinationTls, MutualTlsAcceptsSignedClientsAndRefusesOthers) {
  CoordinationOptions served = options();
  served.tls = {file("server.pem"), file("server.key"), file("ca.pem")};
  CoordinationService service("127.0.0.1:0", {"worker:0"}, served);

  CoordinationOptions signed_client = options();
  signed_client.tls = {file("client.pem"), file("client.key"), file("ca.pem")};
  CoordinationClient good("worker:0", "worker:0", service.address(), signed_client);
  good.connect(milliseconds(5000));
  good.insert_key_value("k", "v");
  EXPECT_EQ(good.get_key_value("k", milliseconds(1000)), "v");

  CoordinationOptions no_cert = options();
  no_cert.tls.ca_file = file("ca.pem");
  CoordinationClient anonymous("worker:0", "worker:0", service.address(), no_cert);
  EXPECT_THROW(anonymous.connect(milliseconds(1500)), DeadlineExceeded);
  CoordinationClient plain("worker:0", "worker:0", service.address(), options());
  EXPECT_THROW(plain.connect(milliseconds(1500)), DeadlineExceeded);

  CoordinationOptions missing = options();
  missing.tls = {file("absent.pem"), file("server.key"), ""};
  try {
    CoordinationService("127.0.0.1:0", {"worker:0"}, missing);
    FAIL() << "a missing certificate was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr("--tls-cert " + file("absent.pem")));
  }
}

}  // namespace
}  // namespace weft::distribute::coordination
