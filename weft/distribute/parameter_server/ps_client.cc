#include "weft/distribute/parameter_server/ps_client.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>

#include "weft/core/errors.h"
#include "weft/distribute/internal/grpc_glue.h"
#include "weft/distribute/parameter_server/internal/serving.h"
#include "weft/distribute/parameter_server/ps.grpc.pb.h"
#include "weft/ops/cast.h"

namespace weft::distribute::parameter_server {
namespace {

namespace pb = ::weft::ps;

// One piece of one variable: bytes [offset, offset + length).
struct Piece {
  size_t index;  // of the variable in the call's list
  uint64_t offset;
  uint64_t length;
};

// At most this many pieces in one call, so that their fields stay within kMaxMessageBytes.
constexpr size_t kMaxPiecesPerCall = 1024;
// How long a call that found its server unreachable waits for the channel to connect before it
// is made once more (ParameterServerClient::Impl::call_again_if_back); gRPC retries a connection
// within 1 s.
constexpr std::chrono::milliseconds kReconnectWait{2000};

// The byte ranges `wanted` cut into pieces, grouped into calls of at most kChunkBytes (and
// kMaxPiecesPerCall pieces) each, in order.
std::vector<std::vector<Piece>> plan_calls(const std::vector<Piece>& wanted) {
  std::vector<std::vector<Piece>> calls(1);
  uint64_t in_call = 0;
  for (const Piece& w : wanted) {
    uint64_t done = 0;
    do {
      uint64_t length = std::min<uint64_t>(w.length - done, kChunkBytes - in_call);
      calls.back().push_back({w.index, w.offset + done, length});
      in_call += length;
      done += length;
      if (in_call == kChunkBytes || calls.back().size() == kMaxPiecesPerCall) {
        calls.emplace_back();
        in_call = 0;
      }
    } while (done < w.length);
  }
  if (calls.back().empty()) calls.pop_back();
  return calls;
}

// Each variable's bytes, whole.
std::vector<std::vector<Piece>> plan_calls(const std::vector<VariableSpec>& variables) {
  std::vector<Piece> whole;
  for (size_t i = 0; i < variables.size(); ++i) whole.push_back({i, 0, variables[i].bytes()});
  return plan_calls(whole);
}

void add_slices(const std::vector<checkpoint::HeldSlice>& slices,
                google::protobuf::RepeatedPtrField<pb::SavedSlice>* out) {
  for (const checkpoint::HeldSlice& s : slices) {
    pb::SavedSlice* saved = out->Add();
    saved->set_id(s.id);
    saved->set_slot(s.which);
    saved->set_path(s.path);
    for (int64_t d : s.global_shape) saved->add_global_shape(d);
    for (int64_t o : s.offsets) saved->add_offsets(o);
  }
}

}  // namespace

class ParameterServerClient::Impl {
 public:
  Impl(std::string task, std::string address, ServiceOptions options)
      : task_(std::move(task)), address_(std::move(address)), options_(std::move(options)) {
    WEFT_CHECK(!options_.token.empty(), InvalidArgument)
        << "parameter server client for " << task_ << ": the cluster token is empty (set "
        << coordination::kTokenEnvironmentVariable << "; weft launch makes one)";
    channel_ = internal::open_channel(address_, options_);
    stub_ = pb::ParameterServer::NewStub(channel_);
  }

  const std::string& task() const { return task_; }
  const std::string& address() const { return address_; }

  void create(const std::vector<VariableSpec>& variables, const std::string& optimizer_config) {
    pb::CreateRequest request;
    for (const auto& v : variables) {
      auto* def = request.add_variables();
      def->set_id(v.id);
      def->set_name(v.name);
      def->set_dtype(std::string(dtype_name(v.dtype)));
      for (int64_t d : v.shape) def->add_shape(d);
      def->set_trainable(v.trainable);
    }
    request.set_optimizer_config(optimizer_config);
    pb::Reply reply;
    grpc::Status status = call_again_if_back(
        [&](grpc::ClientContext* ctx) { return stub_->Create(ctx, request, &reply); });
    check(status, "create", reply.incarnation());
  }

  std::vector<Tensor> pull(const std::vector<VariableSpec>& variables) {
    std::vector<Tensor> values;
    for (const auto& v : variables) values.push_back(Tensor::empty(v.shape, v.dtype));
    pull_pieces(variables, plan_calls(variables), [&](const Piece& p, const std::string& data) {
      std::memcpy(static_cast<char*>(values[p.index].raw_data()) + p.offset, data.data(), p.length);
    });
    return values;
  }

  Tensor pull_rows(const VariableSpec& v, const std::vector<int64_t>& rows) {
    WEFT_CHECK(!v.shape.empty(), InvalidArgument)
        << "pull_rows from " << task_ << ": " << v.name << " is a scalar, it has no rows";
    const int64_t n = v.shape[0];
    const uint64_t row_bytes = n == 0 ? 0 : v.bytes() / static_cast<uint64_t>(n);
    std::vector<int64_t> sorted(rows);
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    for (int64_t r : sorted) {
      WEFT_CHECK(r >= 0 && r < n, InvalidArgument)
          << "pull_rows from " << task_ << ": row " << r << " of " << v.name << ", which has " << n
          << " rows";
    }
    // Runs of consecutive rows, each one byte range of the variable; `unique` holds the sorted
    // rows, so a run's bytes land at its first row's place there.
    std::vector<Piece> runs;
    std::vector<uint64_t> starts, lands;  // each run's first byte in the variable, in `unique`
    for (size_t i = 0; i < sorted.size();) {
      size_t j = i + 1;
      while (j < sorted.size() && sorted[j] == sorted[j - 1] + 1) ++j;
      starts.push_back(static_cast<uint64_t>(sorted[i]) * row_bytes);
      lands.push_back(i * row_bytes);
      runs.push_back({0, starts.back(), (j - i) * row_bytes});
      i = j;
    }
    std::vector<char> unique(sorted.size() * row_bytes);
    pull_pieces({v}, plan_calls(runs), [&](const Piece& p, const std::string& data) {
      // The run the piece is of: the last that starts at or before it (pieces keep runs' order).
      const size_t k = static_cast<size_t>(
          std::upper_bound(starts.begin(), starts.end(), p.offset) - starts.begin() - 1);
      std::memcpy(unique.data() + lands[k] + (p.offset - starts[k]), data.data(), p.length);
    });
    Shape shape = v.shape;
    shape[0] = static_cast<int64_t>(rows.size());
    Tensor out = Tensor::empty(shape, v.dtype);
    for (size_t i = 0; i < rows.size(); ++i) {
      const size_t at = static_cast<size_t>(
          std::lower_bound(sorted.begin(), sorted.end(), rows[i]) - sorted.begin());
      std::memcpy(static_cast<char*>(out.raw_data()) + i * row_bytes,
                  unique.data() + at * row_bytes, row_bytes);
    }
    return out;
  }

  // Pulls `calls`' pieces (byte ranges of specs[index]), handing each piece's bytes to `got`.
  void pull_pieces(const std::vector<VariableSpec>& variables,
                   const std::vector<std::vector<Piece>>& calls,
                   const std::function<void(const Piece&, const std::string&)>& got) {
    for (const auto& call : calls) {
      pb::PullRequest request;
      for (const Piece& p : call) {
        auto* range = request.add_ranges();
        range->set_id(variables[p.index].id);
        range->set_slot(variables[p.index].slot);
        range->set_offset(p.offset);
        range->set_length(p.length);
      }
      pb::PullResponse reply;
      grpc::Status status = call_again_if_back(
          [&](grpc::ClientContext* ctx) { return stub_->Pull(ctx, request, &reply); });
      check(status, "pull", reply.incarnation());
      WEFT_CHECK(reply.chunks_size() == static_cast<int>(call.size()), Internal)
          << "pull from " << task_ << " at " << address_ << ": " << call.size()
          << " ranges asked for, " << reply.chunks_size() << " answered";
      for (size_t k = 0; k < call.size(); ++k) {
        const Piece& p = call[k];
        const auto& chunk = reply.chunks(static_cast<int>(k));
        WEFT_CHECK(chunk.offset() == p.offset && chunk.data().size() == p.length, Internal)
            << "pull from " << task_ << ": a chunk of " << variables[p.index].name
            << " is not the range asked for";
        got(p, chunk.data());
      }
    }
  }

  bool readable(const std::vector<VariableSpec>& variables) {
    pb::PullRequest request;
    for (const VariableSpec& v : variables) request.add_ranges()->set_id(v.id);  // no bytes
    pb::PullResponse reply;
    grpc::Status status = call_again_if_back(
        [&](grpc::ClientContext* ctx) { return stub_->Pull(ctx, request, &reply); });
    if (status.error_code() == grpc::StatusCode::NOT_FOUND) return false;
    check(status, "pull", reply.incarnation());
    return true;
  }

  void push(uint64_t closure_id, PushKind kind, const std::vector<VariableSpec>& variables,
            const std::vector<Tensor>& values, const GradientStep& step) {
    WEFT_CHECK(variables.size() == values.size(), InvalidArgument)
        << "push to " << task_ << ": " << variables.size() << " variables and " << values.size()
        << " values";
    std::vector<Tensor> bytes;
    for (size_t i = 0; i < variables.size(); ++i) {
      const VariableSpec& v = variables[i];
      WEFT_CHECK(
          values[i].defined() && values[i].dtype() == v.dtype && values[i].shape() == v.shape,
          InvalidArgument)
          << "push to " << task_ << ": the value for " << v.name << " must be "
          << dtype_name(v.dtype) << " of its shape";
      bytes.push_back(contiguous(values[i]));
    }
    for (const auto& call : plan_calls(variables)) {
      pb::PushRequest request;
      request.set_closure_id(closure_id);
      request.set_kind(kind == PushKind::kValue ? pb::VALUE
                       : kind == PushKind::kAdd ? pb::ADD
                                                : pb::GRADIENT);
      if (kind != PushKind::kValue) request.set_step(step.index);
      if (kind == PushKind::kGradient) {
        request.set_optimizer_config(step.optimizer);
        request.set_learning_rate(step.learning_rate);
        request.set_iterations(step.iterations);
      }
      for (const Piece& p : call) {
        auto* chunk = request.add_chunks();
        chunk->set_id(variables[p.index].id);
        chunk->set_slot(variables[p.index].slot);
        chunk->set_offset(p.offset);
        chunk->set_data(static_cast<const char*>(bytes[p.index].raw_data()) + p.offset, p.length);
      }
      pb::Reply reply;
      grpc::Status status = call_again_if_back(
          [&](grpc::ClientContext* ctx) { return stub_->Push(ctx, request, &reply); });
      check(status, "push", reply.incarnation());
    }
  }

  bool commit(uint64_t closure_id, const std::vector<uint64_t>& with, uint64_t incarnation) {
    pb::CommitRequest request;
    request.set_closure_id(closure_id);
    for (uint64_t id : with) request.add_with(id);
    request.set_incarnation(incarnation);
    pb::CommitResponse reply;
    grpc::Status status = call_again_if_back(
        [&](grpc::ClientContext* ctx) { return stub_->Commit(ctx, request, &reply); });
    check(status, "commit of closure " + std::to_string(closure_id), reply.incarnation());
    return reply.applied();
  }

  void abort(uint64_t closure_id) {
    pb::AbortRequest request;
    request.set_closure_id(closure_id);
    pb::Reply reply;
    grpc::Status status = call_again_if_back(
        [&](grpc::ClientContext* ctx) { return stub_->Abort(ctx, request, &reply); });
    check(status, "abort of closure " + std::to_string(closure_id), reply.incarnation());
  }

  void save(const std::string& dir, const std::string& save_id, int part, int parts,
            const std::vector<checkpoint::HeldSlice>& slices) {
    pb::SaveRequest request;
    request.set_dir(dir);
    request.set_save_id(save_id);
    request.set_part(part);
    request.set_parts(parts);
    add_slices(slices, request.mutable_slices());
    pb::Reply reply;
    grpc::Status status = call_again_if_back(
        [&](grpc::ClientContext* ctx) { return stub_->Save(ctx, request, &reply); });
    check(status, "save of part " + std::to_string(part) + " of " + dir, reply.incarnation());
  }

  void restore(const std::string& dir, const std::vector<checkpoint::HeldSlice>& slices) {
    pb::RestoreRequest request;
    request.set_dir(dir);
    add_slices(slices, request.mutable_slices());
    pb::Reply reply;
    grpc::Status status = call_again_if_back(
        [&](grpc::ClientContext* ctx) { return stub_->Restore(ctx, request, &reply); });
    check(status, "restore from " + dir, reply.incarnation());
  }

  uint64_t incarnation() const {
    std::lock_guard lock(mu_);
    return incarnation_;
  }

 private:
  // Makes a call, and once more if it failed as UNAVAILABLE and the channel connects within
  // kReconnectWait: a server that restarted on its address (weft launch starts a lost ps task
  // again) is reached once it is back, instead of the call failing with the error of an attempt
  // to connect made while it was down, which gRPC's reconnection backoff keeps reporting for up
  // to a second. Every call may be repeated: a push is keyed by its closure and range, a commit
  // by its closure id, and the others change nothing twice.
  template <typename Call>
  grpc::Status call_again_if_back(const Call& make) const {
    grpc::Status status = make(context().get());
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE ||
        !channel_->WaitForConnected(std::chrono::system_clock::now() + kReconnectWait)) {
      return status;
    }
    return make(context().get());
  }

  std::unique_ptr<grpc::ClientContext> context() const {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->AddMetadata(distribute::internal::kTokenMetadataKey, options_.token);
    ctx->set_deadline(std::chrono::system_clock::now() + options_.call_timeout);
    return ctx;
  }

  // Throws for a failed call; records the server's incarnation. A restart alone is no error here:
  // what the server held is gone, so a call that needs it is refused (NOT_FOUND, or a commit
  // that names the incarnation its updates were staged on), and a parameter-server fit restores
  // it (ParameterServerStrategy::recreate_lost_variables) before any other call.
  void check(const grpc::Status& status, const std::string& what, uint64_t incarnation) {
    const std::string server = "parameter server " + task_ + " at " + address_;
    if (status.ok()) {
      std::lock_guard lock(mu_);
      incarnation_ = incarnation;
      return;
    }
    if (status.error_code() == grpc::StatusCode::NOT_FOUND) {
      throw FailedPrecondition(what + " refused by " + server + ": " + status.error_message());
    }
    distribute::internal::throw_status(status, what, server);
  }

  const std::string task_;
  const std::string address_;
  const ServiceOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::ParameterServer::Stub> stub_;
  mutable std::mutex mu_;
  uint64_t incarnation_ = 0;
};

ParameterServerClient::ParameterServerClient(std::string task, std::string address,
                                             ServiceOptions options)
    : impl_(std::make_unique<Impl>(std::move(task), std::move(address), std::move(options))) {}
ParameterServerClient::~ParameterServerClient() = default;
const std::string& ParameterServerClient::task() const { return impl_->task(); }
const std::string& ParameterServerClient::address() const { return impl_->address(); }
void ParameterServerClient::create(const std::vector<VariableSpec>& variables,
                                   const std::string& optimizer_config) {
  impl_->create(variables, optimizer_config);
}
std::vector<Tensor> ParameterServerClient::pull(const std::vector<VariableSpec>& variables) {
  return impl_->pull(variables);
}
Tensor ParameterServerClient::pull_rows(const VariableSpec& variable,
                                        const std::vector<int64_t>& rows) {
  return impl_->pull_rows(variable, rows);
}
bool ParameterServerClient::readable(const std::vector<VariableSpec>& variables) {
  return impl_->readable(variables);
}
void ParameterServerClient::push(uint64_t closure_id, PushKind kind,
                                 const std::vector<VariableSpec>& variables,
                                 const std::vector<Tensor>& values, const GradientStep& step) {
  impl_->push(closure_id, kind, variables, values, step);
}
bool ParameterServerClient::commit(uint64_t closure_id, const std::vector<uint64_t>& with,
                                   uint64_t incarnation) {
  return impl_->commit(closure_id, with, incarnation);
}
void ParameterServerClient::abort(uint64_t closure_id) { impl_->abort(closure_id); }
void ParameterServerClient::save(const std::string& dir, const std::string& save_id, int part,
                                 int parts, const std::vector<checkpoint::HeldSlice>& slices) {
  impl_->save(dir, save_id, part, parts, slices);
}
void ParameterServerClient::restore(const std::string& dir,
                                    const std::vector<checkpoint::HeldSlice>& slices) {
  impl_->restore(dir, slices);
}
uint64_t ParameterServerClient::incarnation() const { return impl_->incarnation(); }

}  // namespace weft::distribute::parameter_server
