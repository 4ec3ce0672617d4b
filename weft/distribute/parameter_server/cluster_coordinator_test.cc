// ClusterCoordinator with worker services on 127.0.0.1 in this process (real gRPC), in the manner
// of TensorFlow's cluster_coordinator_test and fault_tolerance_test: closures run on the workers
// and return their outputs; per-worker datasets give each worker its own pipeline; the first
// error is raised at join after the queued closures are cancelled; a closure whose worker cannot
// be reached runs on another one, and the worker takes closures again once it is back; when
// every worker stays lost, join says so. (Real processes killed mid-step are the CLI tests'.)
#include "weft/distribute/parameter_server/cluster_coordinator.h"

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <future>
#include <mutex>
#include <set>
#include <thread>

#include "weft/core/errors.h"
#include "weft/distribute/cluster/local_ports.h"
#include "weft/distribute/parameter_server/worker_service.h"
#include "weft/ops/elementwise.h"
#include "weft/testing/raw_grpc.h"
#include "weft/testing/tls_files.h"

namespace weft::distribute {
namespace {

using parameter_server::WorkerService;
using std::chrono::milliseconds;
using ::testing::HasSubstr;

constexpr const char* kToken = "0123456789abcdef";

parameter_server::ServiceOptions service_options() {
  parameter_server::ServiceOptions o;
  o.token = kToken;
  o.call_timeout = milliseconds(5000);
  o.function_wait = milliseconds(300);
  return o;
}

ClusterCoordinatorOptions coordinator_options() {
  ClusterCoordinatorOptions o;
  o.service = service_options();
  o.closure_timeout = milliseconds(30000);
  o.worker_recovery_timeout = milliseconds(30000);
  return o;
}

// Worker i's pipeline: 1000 * i, 1000 * i + 1, ... (so an element names the worker it came from).
DatasetFunction numbered_data() {
  return register_dataset_function("test/numbered", [](const InputContext& context) {
    const int64_t start = 1000 * context.input_pipeline_id;
    EXPECT_EQ(context.num_input_pipelines, 2);
    return data::Dataset::range(start, start + 500);
  });
}

// The next element of the worker's iterator, after `sleep_ms` (argument 1).
RemoteFunction next_element() {
  return register_function("test/next_element", [](const ClosureArgs& args) {
    std::this_thread::sleep_for(milliseconds(args.tensor(1).item<int64_t>()));
    std::optional<data::Element> e = args.iterator(0).next();
    WEFT_CHECK(e.has_value(), OutOfRange) << "the worker's data ran out";
    return std::vector<Tensor>{(*e)[0]};
  });
}

Tensor ms(int64_t v) { return Tensor::scalar(v, kInt64); }

struct Workers {
  Workers() {
    for (int i = 0; i < 2; ++i) {
      services.push_back(std::make_unique<WorkerService>(
          "127.0.0.1:0", "worker:" + std::to_string(i), service_options()));
    }
  }
  std::vector<std::pair<std::string, std::string>> addresses() const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& s : services) out.emplace_back(s->task(), s->address());
    return out;
  }
  std::vector<std::unique_ptr<WorkerService>> services;
};

TEST(ClusterCoordinator, ClosuresRunOnTheWorkersWithTheirOwnPerWorkerIterators) {
  Workers workers;
  ClusterCoordinator coordinator(workers.addresses(), coordinator_options());
  EXPECT_EQ(coordinator.num_workers(), 2);
  PerWorkerValues iterators = coordinator.create_per_worker_dataset(numbered_data());
  std::vector<RemoteValue> results;
  for (int i = 0; i < 40; ++i)
    results.push_back(coordinator.schedule(next_element(), {iterators, ms(5)}));
  coordinator.join();
  EXPECT_TRUE(coordinator.done());
  std::set<int64_t> seen;
  std::vector<std::set<int64_t>> by_worker(2);
  for (auto& r : results) {
    ASSERT_TRUE(r.ready());
    int64_t v = r.fetch()[0].item<int64_t>();
    EXPECT_TRUE(seen.insert(v).second) << v << " was read twice";
    ASSERT_TRUE(v / 1000 == 0 || v / 1000 == 1) << v;
    by_worker[static_cast<size_t>(v / 1000)].insert(v % 1000);
  }
  // Each worker read its own pipeline from its start, once per closure it ran.
  for (int w = 0; w < 2; ++w) {
    const auto& got = by_worker[static_cast<size_t>(w)];
    EXPECT_EQ(static_cast<int64_t>(got.size()),
              workers.services[static_cast<size_t>(w)]->closures_run());
    EXPECT_GT(got.size(), 0u) << "worker " << w << " ran no closure";
    int64_t expected = 0;
    for (int64_t v : got) EXPECT_EQ(v, expected++);
  }
  EXPECT_EQ(workers.services[0]->closures_run() + workers.services[1]->closures_run(), 40);
}

// A closure commits only on the ps tasks it staged updates on, which its worker names: one that
// staged none commits nowhere, so a ps task it does not use may be down (here ps:0's address,
// where nothing serves). Its staleness counts the other closures' updates: none here.
TEST(ClusterCoordinator, AClosureCommitsOnlyWhereItStagedUpdates) {
  Workers workers;
  ReservedLocalPorts reserved(1);
  ClusterCoordinator coordinator(workers.addresses(), coordinator_options(),
                                 {{"ps:0", reserved.address(0)}});
  RemoteFunction answer = register_function(
      "test/forty_two", [](const ClosureArgs&) { return std::vector<Tensor>{ms(42)}; });
  std::vector<RemoteValue> results;
  for (int i = 0; i < 3; ++i) results.push_back(coordinator.schedule(answer));
  coordinator.join();
  for (const RemoteValue& r : results) {
    EXPECT_EQ(r.fetch()[0].item<int64_t>(), 42);
    EXPECT_GE(r.staleness(), 0);
    EXPECT_LE(r.staleness(), 2);
  }
}

TEST(ClusterCoordinator, TheFirstErrorIsRaisedAtJoinAfterTheQueuedClosuresAreCancelled) {
  Workers workers;
  ClusterCoordinator coordinator(workers.addresses(), coordinator_options());
  auto fails_at_three = register_function("test/fails_at_three", [](const ClosureArgs& args) {
    const int64_t i = args.tensor(0).item<int64_t>();
    std::this_thread::sleep_for(milliseconds(20));
    WEFT_CHECK(i != 3, InvalidArgument) << "closure 3 fails on purpose";
    return std::vector<Tensor>{add(args.tensor(0), Tensor::scalar(int64_t{1}, kInt64))};
  });
  std::vector<RemoteValue> results;
  for (int64_t i = 0; i < 30; ++i) results.push_back(coordinator.schedule(fails_at_three, {ms(i)}));
  try {
    coordinator.join();
    FAIL() << "join did not raise the closure's error";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr("closure 3 fails on purpose"));
  }
  // Nothing runs after join: the count of closures run stays as it is.
  const int64_t ran = workers.services[0]->closures_run() + workers.services[1]->closures_run();
  EXPECT_LT(ran, 30);
  int done = 0, cancelled = 0;
  for (int64_t i = 0; i < 30; ++i) {
    ASSERT_TRUE(results[static_cast<size_t>(i)].ready()) << i;
    try {
      EXPECT_EQ(results[static_cast<size_t>(i)].fetch()[0].item<int64_t>(), i + 1);
      ++done;
    } catch (const InvalidArgument&) {
      EXPECT_EQ(i, 3);
    } catch (const Cancelled& e) {
      EXPECT_THAT(e.what(), HasSubstr("was cancelled"));
      ++cancelled;
    }
  }
  EXPECT_GT(cancelled, 0);
  EXPECT_EQ(done + 1, ran);
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(workers.services[0]->closures_run() + workers.services[1]->closures_run(), ran);
  // The error was raised once and cleared: the coordinator schedules again.
  EXPECT_NO_THROW(coordinator.join());
  RemoteValue again = coordinator.schedule(fails_at_three, {ms(10)});
  EXPECT_EQ(again.fetch()[0].item<int64_t>(), 11);
  EXPECT_TRUE(coordinator.done());
}

TEST(ClusterCoordinator, AnUnknownFunctionOrDatasetFunctionIsTheClosuresErrorNamingIt) {
  Workers workers;
  ClusterCoordinator coordinator(workers.addresses(), coordinator_options());
  RemoteValue r = coordinator.schedule(RemoteFunction{"test/never_registered"});
  try {
    coordinator.join();
    FAIL() << "an unknown function ran";
  } catch (const FailedPrecondition& e) {
    EXPECT_THAT(e.what(),
                HasSubstr("no function 'test/never_registered' is registered on worker:"));
  }
  EXPECT_THROW(r.fetch(), FailedPrecondition);
  PerWorkerValues missing = coordinator.create_per_worker_dataset(DatasetFunction{"test/no_data"});
  coordinator.schedule(next_element(), {missing, ms(0)});
  try {
    coordinator.join();
    FAIL() << "an unknown dataset function ran";
  } catch (const FailedPrecondition& e) {
    EXPECT_THAT(e.what(), HasSubstr("no dataset function 'test/no_data' is registered on worker:"));
  }
  EXPECT_THROW(coordinator.schedule(next_element(), {PerWorkerValues{99}, ms(0)}), InvalidArgument);
  // A function registered while its closure waits on a worker (within function_wait) runs.
  RemoteValue late = coordinator.schedule(RemoteFunction{"test/registered_late"});
  std::this_thread::sleep_for(milliseconds(50));
  register_function("test/registered_late",
                    [](const ClosureArgs&) { return std::vector<Tensor>{full({1}, 7.0f)}; });
  coordinator.join();
  EXPECT_EQ(late.fetch()[0].to_vector<float>(), std::vector<float>{7});
}

// TensorFlow's fault_tolerance_test, worker preemption: a worker that cannot be reached leaves
// its closures to the others and takes closures again once it is back (its per-worker dataset
// made again, from its start).
TEST(ClusterCoordinator, ALostWorkersClosuresRunElsewhereAndItRejoinsWhenBack) {
  ReservedLocalPorts reserved(1);  // worker:1's address, where nothing serves yet
  WorkerService worker0("127.0.0.1:0", "worker:0", service_options());
  ClusterCoordinator coordinator(
      {{"worker:0", worker0.address()}, {"worker:1", reserved.address(0)}}, coordinator_options());
  PerWorkerValues iterators = coordinator.create_per_worker_dataset(numbered_data());
  std::vector<RemoteValue> first;
  for (int i = 0; i < 10; ++i)
    first.push_back(coordinator.schedule(next_element(), {iterators, ms(1)}));
  coordinator.join();
  // worker:0 read its pipeline's first ten elements, once each (a closure worker:1 could not
  // run went back to the queue, so their order among the closures may differ).
  std::set<int64_t> read;
  for (auto& r : first) read.insert(r.fetch()[0].item<int64_t>());
  EXPECT_EQ(read, (std::set<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(worker0.closures_run(), 10);

  // worker:1 comes up; closures that take long enough go to both workers.
  WorkerService worker1(reserved.address(0), "worker:1", service_options());
  std::vector<RemoteValue> second;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (worker1.closures_run() == 0 && std::chrono::steady_clock::now() < deadline) {
    for (int i = 0; i < 4; ++i)
      second.push_back(coordinator.schedule(next_element(), {iterators, ms(20)}));
    coordinator.join();
  }
  EXPECT_GT(worker1.closures_run(), 0) << "worker:1 never took a closure after coming back";
  std::set<int64_t> from1;
  for (auto& r : second) {
    int64_t v = r.fetch()[0].item<int64_t>();
    if (v >= 1000) from1.insert(v - 1000);
  }
  ASSERT_FALSE(from1.empty());
  EXPECT_EQ(*from1.begin(), 0);  // its pipeline from the start
  EXPECT_EQ(static_cast<int64_t>(from1.size()), worker1.closures_run());
}

// A worker that stops taking closures (it leaves the cluster: ParameterServerStrategy::leave)
// finishes the one it runs, whose result counts, and refuses the others, which the other worker
// runs: every closure's result arrives once.
TEST(ClusterCoordinator, AWorkerThatStopsTakingClosuresFinishesItsOwnAndTheOtherRunsTheRest) {
  Workers workers;
  ClusterCoordinator coordinator(workers.addresses(), coordinator_options());
  PerWorkerValues iterators = coordinator.create_per_worker_dataset(numbered_data());
  std::vector<RemoteValue> results;
  for (int i = 0; i < 20; ++i)
    results.push_back(coordinator.schedule(next_element(), {iterators, ms(50)}));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (workers.services[1]->closures_run() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  workers.services[1]->stop_taking_closures();  // returns once its closure has
  const int64_t ran_by_1 = workers.services[1]->closures_run();
  EXPECT_GE(ran_by_1, 1);
  coordinator.join();
  EXPECT_EQ(workers.services[1]->closures_run(), ran_by_1)
      << "worker:1 ran closures after it stopped";
  EXPECT_EQ(workers.services[0]->closures_run() + ran_by_1, 20);
  std::set<int64_t> seen;
  int64_t from_1 = 0;
  for (auto& r : results) {
    const int64_t v = r.fetch()[0].item<int64_t>();
    EXPECT_TRUE(seen.insert(v).second) << v << " arrived twice";
    from_1 += v >= 1000 ? 1 : 0;
  }
  EXPECT_EQ(from_1, ran_by_1);
}

// Backup runs (the backup workers of synchronous training): a closure running on a straggler runs
// on a worker with nothing queued too, the first run to return is the closure's, and join() does
// not wait for the straggler's. worker:1 is the straggler: its runs wait until the test lets them
// go. The test's task states hold worker:0 back (lost) until worker:1 runs the closure, so that
// worker:0's run is the backup.
TEST(ClusterCoordinator, AClosureWithBackupRunsIsTheFirstRunsAndTheStragglerIsNotWaitedFor) {
  struct Straggling {
    std::mutex mu;
    std::condition_variable cv;
    bool released = false;
    bool straggler_runs = false;
    coordination::TaskStates states;
    int calls = 0;  // of task_states
  };
  static Straggling* straggling = nullptr;
  Straggling state;
  straggling = &state;
  state.states = {1,
                  {{"worker:0", coordination::TaskState::kLost, 1, "held back by the test"},
                   {"worker:1", coordination::TaskState::kConnected, 1, ""}}};
  auto release = [&] {
    std::lock_guard lock(state.mu);
    state.released = true;
    state.cv.notify_all();
  };
  Workers workers;
  struct Releasing {
    std::function<void()> release;
    ~Releasing() { release(); }  // before the workers stop: worker:1's executor waits on it
  } releasing{release};
  ClusterCoordinatorOptions options = coordinator_options();
  options.task_states = [&](uint64_t after, milliseconds timeout) {
    std::unique_lock lock(state.mu);
    ++state.calls;
    state.cv.notify_all();
    state.cv.wait_for(lock, timeout, [&] { return state.states.generation > after; });
    return state.states;
  };
  ClusterCoordinator coordinator(workers.addresses(), options);
  auto wait = [&](const char* what, const std::function<bool()>& done) {
    std::unique_lock lock(state.mu);
    ASSERT_TRUE(state.cv.wait_for(lock, std::chrono::seconds(20), done)) << what;
  };
  wait("the coordinator never took the task states", [&] { return state.calls >= 2; });
  PerWorkerValues iterators = coordinator.create_per_worker_dataset(numbered_data());
  RemoteFunction straggle = register_function("test/straggle", [](const ClosureArgs& args) {
    const int64_t v = (*args.iterator(0).next())[0].item<int64_t>();
    Straggling& s = *straggling;
    std::unique_lock lock(s.mu);
    if (v >= 1000) {
      s.straggler_runs = true;
      s.cv.notify_all();
      s.cv.wait_for(lock, std::chrono::seconds(60), [&] { return s.released; });
    }
    return std::vector<Tensor>{Tensor::scalar(v, kInt64)};
  });
  const ScheduleOptions backed_up{.commit = false, .backup_runs = true};
  EXPECT_THROW(coordinator.schedule(straggle, {iterators}, {.backup_runs = true}), InvalidArgument);
  RemoteValue r = coordinator.schedule(straggle, {iterators}, backed_up);
  wait("worker:1 never ran the closure", [&] { return state.straggler_runs; });
  {
    std::lock_guard lock(state.mu);
    state.states = {2,
                    {{"worker:0", coordination::TaskState::kConnected, 1, ""},
                     {"worker:1", coordination::TaskState::kConnected, 1, ""}}};
    state.cv.notify_all();
  }
  auto joined = std::async(std::launch::async, [&] { coordinator.join(); });
  ASSERT_EQ(joined.wait_for(std::chrono::seconds(20)), std::future_status::ready)
      << "join waited for the straggler's run";
  joined.get();
  EXPECT_EQ(r.fetch()[0].item<int64_t>(), 0) << "not worker:0's run";
  EXPECT_TRUE(r.won_by_backup());
  EXPECT_EQ(workers.services[1]->closures_run(), 0);  // its run has not returned

  // Let go, worker:1's run returns and is given up: the closure keeps worker:0's outputs, and
  // closures go on running.
  release();
  std::vector<RemoteValue> more;
  for (int i = 0; i < 6; ++i)
    more.push_back(coordinator.schedule(straggle, {iterators}, backed_up));
  coordinator.join();
  for (const RemoteValue& v : more) EXPECT_EQ(v.fetch().size(), 1u);
  EXPECT_EQ(r.fetch()[0].item<int64_t>(), 0);
  EXPECT_TRUE(r.won_by_backup());
}

TEST(ClusterCoordinator, WhenEveryWorkerStaysLostJoinSaysSoNamingThem) {
  ReservedLocalPorts reserved(2);
  ClusterCoordinatorOptions o = coordinator_options();
  o.worker_recovery_timeout = milliseconds(500);
  ClusterCoordinator coordinator(
      {{"worker:0", reserved.address(0)}, {"worker:1", reserved.address(1)}}, o);
  auto start = std::chrono::steady_clock::now();
  RemoteValue r = coordinator.schedule(next_element(), {ms(0), ms(0)});
  RemoteValue later = coordinator.schedule(next_element(), {ms(0), ms(0)});
  try {
    coordinator.join();
    FAIL() << "join returned without a worker";
  } catch (const Unavailable& e) {
    EXPECT_THAT(e.what(), HasSubstr("every worker was lost and none came back within 500 ms: "
                                    "worker:0 ("));
    EXPECT_THAT(e.what(), HasSubstr("; worker:1 ("));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  // One closure fails naming the workers, the other is cancelled (which one depends on the order
  // they went back to the queue in).
  int unavailable = 0, cancelled = 0;
  for (RemoteValue* v : {&r, &later}) {
    try {
      v->fetch();
    } catch (const Unavailable& e) {
      EXPECT_THAT(e.what(), HasSubstr("every worker was lost"));
      ++unavailable;
    } catch (const Cancelled&) {
      ++cancelled;
    }
  }
  EXPECT_EQ(unavailable, 1);
  EXPECT_EQ(cancelled, 1);
  EXPECT_THROW(coordinator.schedule(next_element(), {ms(0), ms(0)}), Unavailable);
}

// A call with bytes that are no message to a worker's `method`: the status it answered.
grpc::Status raw_call(const std::string& address, const std::string& method, const char* token) {
  return weft::testing::raw_call(address, "/weft.ps.Worker/" + method,
                                 "\xff\xff\xff\xff not a protobuf", token);
}

TEST(ClusterCoordinator, WorkersCheckTheTokenBeforeTheyParseARequest) {
  WorkerService worker("127.0.0.1:0", "worker:0", service_options());
  for (const char* method : {"RunClosure", "CreatePerWorker"}) {
    SCOPED_TRACE(method);
    EXPECT_EQ(raw_call(worker.address(), method, nullptr).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(raw_call(worker.address(), method, "0123456789abcdeX").error_message(),
              "the call's cluster token is wrong");
    grpc::Status parsed = raw_call(worker.address(), method, kToken);
    EXPECT_EQ(parsed.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(parsed.error_message(), "malformed request");
  }
  EXPECT_EQ(worker.closures_run(), 0);
  EXPECT_THROW(WorkerService("127.0.0.1:0", "worker:0", {}), InvalidArgument);
  EXPECT_THROW(ClusterCoordinator({}, coordinator_options()), InvalidArgument);
}

// A worker refuses a message over its limit (RESOURCE_EXHAUSTED, from gRPC before it is parsed)
// and listens only on its own address.
TEST(ClusterCoordinator, WorkersRefuseOversizedCallsAndListenOnlyOnTheirOwnAddress) {
  WorkerService worker("127.0.0.2:0", "worker:0", service_options());
  ASSERT_EQ(worker.address().rfind("127.0.0.2:", 0), 0u) << worker.address();
  const std::string port = worker.address().substr(worker.address().find(':') + 1);
  grpc::Status huge =
      weft::testing::raw_call(worker.address(), "/weft.ps.Worker/RunClosure",
                              std::string(parameter_server::kMaxMessageBytes + 1, 'x'), kToken);
  EXPECT_EQ(huge.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << huge.error_message();
  EXPECT_EQ(raw_call("127.0.0.1:" + port, "RunClosure", kToken).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(raw_call(worker.address(), "RunClosure", kToken).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);  // reached: an empty request is malformed
  EXPECT_EQ(worker.closures_run(), 0);
}

// done() raises the first error as join() does, once: then it is cleared.
TEST(ClusterCoordinator, DoneRaisesTheFirstErrorOnceAsJoinDoes) {
  Workers workers;
  ClusterCoordinator coordinator(workers.addresses(), coordinator_options());
  auto fails = register_function("test/fails", [](const ClosureArgs& args) {
    WEFT_CHECK(args.size() > 1, InvalidArgument) << "fails on purpose";
    return std::vector<Tensor>{};
  });
  RemoteValue failed = coordinator.schedule(fails, {ms(0)});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!failed.ready() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  ASSERT_TRUE(failed.ready());
  try {
    coordinator.done();
    FAIL() << "done() did not raise the closure's error";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr("fails on purpose"));
  }
  EXPECT_TRUE(coordinator.done());
  EXPECT_NO_THROW(coordinator.join());
}

// schedule() waits while max_queued_closures closures are queued, and goes on once a worker
// takes one.
TEST(ClusterCoordinator, ScheduleWaitsWhileTheQueueIsFull) {
  static std::atomic<int> running{0};
  static std::atomic<bool> released{false};
  running = 0;
  released = false;
  auto held = register_function("test/held", [](const ClosureArgs&) {
    ++running;
    while (!released) std::this_thread::sleep_for(milliseconds(2));
    return std::vector<Tensor>{ms(1)};
  });
  Workers workers;
  ClusterCoordinatorOptions options = coordinator_options();
  options.max_queued_closures = 2;
  ClusterCoordinator coordinator(workers.addresses(), options);
  std::vector<RemoteValue> results;
  for (int i = 0; i < 2; ++i) results.push_back(coordinator.schedule(held));  // both run
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (running < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(2));
  }
  ASSERT_EQ(running, 2);
  for (int i = 0; i < 2; ++i) results.push_back(coordinator.schedule(held));  // the queue is full
  auto third = std::async(std::launch::async, [&] { return coordinator.schedule(held); });
  EXPECT_EQ(third.wait_for(milliseconds(300)), std::future_status::timeout)
      << "schedule() returned with the queue full";
  released = true;
  results.push_back(third.get());
  coordinator.join();
  for (const RemoteValue& r : results) EXPECT_EQ(r.fetch()[0].item<int64_t>(), 1);
  EXPECT_EQ(workers.services[0]->closures_run() + workers.services[1]->closures_run(), 5);
}

using ClusterCoordinatorTls = weft::testing::TlsFilesTest;

// A worker with mutual TLS runs the closures of a coordinator holding a certificate the CA
// signed; a coordinator without one never reaches it.
TEST_F(ClusterCoordinatorTls, WorkersWithMutualTlsServeSignedCoordinatorsOnly) {
  parameter_server::ServiceOptions served = service_options();
  served.tls = {file("server.pem"), file("server.key"), file("ca.pem")};
  WorkerService worker("127.0.0.1:0", "worker:0", served);
  auto twice = register_function("test/twice", [](const ClosureArgs& args) {
    return std::vector<Tensor>{add(args.tensor(0), args.tensor(0))};
  });
  ClusterCoordinatorOptions signed_options = coordinator_options();
  signed_options.service.tls = {file("client.pem"), file("client.key"), file("ca.pem")};
  {
    ClusterCoordinator coordinator({{"worker:0", worker.address()}}, signed_options);
    EXPECT_EQ(coordinator.schedule(twice, {ms(21)}).fetch()[0].item<int64_t>(), 42);
  }
  ClusterCoordinatorOptions anonymous = coordinator_options();
  anonymous.service.tls.ca_file = file("ca.pem");
  anonymous.worker_recovery_timeout = milliseconds(500);
  ClusterCoordinator refused({{"worker:0", worker.address()}}, anonymous);
  refused.schedule(twice, {ms(1)});
  EXPECT_THROW(refused.join(), Unavailable);
  EXPECT_EQ(worker.closures_run(), 1);
}

}  // namespace
}  // namespace weft::distribute
