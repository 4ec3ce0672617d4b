#include "weft/profiler/client.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "weft/core/errors.h"
#include "weft/core/trace_me.h"
#include "weft/distribute/internal/grpc_glue.h"
#include "weft/profiler/internal/limits.h"
#include "weft/profiler/profiler.grpc.pb.h"
#include "weft/profiler/trace_file.h"

namespace weft::profiler::client {
namespace {

namespace pb = ::weft::profiler;
constexpr int kPings = 16;

std::vector<std::string> addresses_of(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string a; std::getline(in, a, ',');) {
    a.erase(0, a.find_first_not_of(" \t"));
    a.erase(a.find_last_not_of(" \t") + 1);
    if (a.rfind("grpc://", 0) == 0) a = a.substr(7);
    WEFT_CHECK(!a.empty() && a.rfind(':') != std::string::npos && a.rfind(':') + 1 < a.size(),
               InvalidArgument)
        << "profiler::client::trace: \"" << list
        << "\" is not a list of grpc://host:port addresses";
    out.push_back(a);
  }
  WEFT_CHECK(!out.empty(), InvalidArgument) << "profiler::client::trace: no address given";
  return out;
}

// One task's server: its stub, its clock's offset to this one's, and what it sent.
struct Task {
  std::string address;
  std::unique_ptr<pb::Profiler::Stub> stub;
  int64_t offset_start = 0, offset_end = 0;  // server clock - client clock
  std::string name, json;
};

// A call that failed: whether another attempt may succeed, and why.
struct Failed {
  bool retry;
  std::string why;
};

void prepare(grpc::ClientContext& ctx, const TraceOptions& options,
             std::chrono::milliseconds timeout) {
  ctx.AddMetadata(distribute::internal::kTokenMetadataKey, options.token);
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
}

Failed failed(const Task& t, const char* what, const grpc::Status& s) {
  const bool retry = s.error_code() == grpc::StatusCode::UNAVAILABLE ||
                     s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
                     s.error_code() == grpc::StatusCode::FAILED_PRECONDITION;
  return {retry, "the profiler server at " + t.address + " refused " + what + ": " +
                     s.error_message() + " (" + std::to_string(s.error_code()) + ")"};
}

// The offset of t's clock to this one, from the ping of least round trip.
std::optional<Failed> ping(Task& t, const TraceOptions& options, int64_t* offset) {
  int64_t best_rtt = INT64_MAX;
  for (int k = 0; k < kPings; ++k) {
    grpc::ClientContext ctx;
    prepare(ctx, options, std::chrono::seconds(5));
    pb::PingResponse answer;
    const int64_t sent = trace_now_ns();
    grpc::Status s = t.stub->Ping(&ctx, pb::PingRequest(), &answer);
    const int64_t received = trace_now_ns();
    if (!s.ok()) return failed(t, "a ping", s);
    if (received - sent < best_rtt) {
      best_rtt = received - sent;
      *offset = static_cast<int64_t>(answer.now_ns()) - (sent + received) / 2;
    }
  }
  return std::nullopt;
}

// Pings every task, asks all to trace from one instant, pings again; every task in parallel.
std::optional<Failed> capture_all(std::vector<Task>& tasks, int duration_ms,
                                  const TraceOptions& options) {
  std::vector<std::future<std::optional<Failed>>> pings;
  for (Task& t : tasks) {
    pings.push_back(std::async(std::launch::async,
                               [&t, &options] { return ping(t, options, &t.offset_start); }));
  }
  std::optional<Failed> first;
  for (auto& p : pings) {
    if (auto f = p.get(); f && !first) first = f;
  }
  if (first) return first;
  const int64_t start = trace_now_ns() + int64_t{options.delay_ms} * 1'000'000;
  std::vector<std::future<std::optional<Failed>>> traces;
  for (Task& t : tasks) {
    traces.push_back(std::async(
        std::launch::async, [&t, &options, start, duration_ms]() -> std::optional<Failed> {
          pb::TraceRequest request;
          request.set_start_at_ns(static_cast<uint64_t>(start + t.offset_start));
          request.set_duration_ms(static_cast<uint32_t>(duration_ms));
          request.set_host_tracer_level(options.host_tracer_level);
          grpc::ClientContext ctx;
          prepare(ctx, options, std::chrono::milliseconds(options.delay_ms + duration_ms + 60'000));
          pb::TraceResponse answer;
          grpc::Status s = t.stub->Trace(&ctx, request, &answer);
          if (!s.ok()) return failed(t, "the capture", s);
          t.name = answer.task();
          t.json = gzip_decompress(answer.trace_json_gz(), "the trace of " + t.address);
          return ping(t, options, &t.offset_end);
        }));
  }
  for (auto& f : traces) {
    if (auto failure = f.get(); failure && !first) first = failure;
  }
  return first;
}

}  // namespace

std::string trace(const std::string& service_addr, const std::string& logdir, int duration_ms,
                  const TraceOptions& options) {
  WEFT_CHECK(duration_ms >= 1 && static_cast<uint32_t>(duration_ms) <= internal::kMaxDurationMs,
             InvalidArgument)
      << "profiler::client::trace: duration_ms " << duration_ms << " is outside 1.."
      << internal::kMaxDurationMs;
  WEFT_CHECK(options.host_tracer_level >= 1 && options.host_tracer_level <= 3, InvalidArgument)
      << "profiler::client::trace: host_tracer_level " << options.host_tracer_level
      << "; expected 1, 2 or 3";
  WEFT_CHECK(
      options.delay_ms >= 0 && static_cast<uint32_t>(options.delay_ms) <= internal::kMaxDelayMs,
      InvalidArgument)
      << "profiler::client::trace: delay_ms " << options.delay_ms << " is outside 0.."
      << internal::kMaxDelayMs;
  WEFT_CHECK(!options.token.empty(), InvalidArgument)
      << "profiler::client::trace: the cluster token is empty (set "
      << distribute::coordination::kTokenEnvironmentVariable << " to the job's)";
  WEFT_CHECK(!logdir.empty(), InvalidArgument) << "profiler::client::trace: logdir is empty";
  distribute::internal::quiet_grpc_logs();
  std::vector<Task> tasks;
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(static_cast<int>(internal::kMaxTraceBytes));
  for (const std::string& a : addresses_of(service_addr)) {
    Task t;
    t.address = a;
    t.stub = pb::Profiler::NewStub(
        grpc::CreateCustomChannel(a, distribute::internal::channel_credentials(options.tls), args));
    tasks.push_back(std::move(t));
  }
  std::optional<Failed> failure;
  for (int attempt = 0; attempt < std::max(1, options.num_tracing_attempts); ++attempt) {
    failure = capture_all(tasks, duration_ms, options);
    if (!failure || !failure->retry) break;
  }
  if (failure) {
    if (failure->retry) throw Unavailable(failure->why);
    throw FailedPrecondition(failure->why);
  }
  // Each task's times onto this clock: the mean of its offsets at the start and at the end.
  std::vector<std::string> names, jsons;
  std::map<std::string, int> seen;
  for (Task& t : tasks) {
    nlohmann::json doc = nlohmann::json::parse(t.json);
    doc["otherData"]["clock_offset_ns"] = -(t.offset_start + t.offset_end) / 2;
    doc["otherData"]["clock_drift_ns"] = t.offset_end - t.offset_start;
    const int n = seen[t.name]++;
    names.push_back(n == 0 ? t.name : t.name + "_" + std::to_string(n));
    jsons.push_back(doc.dump());
  }
  const std::string run = new_run_directory(logdir);
  write_traces(run, names, jsons);
  return run;
}

}  // namespace weft::profiler::client
