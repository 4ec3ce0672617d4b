#include "weft/distribute/parameter_server/ps_service.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>

#include "weft/checkpoint/checkpoint_io.h"
#include "weft/core/errors.h"
#include "weft/distribute/internal/grpc_glue.h"
#include "weft/distribute/parameter_server/internal/algorithms.h"
#include "weft/distribute/parameter_server/internal/serving.h"
#include "weft/distribute/parameter_server/ps.grpc.pb.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/optim/optimizer.h"

namespace weft::distribute::parameter_server {
namespace {

namespace pb = ::weft::ps;
using grpc::Status;
using grpc::StatusCode;

using RawService = pb::ParameterServer::WithRawCallbackMethod_Create<
    pb::ParameterServer::WithRawCallbackMethod_Pull<pb::ParameterServer::WithRawCallbackMethod_Push<
        pb::ParameterServer::WithRawCallbackMethod_Commit<
            pb::ParameterServer::WithRawCallbackMethod_Abort<
                pb::ParameterServer::WithRawCallbackMethod_Save<
                    pb::ParameterServer::WithRawCallbackMethod_Restore<
                        pb::ParameterServer::Service>>>>>>>;

// A checkpoint's error (writing or reading one) as the status the client turns back into it.
Status status_of(const Error& e, const std::string& message) {
  const StatusCode code = e.code() == ErrorCode::kDataLoss ? StatusCode::DATA_LOSS
                          : e.code() == ErrorCode::kInvalidArgument
                              ? StatusCode::INVALID_ARGUMENT
                              : StatusCode::FAILED_PRECONDITION;
  return Status(code, message + ": " + e.message());
}

std::string describe(const VariableSpec& v) {
  return "variable " + std::to_string(v.id) + " (" + v.name + ", " +
         std::string(dtype_name(v.dtype)) + " " + shape_str(v.shape) + ")";
}

}  // namespace

class ParameterServer::Impl final : public RawService {
 public:
  Impl(const std::string& address, std::string task, ServiceOptions options)
      : task_(std::move(task)),
        options_(std::move(options)),
        incarnation_(internal::draw_incarnation()) {
    serving_ = internal::serve(address, this, options_, "parameter server " + task_);
  }

  ~Impl() override {
    serving_.server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    serving_.server->Wait();
  }

  const std::string& address() const { return serving_.address; }
  int port() const { return serving_.port; }
  const std::string& task() const { return task_; }
  uint64_t incarnation() const { return incarnation_; }

  std::vector<VariableSpec> variables() const {
    std::lock_guard lock(mu_);
    std::vector<VariableSpec> out;
    for (const auto& [id, v] : variables_) out.push_back(v.spec);
    return out;
  }
  Tensor value(uint64_t id) const {
    std::lock_guard lock(mu_);
    return copy(stored(id).value);
  }
  std::vector<Tensor> slots(uint64_t id) const {
    std::lock_guard lock(mu_);
    std::vector<Tensor> out;
    for (const auto& s : stored(id).slots) out.push_back(copy(s));
    return out;
  }
  bool applied(uint64_t closure_id) const {
    std::lock_guard lock(mu_);
    return applied_.count(closure_id) != 0;
  }
  std::size_t staged_closures() const {
    std::lock_guard lock(mu_);
    return staged_.size();
  }

  // ---- the calls ----------------------------------------------------------------------------
  grpc::ServerUnaryReactor* Create(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                   grpc::ByteBuffer* out) override {
    return handle<pb::CreateRequest, pb::Reply>(ctx, in, out, [&](const auto& r, auto&) {
      const optim::Optimizer::Algorithm* algorithm = nullptr;
      if (Status s = algorithm_of(r.optimizer_config(), &algorithm); !s.ok()) return s;
      for (const auto& def : r.variables()) {
        VariableSpec spec;
        spec.id = def.id();
        spec.name = def.name();
        try {
          spec.dtype = dtype_from_name(def.dtype());
        } catch (const Error& e) {
          return Status(StatusCode::INVALID_ARGUMENT, e.message());
        }
        spec.shape.assign(def.shape().begin(), def.shape().end());
        spec.trainable = def.trainable();
        for (int64_t d : spec.shape) {
          if (d < 0) {
            return Status(StatusCode::INVALID_ARGUMENT,
                          describe(spec) + ": a dimension is negative");
          }
        }
        auto it = variables_.find(spec.id);
        if (it != variables_.end()) {
          const VariableSpec& was = it->second.spec;
          if (was.name != spec.name || was.dtype != spec.dtype || was.shape != spec.shape ||
              was.trainable != spec.trainable) {
            return Status(StatusCode::INVALID_ARGUMENT, "id " + std::to_string(spec.id) +
                                                            " is already " + describe(was) +
                                                            ", not " + describe(spec));
          }
          continue;
        }
        Stored& v = variables_[spec.id];
        v.spec = spec;
        v.value = zeros(spec.shape, spec.dtype);
      }
      // Trainable variables without an optimizer yet, these and those made before, get its slots.
      if (algorithm != nullptr) {
        for (auto& [id, v] : variables_) {
          if (v.spec.trainable && v.algorithm == nullptr) use_algorithm(v, algorithm);
        }
      }
      return Status::OK;
    });
  }

  grpc::ServerUnaryReactor* Pull(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                 grpc::ByteBuffer* out) override {
    return handle<pb::PullRequest, pb::PullResponse>(ctx, in, out, [&](const auto& r, auto& a) {
      uint64_t total = 0;
      for (const auto& range : r.ranges()) total += range.length();
      if (total > kChunkBytes) {
        return Status(StatusCode::RESOURCE_EXHAUSTED,
                      "a pull of " + std::to_string(total) + " bytes is over the limit of " +
                          std::to_string(kChunkBytes) + " per call");
      }
      for (const auto& range : r.ranges()) {
        const Stored* v = find(range.id());
        if (v == nullptr) return unknown(range.id());
        if (!v->has_value) {
          return Status(StatusCode::NOT_FOUND, describe(v->spec) + " on " + task_ +
                                                   " has no value yet (none was written)");
        }
        if (Status s = check_range(v->spec, range.offset(), range.length()); !s.ok()) return s;
        const Tensor* bytes = nullptr;
        if (Status s = tensor_of(*v, range.slot(), &bytes); !s.ok()) return s;
        auto* chunk = a.add_chunks();
        chunk->set_id(range.id());
        chunk->set_slot(range.slot());
        chunk->set_offset(range.offset());
        chunk->set_data(static_cast<const char*>(bytes->raw_data()) + range.offset(),
                        range.length());
      }
      return Status::OK;
    });
  }

  grpc::ServerUnaryReactor* Push(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                 grpc::ByteBuffer* out) override {
    return handle<pb::PushRequest, pb::Reply>(ctx, in, out, [&](const auto& r, auto&) {
      // A late resend of an applied closure, or a push of a run given up (a backup run's loser,
      // a run whose worker was declared lost) that arrives after its abort: dropped.
      if (applied_.count(r.closure_id()) != 0 || aborted_.count(r.closure_id()) != 0) {
        return Status::OK;
      }
      const optim::Optimizer::Algorithm* algorithm = nullptr;
      if (Status s = algorithm_of(r.optimizer_config(), &algorithm); !s.ok()) return s;
      for (const auto& chunk : r.chunks()) {
        Stored* v = find(chunk.id());
        if (v == nullptr) return unknown(chunk.id());
        if (r.kind() == pb::GRADIENT) {
          if (Status s = takes_gradients(*v, algorithm); !s.ok()) return s;
        }
        if (chunk.slot() != 0) {
          const Tensor* slot = nullptr;
          if (Status s = tensor_of(*v, chunk.slot(), &slot); !s.ok()) return s;
          if (r.kind() != pb::VALUE) {
            return Status(StatusCode::INVALID_ARGUMENT,
                          "slot " + std::to_string(chunk.slot() - 1) + " of " + describe(v->spec) +
                              " takes values only, not gradients or additions");
          }
        }
        if (Status s = check_range(v->spec, chunk.offset(), chunk.data().size()); !s.ok()) {
          return s;
        }
        const uint32_t step = r.kind() == pb::VALUE ? 0 : r.step();  // a later value replaces
        Staged& staged = staged_[r.closure_id()][{chunk.id(), chunk.slot(), step}];
        if (!staged.tensor.defined()) {
          staged.kind = r.kind();
          staged.tensor = Tensor::empty(v->spec.shape, v->spec.dtype);
          staged.step = {r.learning_rate(), r.iterations()};
        } else if (staged.kind != r.kind()) {
          return Status(StatusCode::INVALID_ARGUMENT,
                        "closure " + std::to_string(r.closure_id()) +
                            " pushes two kinds of update (gradient, value, addition) for " +
                            describe(v->spec));
        }
        // A piece sent again replaces itself; pieces may not otherwise overlap.
        auto next = staged.pieces.lower_bound(chunk.offset());
        const uint64_t end = chunk.offset() + chunk.data().size();
        bool same = next != staged.pieces.end() && next->first == chunk.offset() &&
                    next->second == chunk.data().size();
        bool overlaps = (next != staged.pieces.end() && next->first < end) ||
                        (next != staged.pieces.begin() &&
                         std::prev(next)->first + std::prev(next)->second > chunk.offset());
        if (overlaps && !same) {
          return Status(StatusCode::INVALID_ARGUMENT,
                        "closure " + std::to_string(r.closure_id()) + ": bytes [" +
                            std::to_string(chunk.offset()) + ", " + std::to_string(end) + ") of " +
                            describe(v->spec) + " overlap a piece already pushed");
        }
        std::memcpy(static_cast<char*>(staged.tensor.raw_data()) + chunk.offset(),
                    chunk.data().data(), chunk.data().size());
        staged.pieces[chunk.offset()] = chunk.data().size();
      }
      return Status::OK;
    });
  }

  grpc::ServerUnaryReactor* Commit(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                   grpc::ByteBuffer* out) override {
    return handle<pb::CommitRequest, pb::CommitResponse>(ctx, in, out, [&](const auto& r, auto& a) {
      // The closure, then those committed with it as one step.
      std::vector<uint64_t> ids{r.closure_id()};
      ids.insert(ids.end(), r.with().begin(), r.with().end());
      if (r.incarnation() != 0 && r.incarnation() != incarnation_) {
        return Status(StatusCode::UNAVAILABLE,
                      "closure " + std::to_string(ids[0]) + " cannot commit: " + task_ +
                          " restarted (a new incarnation) after its updates were staged, and "
                          "holds none of them");
      }
      if (applied_.count(ids[0]) != 0) {
        for (uint64_t id : ids) staged_.erase(id);
        a.set_applied(false);
        return Status::OK;
      }
      // Each (variable, step)'s staged updates, in the closures' order.
      std::map<StagedKey, std::vector<const Staged*>> updates;
      for (uint64_t id : ids) {
        auto it = staged_.find(id);
        if (it == staged_.end()) continue;
        for (const auto& [key, staged] : it->second) {
          const VariableSpec& spec = variables_.at(key.id).spec;
          if (staged.received() != spec.bytes()) {
            return Status(StatusCode::FAILED_PRECONDITION,
                          "closure " + std::to_string(id) + " cannot commit: " + describe(spec) +
                              " got " + std::to_string(staged.received()) + " of its " +
                              std::to_string(spec.bytes()) + " bytes");
          }
          updates[key].push_back(&staged);
        }
      }
      // Each variable's steps in order (the map orders them by variable, then step). Of a step
      // several closures made, the gradients are summed in their order; an assignment or an
      // addition is the first closure's (each made the same one).
      for (const auto& [key, staged] : updates) {
        Stored& v = variables_.at(key.id);
        const Staged& first = *staged.front();
        if (key.slot != 0) {  // a slot's value
          std::memcpy(v.slots.at(key.slot - 1).raw_data(), first.tensor.raw_data(), v.spec.bytes());
          continue;
        }
        v.has_value = true;
        if (first.kind == pb::VALUE) {
          std::memcpy(v.value.raw_data(), first.tensor.raw_data(), v.spec.bytes());
        } else if (first.kind == pb::ADD) {
          assign_into(v.value, add(v.value, first.tensor));
        } else {
          Tensor gradient = first.tensor;
          for (size_t i = 1; i < staged.size(); ++i) gradient = add(gradient, staged[i]->tensor);
          v.algorithm->update(gradient, v.value, v.slots, first.step);
        }
      }
      for (uint64_t id : ids) {
        staged_.erase(id);
        applied_.insert(id);
      }
      a.set_applied(true);
      return Status::OK;
    });
  }

  grpc::ServerUnaryReactor* Abort(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                  grpc::ByteBuffer* out) override {
    return handle<pb::AbortRequest, pb::Reply>(ctx, in, out, [&](const auto& r, auto&) {
      staged_.erase(r.closure_id());
      aborted_.insert(r.closure_id());
      return Status::OK;
    });
  }

  grpc::ServerUnaryReactor* Save(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                 grpc::ByteBuffer* out) override {
    std::vector<checkpoint::SavedSlice> slices;
    return handle<pb::SaveRequest, pb::Reply>(
        ctx, in, out,
        [&](const auto& r, auto&) {  // under the lock: copies of the values
          for (const auto& saved : r.slices()) {
            const Stored* v = find(saved.id());
            if (v == nullptr) return unknown(saved.id());
            if (!v->has_value) {
              return Status(StatusCode::FAILED_PRECONDITION,
                            "cannot save " + describe(v->spec) + " on " + task_ +
                                ": it has no value yet (none was written)");
            }
            const Tensor* tensor = nullptr;
            if (Status s = tensor_of(*v, saved.slot(), &tensor); !s.ok()) return s;
            slices.push_back({saved.path(),
                              copy(*tensor),
                              Shape(saved.global_shape().begin(), saved.global_shape().end()),
                              {saved.offsets().begin(), saved.offsets().end()}});
          }
          return Status::OK;
        },
        [&](const auto& r) {  // then the writing, with the lock released
          try {
            checkpoint::write_checkpoint_part(r.dir(), r.save_id(), r.part(), r.parts(), slices,
                                              {});
          } catch (const Error& e) {
            return status_of(e, task_ + " cannot write its part of " + r.dir());
          }
          return Status::OK;
        });
  }

  grpc::ServerUnaryReactor* Restore(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                    grpc::ByteBuffer* out) override {
    std::vector<checkpoint::Region> regions;
    return handle<pb::RestoreRequest, pb::Reply>(
        ctx, in, out,
        [&](const auto& r, auto&) {  // under the lock: what each slice is a region of
          for (const auto& saved : r.slices()) {
            const Stored* v = find(saved.id());
            if (v == nullptr) return unknown(saved.id());
            const Tensor* tensor = nullptr;
            if (Status s = tensor_of(*v, saved.slot(), &tensor); !s.ok()) return s;
            regions.push_back(
                {saved.path(), {saved.offsets().begin(), saved.offsets().end()}, v->spec.shape});
          }
          return Status::OK;
        },
        [&](const auto& r) {  // then the reading, with the lock released, and the assignments
          std::vector<Tensor> values;
          try {
            values = checkpoint::read_checkpoint_regions(r.dir(), regions);
          } catch (const Error& e) {
            return status_of(e, task_ + " cannot restore from " + r.dir());
          }
          std::lock_guard lock(mu_);
          for (int i = 0; i < r.slices_size(); ++i) {
            const Stored* v = find(r.slices(i).id());
            if (v == nullptr) return unknown(r.slices(i).id());
            if (values[static_cast<size_t>(i)].dtype() != v->spec.dtype) {
              return Status(StatusCode::INVALID_ARGUMENT,
                            task_ + " cannot restore " + describe(v->spec) + " from \"" +
                                r.slices(i).path() + "\" of " + r.dir() + ", which holds " +
                                std::string(dtype_name(values[static_cast<size_t>(i)].dtype())));
            }
          }
          for (int i = 0; i < r.slices_size(); ++i) {
            Stored& v = variables_.at(r.slices(i).id());
            const uint32_t slot = r.slices(i).slot();
            Tensor& into = slot == 0 ? v.value : v.slots.at(slot - 1);
            std::memcpy(into.raw_data(), values[static_cast<size_t>(i)].raw_data(), v.spec.bytes());
            if (slot == 0) v.has_value = true;
          }
          return Status::OK;
        });
  }

 private:
  // A variable's value or a staged tensor: bytes written in pieces.
  struct Staged {
    pb::PushKind kind = pb::GRADIENT;
    optim::Optimizer::Algorithm::Step step{};  // a gradient's
    Tensor tensor;
    std::map<uint64_t, uint64_t> pieces;  // offset → length
    uint64_t received() const {
      uint64_t n = 0;
      for (const auto& [offset, length] : pieces) n += length;
      return n;
    }
  };

  // What a closure staged an update of: a variable (its value, slot 0, or slot k - 1) at a step.
  struct StagedKey {
    uint64_t id = 0;
    uint32_t slot = 0;
    uint32_t step = 0;
    auto operator<=>(const StagedKey&) const = default;
  };

  struct Stored {
    VariableSpec spec;
    Tensor value;
    // A trainable variable's optimizer (its algorithm, shared) and slots, from the first
    // CreateRequest or gradient that names one.
    const optim::Optimizer::Algorithm* algorithm = nullptr;
    std::vector<Tensor> slots;
    bool has_value = false;  // readable once a commit wrote it
  };

  // Checks the token, parses the request, runs fn(request, answer) under the lock, then (if it
  // succeeded) then(request) without it, and answers with this server's incarnation.
  template <typename Request, typename Answer, typename Fn, typename Then = std::nullptr_t>
  grpc::ServerUnaryReactor* handle(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                   grpc::ByteBuffer* out, Fn&& fn, Then&& then = nullptr) {
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    // The token first: a call without the right one is refused before its bytes are parsed.
    if (auto refusal = distribute::internal::token_refusal(*ctx, options_.token)) {
      reactor->Finish(*refusal);
      return reactor;
    }
    Request request;
    if (!request.ParseFromString(distribute::internal::bytes_of(*in))) {
      reactor->Finish(Status(StatusCode::INVALID_ARGUMENT, "malformed request"));
      return reactor;
    }
    Answer answer;
    Status status;
    try {
      {
        std::lock_guard lock(mu_);
        status = fn(request, answer);
      }
      if constexpr (!std::is_null_pointer_v<std::decay_t<Then>>) {
        if (status.ok()) status = then(request);
      }
    } catch (const std::exception& e) {  // an update that failed: nothing else is lost
      status = Status(StatusCode::INTERNAL, e.what());
    }
    answer.set_incarnation(incarnation_);
    if (status.ok()) *out = distribute::internal::buffer_of(answer.SerializeAsString());
    reactor->Finish(status);
    return reactor;
  }

  // The algorithm of the optimizer `config` describes (null for ""), one per distinct algorithm
  // and hyperparameters in the process.
  static Status algorithm_of(const std::string& config, const optim::Optimizer::Algorithm** out) {
    *out = nullptr;
    if (config.empty()) return Status::OK;
    try {
      *out = &internal::algorithm_of(config);
    } catch (const Error& e) {
      return Status(StatusCode::INVALID_ARGUMENT, e.message());
    }
    return Status::OK;
  }

  // Under the lock: whether `v` takes a gradient applied with `algorithm` (null: its own).
  Status takes_gradients(Stored& v, const optim::Optimizer::Algorithm* algorithm) {
    if (!v.spec.trainable) {
      return Status(StatusCode::INVALID_ARGUMENT,
                    "a gradient for " + describe(v.spec) + ", which is not trainable");
    }
    if (algorithm == nullptr && v.algorithm == nullptr) {
      return Status(StatusCode::INVALID_ARGUMENT,
                    "a gradient for " + describe(v.spec) + " without an optimizer to apply it");
    }
    if (algorithm != nullptr && v.algorithm != nullptr && algorithm != v.algorithm) {
      return Status(StatusCode::INVALID_ARGUMENT,
                    "a gradient for " + describe(v.spec) + " from the optimizer " +
                        algorithm->get_config().to_json() + ", while it is updated by " +
                        v.algorithm->get_config().to_json());
    }
    if (v.algorithm == nullptr) use_algorithm(v, algorithm);
    return Status::OK;
  }

  // Under the lock: `v` is updated by `algorithm`, with its slots.
  static void use_algorithm(Stored& v, const optim::Optimizer::Algorithm* algorithm) {
    v.algorithm = algorithm;
    for (const auto& slot : algorithm->slots()) {
      v.slots.push_back(full(v.spec.shape, slot.initial_value, v.spec.dtype));
    }
  }

  // Under the lock: the tensor `slot` addresses in `v` (0: its value; k: its slot k - 1).
  static Status tensor_of(const Stored& v, uint32_t slot, const Tensor** out) {
    if (slot == 0) {
      *out = &v.value;
      return Status::OK;
    }
    if (slot > v.slots.size()) {
      return Status(StatusCode::FAILED_PRECONDITION,
                    describe(v.spec) + " has no slot " + std::to_string(slot - 1) + " (it has " +
                        std::to_string(v.slots.size()) +
                        "; slots come with the optimizer it is created or updated with)");
    }
    *out = &v.slots[slot - 1];
    return Status::OK;
  }

  const Stored* find(uint64_t id) const {
    auto it = variables_.find(id);
    return it == variables_.end() ? nullptr : &it->second;
  }
  Stored* find(uint64_t id) {
    auto it = variables_.find(id);
    return it == variables_.end() ? nullptr : &it->second;
  }
  const Stored& stored(uint64_t id) const {
    const Stored* v = find(id);
    WEFT_CHECK(v != nullptr, InvalidArgument)
        << "parameter server " << task_ << " holds no variable " << id;
    return *v;
  }
  Status unknown(uint64_t id) const {
    return Status(StatusCode::NOT_FOUND, task_ + " holds no variable " + std::to_string(id) +
                                             " (holds " + std::to_string(variables_.size()) +
                                             "; was it created here, before a restart?)");
  }
  static Status check_range(const VariableSpec& spec, uint64_t offset, uint64_t length) {
    if (offset > spec.bytes() || length > spec.bytes() - offset) {
      return Status(StatusCode::INVALID_ARGUMENT, "bytes [" + std::to_string(offset) + ", " +
                                                      std::to_string(offset + length) +
                                                      ") are outside " + describe(spec) + " of " +
                                                      std::to_string(spec.bytes()) + " bytes");
    }
    return Status::OK;
  }

  const std::string task_;
  const ServiceOptions options_;
  const uint64_t incarnation_;
  internal::Serving serving_;

  mutable std::mutex mu_;
  std::map<uint64_t, Stored> variables_;
  // closure → (variable, slot, step) → staged
  std::map<uint64_t, std::map<StagedKey, Staged>> staged_;
  std::set<uint64_t> applied_;
  std::set<uint64_t> aborted_;  // whose pushes are dropped from then on
};

std::size_t VariableSpec::bytes() const {
  return static_cast<std::size_t>(num_elements(shape) * dtype_size(dtype));
}

ParameterServer::ParameterServer(const std::string& address, std::string task,
                                 ServiceOptions options)
    : impl_(std::make_unique<Impl>(address, std::move(task), std::move(options))) {}
ParameterServer::~ParameterServer() = default;
std::string ParameterServer::address() const { return impl_->address(); }
int ParameterServer::port() const { return impl_->port(); }
const std::string& ParameterServer::task() const { return impl_->task(); }
uint64_t ParameterServer::incarnation() const { return impl_->incarnation(); }
std::vector<VariableSpec> ParameterServer::variables() const { return impl_->variables(); }
Tensor ParameterServer::value(uint64_t id) const { return impl_->value(id); }
std::vector<Tensor> ParameterServer::slots(uint64_t id) const { return impl_->slots(id); }
bool ParameterServer::applied(uint64_t closure_id) const { return impl_->applied(closure_id); }
std::size_t ParameterServer::staged_closures() const { return impl_->staged_closures(); }

}  // namespace weft::distribute::parameter_server
