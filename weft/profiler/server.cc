#include "weft/profiler/server.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "weft/core/errors.h"
#include "weft/core/file_io.h"
#include "weft/core/trace_me.h"
#include "weft/distribute/internal/grpc_glue.h"
#include "weft/profiler/internal/limits.h"
#include "weft/profiler/internal/session.h"
#include "weft/profiler/profiler.grpc.pb.h"
#include "weft/profiler/trace_file.h"

namespace weft::profiler::server {
namespace {

namespace pb = ::weft::profiler;
using grpc::Status;
using grpc::StatusCode;
using RawProfiler = pb::Profiler::WithRawCallbackMethod_Ping<
    pb::Profiler::WithRawCallbackMethod_Trace<pb::Profiler::Service>>;

class Service final : public RawProfiler {
 public:
  explicit Service(ServerOptions options) : options_(std::move(options)) {
    if (options_.task.empty()) options_.task = io::host_name();
  }
  ~Service() override { end_captures(); }

  const std::string& task() const { return options_.task; }

  // Ends the captures in progress at once (each answers with what it has) and joins them; later
  // calls are refused. Before the server shuts down, so that they answer while it still can.
  void end_captures() {
    std::vector<std::thread> captures;
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      captures.swap(captures_);
    }
    cv_.notify_all();
    for (std::thread& t : captures) t.join();
  }

  grpc::ServerUnaryReactor* Ping(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer*,
                                 grpc::ByteBuffer* out) override {
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    if (auto refusal = distribute::internal::token_refusal(*ctx, options_.token)) {
      reactor->Finish(*refusal);
      return reactor;
    }
    pb::PingResponse answer;
    answer.set_now_ns(static_cast<uint64_t>(trace_now_ns()));
    answer.set_task(options_.task);
    *out = distribute::internal::buffer_of(answer.SerializeAsString());
    reactor->Finish(Status::OK);
    return reactor;
  }

  grpc::ServerUnaryReactor* Trace(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                  grpc::ByteBuffer* out) override {
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    if (auto refusal = distribute::internal::token_refusal(*ctx, options_.token)) {
      reactor->Finish(*refusal);
      return reactor;
    }
    auto request = std::make_shared<pb::TraceRequest>();
    if (!request->ParseFromString(distribute::internal::bytes_of(*in))) {
      reactor->Finish(Status(StatusCode::INVALID_ARGUMENT, "malformed request"));
      return reactor;
    }
    if (request->duration_ms() == 0 || request->duration_ms() > internal::kMaxDurationMs) {
      reactor->Finish(Status(StatusCode::INVALID_ARGUMENT,
                             "duration_ms " + std::to_string(request->duration_ms()) +
                                 " is outside 1.." + std::to_string(internal::kMaxDurationMs)));
      return reactor;
    }
    const int64_t wait_ns = static_cast<int64_t>(request->start_at_ns()) - trace_now_ns();
    if (wait_ns > int64_t{internal::kMaxDelayMs} * 1'000'000) {
      reactor->Finish(Status(StatusCode::INVALID_ARGUMENT,
                             "the capture would start " + std::to_string(wait_ns / 1'000'000) +
                                 " ms from now; at most " + std::to_string(internal::kMaxDelayMs) +
                                 " ms"));
      return reactor;
    }
    // The capture runs on a thread of its own: gRPC's callback threads must not block.
    std::lock_guard lock(mu_);
    if (stopping_) {
      reactor->Finish(Status(StatusCode::UNAVAILABLE, options_.task + "'s profiler is stopping"));
      return reactor;
    }
    captures_.emplace_back(
        [this, request, reactor, out] { reactor->Finish(capture(*request, out)); });
    return reactor;
  }

 private:
  Status capture(const pb::TraceRequest& request, grpc::ByteBuffer* out) {
    if (!wait_until(static_cast<int64_t>(request.start_at_ns()))) {
      return Status(StatusCode::UNAVAILABLE, options_.task + "'s profiler is stopping");
    }
    ProfilerOptions options;
    options.task = options_.task;
    options.host_tracer_level = request.host_tracer_level() == 0 ? 2 : request.host_tracer_level();
    try {
      internal::start_session(options, "the profiler server's capture (weft profile)");
    } catch (const Error& e) {
      return Status(e.code() == ErrorCode::kInvalidArgument ? StatusCode::INVALID_ARGUMENT
                                                            : StatusCode::FAILED_PRECONDITION,
                    e.message());
    }
    wait_until(trace_now_ns() + int64_t{request.duration_ms()} * 1'000'000);
    TaskTrace trace = internal::stop_session();
    std::vector<std::string> warnings;
    const std::string json = task_trace_json(trace, &warnings);
    pb::TraceResponse answer;
    answer.set_task(options_.task);
    answer.set_trace_json_gz(gzip_compress(json));
    *out = distribute::internal::buffer_of(answer.SerializeAsString());
    return Status::OK;
  }

  // Waits until the steady clock reaches `ns`; false when the service stops first.
  bool wait_until(int64_t ns) {
    std::unique_lock lock(mu_);
    const auto deadline = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(ns));
    return !cv_.wait_until(lock, deadline, [this] { return stopping_; });
  }

  ServerOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::vector<std::thread> captures_;  // joined when the service ends
};

struct Running {
  std::unique_ptr<Service> service;
  std::unique_ptr<grpc::Server> server;
  std::string address;
};

std::mutex running_mu;
// Guarded by running_mu. Not destroyed at exit (gRPC may be gone by then): stop() ends it.
Running* running = nullptr;

}  // namespace

int start(int port, const ServerOptions& options) {
  std::lock_guard lock(running_mu);
  WEFT_CHECK(!running, FailedPrecondition)
      << "profiler::server::start(" << port << "): this process already serves the profiler at "
      << running->address;
  WEFT_CHECK(!options.token.empty(), InvalidArgument)
      << "profiler::server::start: the cluster token is empty (set "
      << distribute::coordination::kTokenEnvironmentVariable << "; weft launch makes one)";
  WEFT_CHECK(port >= 0 && port <= 65535, InvalidArgument)
      << "profiler::server::start: port " << port << " is outside 0..65535";
  distribute::internal::quiet_grpc_logs();
  auto r = std::make_unique<Running>();
  r->service = std::make_unique<Service>(options);
  const std::string what = "the profiler server of " + options.task;
  const std::string host =
      options.host.find(':') != std::string::npos ? "[" + options.host + "]" : options.host;
  grpc::ServerBuilder builder;
  int bound = 0;
  builder.AddListeningPort(host + ":" + std::to_string(port),
                           distribute::internal::server_credentials(options.tls, what), &bound);
  // SO_REUSEPORT: `weft launch` holds the port it gives until this binds it (local_ports.h).
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 1);
  builder.SetMaxSendMessageSize(static_cast<int>(internal::kMaxTraceBytes));
  builder.RegisterService(r->service.get());
  r->server = builder.BuildAndStart();
  WEFT_CHECK(r->server != nullptr && bound != 0, Unavailable)
      << what << ": cannot listen on " << host << ":" << port
      << " (is the address this host's own, and the port free?)";
  r->address = host + ":" + std::to_string(bound);
  if (options.publish_to != nullptr) {
    options.publish_to->insert_key_value(kAddressKeyPrefix + r->service->task(),
                                         "grpc://" + r->address);
  }
  running = r.release();
  return bound;
}

void stop() {
  std::unique_ptr<Running> r;
  {
    std::lock_guard lock(running_mu);
    r.reset(running);
    running = nullptr;
  }
  if (!r) return;
  r->service->end_captures();
  r->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  r->server->Wait();
}

std::string address() {
  std::lock_guard lock(running_mu);
  return running ? running->address : "";
}

}  // namespace weft::profiler::server
