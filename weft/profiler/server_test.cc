// The profiler server and client in one process: a capture from outside the training loop, from
// a common start, with the clock offset measured; the token checked (none, wrong); the server
// reachable on its own address only; one server per process.
#include "weft/profiler/server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "weft/core/errors.h"
#include "weft/distribute/coordination/client.h"
#include "weft/distribute/coordination/service.h"
#include "weft/profiler/client.h"
#include "weft/profiler/profiler.h"
#include "weft/profiler/trace.h"
#include "weft/profiler/trace_file.h"
#include "weft/testing/chrome_trace.h"

namespace weft::profiler {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

class ProfilerServer : public ::testing::Test {
 protected:
  void SetUp() override {
    logdir_ = fs::path(::testing::TempDir()) / ("profiler_server_" + std::to_string(getpid()));
    fs::remove_all(logdir_);
    port_ = server::start(0, {.task = "worker:7", .token = "s3cret"});
    // A training loop's stand-in: steps marked as fit marks them.
    loop_ = std::thread([this] {
      for (int64_t s = 1; running_; ++s) {
        Trace step("train", {.step_num = s});
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    });
  }
  void TearDown() override {
    running_ = false;
    loop_.join();
    server::stop();
    fs::remove_all(logdir_);
  }
  std::string hosts(const std::string& host = "127.0.0.1") const {
    return "grpc://" + host + ":" + std::to_string(port_);
  }
  fs::path logdir_;
  int port_ = 0;
  std::atomic<bool> running_{true};
  std::thread loop_;
};

TEST_F(ProfilerServer, AClientCapturesTheTaskFromOutsideOnItsClock) {
  EXPECT_EQ(server::address(), "127.0.0.1:" + std::to_string(port_));
  const std::string run = client::trace(hosts(), logdir_.string(), 300, {.token = "s3cret"});
  EXPECT_EQ(fs::path(run).parent_path(), logdir_ / "plugins" / "profile");
  std::ifstream in(fs::path(run) / "worker_7.trace.json.gz", std::ios::binary);
  ASSERT_TRUE(in.good()) << run;
  std::string gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const json doc = json::parse(gzip_decompress(gz, run));
  EXPECT_THAT(weft::testing::chrome_trace_problems(doc), ::testing::IsEmpty());
  int steps = 0;
  for (const json& e : doc["traceEvents"]) steps += e.value("name", "") == "train";
  EXPECT_GE(steps, 20);  // 300 ms of 5 ms steps
  EXPECT_LE(steps, 61);
  const json& other = doc["otherData"];
  EXPECT_EQ(other["task"], "worker:7");
  const double window_ms =
      static_cast<double>(other["end_ns"].get<int64_t>() - other["start_ns"].get<int64_t>()) / 1e6;
  EXPECT_GE(window_ms, 300);
  EXPECT_LT(window_ms, 1000);
  EXPECT_LT(std::abs(other["clock_offset_ns"].get<int64_t>()), 2'000'000);  // one clock
  EXPECT_FALSE(fs::exists(fs::path(run) / "cluster.trace.json.gz"));  // one task: nothing to merge
}

TEST_F(ProfilerServer, ACallWithoutTheTokenOrElsewhereIsRefused) {
  try {
    client::trace(hosts(), logdir_.string(), 100, {.token = "wrong"});
    FAIL() << "a wrong token was accepted";
  } catch (const FailedPrecondition& e) {
    EXPECT_THAT(e.what(), HasSubstr("the call's cluster token is wrong"));
    EXPECT_THAT(e.what(), HasSubstr("127.0.0.1:" + std::to_string(port_)));
  }
  try {
    client::trace(hosts(), logdir_.string(), 100);
    FAIL() << "no token was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr("the cluster token is empty (set WEFT_CLUSTER_TOKEN"));
  }
  // Another local address than the server's own: nothing listens there.
  try {
    client::trace(hosts("127.0.0.2"), logdir_.string(), 100,
                  {.num_tracing_attempts = 1, .token = "s3cret"});
    FAIL() << "the server answered on 127.0.0.2";
  } catch (const Unavailable& e) {
    EXPECT_THAT(e.what(), HasSubstr("127.0.0.2:" + std::to_string(port_)));
  }
  EXPECT_FALSE(fs::exists(logdir_ / "plugins"));
  EXPECT_THROW(client::trace("grpc://", logdir_.string(), 100, {.token = "s3cret"}),
               InvalidArgument);
  EXPECT_THROW(client::trace(hosts(), logdir_.string(), 0, {.token = "s3cret"}), InvalidArgument);
  try {
    server::start(0, {.task = "again", .token = "s3cret"});
    FAIL() << "a second server was started";
  } catch (const FailedPrecondition& e) {
    EXPECT_THAT(e.what(), HasSubstr("already serves the profiler at 127.0.0.1:"));
  }
}

TEST_F(ProfilerServer, ACaptureRunningElsewhereInTheProcessIsNamed) {
  start(logdir_.string());  // profiler::start, still running when the client asks
  try {
    client::trace(hosts(), logdir_.string(), 100, {.num_tracing_attempts = 1, .token = "s3cret"});
    FAIL() << "two captures ran at once";
  } catch (const Unavailable& e) {
    EXPECT_THAT(e.what(), HasSubstr("already being captured, by profiler::start"));
  }
  stop(/*save=*/false);
}

TEST(ProfilerServerAddress, IsPublishedInTheClustersKeyValueStore) {
  using namespace distribute::coordination;
  using std::chrono::milliseconds;
  CoordinationOptions options;
  options.token = "s3cret";
  CoordinationService service("127.0.0.1:0", {"worker:0", "worker:1"}, options);
  CoordinationClient worker0("worker:0", "worker:0", service.address(), options);
  CoordinationClient worker1("worker:1", "worker:0", service.address(), options);
  worker0.connect(milliseconds(5000));
  worker1.connect(milliseconds(5000));
  const int port =
      server::start(0, {.task = "worker:1", .token = "s3cret", .publish_to = &worker1});
  // Another task of the job finds it there, and can call it.
  const std::string address = worker0.get_key_value(
      std::string(server::kAddressKeyPrefix) + "worker:1", milliseconds(5000));
  EXPECT_EQ(address, "grpc://127.0.0.1:" + std::to_string(port));
  const fs::path logdir =
      fs::path(::testing::TempDir()) / ("published_" + std::to_string(getpid()));
  const std::string run = client::trace(address, logdir.string(), 50, {.token = "s3cret"});
  EXPECT_TRUE(fs::exists(fs::path(run) / "worker_1.trace.json.gz")) << run;
  server::stop();
  fs::remove_all(logdir);
}

}  // namespace
}  // namespace weft::profiler
