#include "weft/distribute/parameter_server/worker_service.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "weft/core/errors.h"
#include "weft/distribute/internal/grpc_glue.h"
#include "weft/distribute/parameter_server/internal/remote_variable.h"
#include "weft/distribute/parameter_server/internal/serving.h"
#include "weft/distribute/parameter_server/internal/tensor_value.h"
#include "weft/distribute/parameter_server/remote_functions.h"
#include "weft/distribute/parameter_server/worker.grpc.pb.h"

namespace weft::distribute::parameter_server {
namespace {

namespace pb = ::weft::ps;
using grpc::Status;
using grpc::StatusCode;

using RawWorker = pb::Worker::WithRawCallbackMethod_RunClosure<
    pb::Worker::WithRawCallbackMethod_CreatePerWorker<pb::Worker::Service>>;

}  // namespace

class WorkerService::Impl final : public RawWorker {
 public:
  Impl(const std::string& address, std::string task, ServiceOptions options)
      : task_(std::move(task)),
        options_(std::move(options)),
        incarnation_(internal::draw_incarnation()) {
    serving_ = internal::serve(address, this, options_, "worker " + task_);
    executor_ = std::thread([this] { run_jobs(); });
  }

  ~Impl() override {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;  // calls still queued are refused
    }
    cv_.notify_all();
    serving_.server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    executor_.join();
    serving_.server->Wait();
  }

  const std::string& address() const { return serving_.address; }
  int port() const { return serving_.port; }
  const std::string& task() const { return task_; }
  uint64_t incarnation() const { return incarnation_; }
  int64_t closures_run() const {
    std::lock_guard lock(mu_);
    return closures_run_;
  }
  void stop_taking_closures() {
    std::unique_lock lock(mu_);
    stopping_ = true;
    cv_.notify_all();
    cv_.wait(lock, [&] { return !running_; });
  }

  grpc::ServerUnaryReactor* RunClosure(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                       grpc::ByteBuffer* out) override {
    return handle<pb::RunClosureRequest>(
        ctx, in, out, [this](const pb::RunClosureRequest& r, grpc::ByteBuffer* answer) {
          pb::RunClosureResponse response;
          std::vector<ClosureArgs::Arg> args;
          for (int i = 0; i < r.args_size(); ++i) {
            const auto& a = r.args(i);
            if (a.has_tensor()) {
              try {
                args.push_back(
                    {internal::decode(a.tensor(), "closure argument " + std::to_string(i)),
                     nullptr});
              } catch (const Error& e) {
                return Status(StatusCode::INVALID_ARGUMENT, e.message());
              }
              continue;
            }
            auto it = per_worker_.find(a.per_worker());
            if (it == per_worker_.end()) {
              // Made by an earlier process of this task: the coordinator makes it again.
              return Status(
                  StatusCode::NOT_FOUND,
                  "per-worker value " + std::to_string(a.per_worker()) + " is not on " + task_);
            }
            args.push_back({Tensor(), &it->second.iterator});
          }
          RemoteFunctionBody fn =
              distribute::internal::find_function(r.function(), options_.function_wait);
          try {
            WEFT_CHECK(static_cast<bool>(fn), FailedPrecondition)
                << "no function '" << r.function() << "' is registered on " << task_
                << " (register_function it in every process of the program)";
            // The closure reads each of the variables that live on parameter servers once.
            internal::SnapshotScope snapshot(r.closure_id());
            std::vector<Tensor> outputs = fn(ClosureArgs(std::move(args)));
            for (const Tensor& t : outputs) internal::encode(t, response.add_outputs());
            for (const auto& [ps, incarnation] : snapshot.staged_on()) {
              response.add_staged_on(ps);
              response.add_staged_incarnations(incarnation);
            }
            WEFT_CHECK(response.ByteSizeLong() <= kMaxMessageBytes - 1024, ResourceExhausted)
                << "the outputs of '" << r.function() << "' take " << response.ByteSizeLong()
                << " bytes, over the limit of " << kMaxMessageBytes;
          } catch (const Error& e) {
            response.clear_outputs();
            response.set_error_code(error_code_name(e.code()));
            response.set_error_message(e.message());
          } catch (const std::exception& e) {
            response.clear_outputs();
            response.set_error_code(error_code_name(ErrorCode::kInternal));
            response.set_error_message(e.what());
          }
          {
            std::lock_guard lock(mu_);
            ++closures_run_;
          }
          response.set_incarnation(incarnation_);
          *answer = distribute::internal::buffer_of(response.SerializeAsString());
          return Status::OK;
        });
  }

  grpc::ServerUnaryReactor* CreatePerWorker(grpc::CallbackServerContext* ctx,
                                            const grpc::ByteBuffer* in,
                                            grpc::ByteBuffer* out) override {
    return handle<pb::CreatePerWorkerRequest>(
        ctx, in, out, [this](const auto& r, grpc::ByteBuffer* answer) {
          DatasetFunctionBody fn = distribute::internal::find_dataset_function(
              r.dataset_function(), options_.function_wait);
          if (!fn) {
            return Status(StatusCode::FAILED_PRECONDITION,
                          "no dataset function '" + r.dataset_function() + "' is registered on " +
                              task_ + " (register_dataset_function it in every process)");
          }
          InputContext context;
          context.num_input_pipelines = r.num_input_pipelines();
          context.input_pipeline_id = r.input_pipeline_id();
          try {
            PerWorker value{fn(context), {}};
            value.iterator = value.dataset.begin();
            per_worker_.insert_or_assign(r.id(), std::move(value));
          } catch (const Error& e) {
            return Status(
                StatusCode::INVALID_ARGUMENT,
                "dataset function '" + r.dataset_function() + "' on " + task_ + ": " + e.what());
          }
          pb::WorkerReply reply;
          reply.set_incarnation(incarnation_);
          *answer = distribute::internal::buffer_of(reply.SerializeAsString());
          return Status::OK;
        });
  }

 private:
  struct PerWorker {
    data::Dataset dataset;
    data::Dataset::Iterator iterator;
  };
  // A call to answer on the executor thread.
  struct Job {
    std::function<Status()> run;
    grpc::ServerUnaryReactor* reactor;
  };

  // Checks the token and parses the request, then runs fn(request, answer) on the executor
  // thread and finishes the call with its status.
  template <typename Request, typename Fn>
  grpc::ServerUnaryReactor* handle(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                   grpc::ByteBuffer* out, Fn fn) {
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    if (auto refusal = distribute::internal::token_refusal(*ctx, options_.token)) {
      reactor->Finish(*refusal);
      return reactor;
    }
    auto request = std::make_shared<Request>();
    if (!request->ParseFromString(distribute::internal::bytes_of(*in))) {
      reactor->Finish(Status(StatusCode::INVALID_ARGUMENT, "malformed request"));
      return reactor;
    }
    std::lock_guard lock(mu_);
    if (stopping_) {
      reactor->Finish(Status(StatusCode::UNAVAILABLE, task_ + " is stopping"));
      return reactor;
    }
    jobs_.push_back({[fn, request, out] { return fn(*request, out); }, reactor});
    cv_.notify_all();
    return reactor;
  }

  // The executor: runs the calls in order; those still queued when the service stops are
  // refused.
  void run_jobs() {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      Job job = std::move(jobs_.front());
      jobs_.pop_front();
      const bool refuse = stopping_;
      running_ = !refuse;
      lock.unlock();
      job.reactor->Finish(refuse ? Status(StatusCode::UNAVAILABLE, task_ + " is stopping")
                                 : job.run());
      lock.lock();
      running_ = false;
      cv_.notify_all();  // stop_taking_closures
    }
  }

  const std::string task_;
  const ServiceOptions options_;
  const uint64_t incarnation_;
  internal::Serving serving_;
  std::thread executor_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool running_ = false;  // the executor runs a call
  std::deque<Job> jobs_;
  int64_t closures_run_ = 0;
  std::map<uint64_t, PerWorker> per_worker_;  // used by the executor thread only
};

WorkerService::WorkerService(const std::string& address, std::string task, ServiceOptions options)
    : impl_(std::make_unique<Impl>(address, std::move(task), std::move(options))) {}
WorkerService::~WorkerService() = default;
std::string WorkerService::address() const { return impl_->address(); }
int WorkerService::port() const { return impl_->port(); }
const std::string& WorkerService::task() const { return impl_->task(); }
void WorkerService::stop_taking_closures() { impl_->stop_taking_closures(); }
uint64_t WorkerService::incarnation() const { return impl_->incarnation(); }
int64_t WorkerService::closures_run() const { return impl_->closures_run(); }

}  // namespace weft::distribute::parameter_server
