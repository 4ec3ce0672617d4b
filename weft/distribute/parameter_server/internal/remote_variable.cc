#include "weft/distribute/parameter_server/internal/remote_variable.h"

#include <cstring>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "weft/autodiff/tape.h"
#include "weft/core/errors.h"
#include "weft/distribute/parameter_server/internal/algorithms.h"
#include "weft/ops/cast.h"

namespace weft::distribute::parameter_server::internal {
namespace {

// The closure this thread runs: its id, the variables whose copies are current (pulled, or
// assigned) and the gradient steps it has staged of each.
struct Closure {
  uint64_t id = 0;
  std::set<const RemoteVariable*> pulled;
  std::map<const RemoteVariable*, uint32_t> steps;
  // The ps tasks it pushed to, each with its incarnation then.
  std::map<std::string, uint64_t> staged_on;
  // Each variable's staged gradient steps that its copy does not have yet, applied at its next
  // read, with the copies of its slots (per shard) pulled at the first such read.
  std::map<const RemoteVariable*, std::vector<VariableBinding::GradientUpdate>> unread;
  std::map<const RemoteVariable*, std::vector<std::vector<Tensor>>> slots;
};

// The bytes of `whole` (contiguous, the variable's shape) that shard `s` holds, as a tensor of
// the shard's shape.
Tensor piece_of(const Tensor& whole, const RemoteVariable::Shard& s) {
  Tensor piece = Tensor::empty(s.spec.shape, s.spec.dtype);
  std::memcpy(piece.raw_data(), static_cast<const char*>(whole.raw_data()) + s.offset,
              s.spec.bytes());
  return piece;
}

// Null outside a closure.
thread_local Closure* snapshot = nullptr;

}  // namespace

SnapshotScope::SnapshotScope(uint64_t closure_id) {
  WEFT_ASSERT(snapshot == nullptr) << "snapshot scopes do not nest";
  snapshot = new Closure{closure_id, {}, {}, {}, {}, {}};
}

SnapshotScope::~SnapshotScope() {
  delete snapshot;
  snapshot = nullptr;
}

bool SnapshotScope::active() { return snapshot != nullptr; }

std::vector<std::pair<std::string, uint64_t>> SnapshotScope::staged_on() const {
  return {snapshot->staged_on.begin(), snapshot->staged_on.end()};
}

void RemoteVariable::create() const {
  for (const Shard& s : shards_) s.ps->create({s.spec}, "");
}

bool RemoteVariable::held_on(ParameterServerClient& ps) const {
  std::vector<VariableSpec> here;
  for (const Shard& s : shards_) {
    if (s.ps.get() == &ps) here.push_back(s.spec);
  }
  return here.empty() || ps.readable(here);  // one call for the shards there
}

void RemoteVariable::create_on(ParameterServerClient& ps) const {
  std::lock_guard lock(mu_);
  for (const Shard& s : shards_) {
    if (s.ps.get() == &ps) ps.create({s.spec}, optimizer_);
  }
}

std::shared_ptr<const VariableBinding> RemoteVariable::slot(size_t k,
                                                            const std::string& optimizer) const {
  {
    std::lock_guard lock(mu_);
    optimizer_ = optimizer;
  }
  std::vector<Shard> slots = shards_;
  for (Shard& s : slots) {
    s.ps->create({s.spec}, optimizer);  // kept as it is, but given the optimizer's slots
    s.spec.slot = static_cast<uint32_t>(k + 1);
  }
  return std::make_shared<RemoteVariable>(std::move(slots), ids_);
}

std::vector<checkpoint::HeldSlice> RemoteVariable::held_slices() const {
  std::vector<checkpoint::HeldSlice> out;
  for (const Shard& s : shards_) {
    std::vector<int64_t> offsets(s.spec.shape.size(), 0);
    if (!offsets.empty()) {  // rows: the bytes before the shard over the bytes of a row
      const auto row = static_cast<std::size_t>(
          num_elements(Shape(s.spec.shape.begin() + 1, s.spec.shape.end())) *
          dtype_size(s.spec.dtype));
      offsets[0] = row == 0 ? 0 : static_cast<int64_t>(s.offset / row);
    }
    out.push_back({s.ps, s.spec.id, s.spec.slot, std::move(offsets), {}, {}});
  }
  return out;
}

void RemoteVariable::wait_until_readable(std::chrono::milliseconds timeout,
                                         const std::function<bool()>& chief_gone) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (const Shard& s : shards_) {
    for (int tries = 1; !s.ps->readable({s.spec}); ++tries) {
      WEFT_CHECK(std::chrono::steady_clock::now() < deadline, DeadlineExceeded)
          << "variable " << s.spec.name << " (id " << s.spec.id << ") was not created on "
          << s.ps->task() << " within " << timeout.count()
          << " ms: does the chief make the same variables, in the same order, as this task?";
      WEFT_CHECK(tries % 25 != 0 || !chief_gone(), Unavailable)
          << "variable " << s.spec.name << " (id " << s.spec.id << ") on " << s.ps->task()
          << " cannot be read: the chief finished or failed before it was created there";
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
}

void RemoteVariable::refresh(const Tensor& cache) const {
  if (snapshot == nullptr || snapshot->pulled.insert(this).second) {  // not pulled already
    for (const Shard& s : shards_) {
      Tensor piece = s.ps->pull({s.spec})[0];
      std::memcpy(static_cast<char*>(cache.raw_data()) + s.offset, piece.raw_data(),
                  s.spec.bytes());
    }
  }
  if (snapshot != nullptr) apply_unread(cache);
}

void RemoteVariable::apply_unread(const Tensor& cache) const {
  auto it = snapshot->unread.find(this);
  if (it == snapshot->unread.end()) return;
  const std::vector<GradientUpdate> updates = std::move(it->second);
  snapshot->unread.erase(it);
  autodiff::NoRecordScope no_record;  // the read may come in a step's forward pass, on a tape
  std::vector<std::vector<Tensor>>& slots = snapshot->slots[this];
  for (const GradientUpdate& u : updates) {
    const optim::Optimizer::Algorithm& algorithm = algorithm_of(u.optimizer);
    if (slots.empty()) slots = pull_slots(u.optimizer, algorithm.slots().size());
    const Tensor gradient = contiguous(u.gradient);
    for (size_t i = 0; i < shards_.size(); ++i) {
      const Shard& s = shards_[i];
      Tensor value = piece_of(cache, s);
      algorithm.update(piece_of(gradient, s), value, slots[i], {u.learning_rate, u.iterations});
      std::memcpy(static_cast<char*>(cache.raw_data()) + s.offset, value.raw_data(),
                  s.spec.bytes());
    }
  }
}

std::vector<std::vector<Tensor>> RemoteVariable::pull_slots(const std::string& optimizer,
                                                            size_t count) const {
  {
    std::lock_guard lock(mu_);
    if (optimizer_ != optimizer) {
      for (const Shard& s : shards_) s.ps->create({s.spec}, optimizer);  // as slot() does
      optimizer_ = optimizer;
    }
  }
  std::vector<std::vector<Tensor>> slots;
  for (const Shard& s : shards_) {
    std::vector<VariableSpec> specs(count, s.spec);
    for (size_t k = 0; k < count; ++k) specs[k].slot = static_cast<uint32_t>(k + 1);
    slots.push_back(count == 0 ? std::vector<Tensor>{} : s.ps->pull(specs));
  }
  return slots;
}

void RemoteVariable::write(const Tensor& value) const {
  if (snapshot != nullptr) {  // a closure's assignment: applied with its other updates, or not
    push_pieces(snapshot->id, PushKind::kValue, value, {});
    // The copy is the variable's value in this closure from now on.
    snapshot->pulled.insert(this);
    snapshot->unread.erase(this);
    return;
  }
  const uint64_t id = ids_->next();
  std::vector<uint64_t> incarnations = push_pieces(id, PushKind::kValue, value, {});
  // Committed only once every shard has the whole of its piece (on the server it went to).
  for (size_t i = 0; i < shards_.size(); ++i) shards_[i].ps->commit(id, {}, incarnations[i]);
}

bool RemoteVariable::stage_gradient(const GradientUpdate& update) const {
  if (snapshot == nullptr) return false;
  GradientStep step{update.optimizer, update.learning_rate, update.iterations,
                    snapshot->steps[this]++};
  push_pieces(snapshot->id, PushKind::kGradient, update.gradient, step);
  snapshot->unread[this].push_back(update);
  return true;
}

bool RemoteVariable::stage_add(const Tensor& delta) const {
  if (snapshot == nullptr) return false;
  GradientStep step;  // only its index: several additions of one closure are all applied
  step.index = snapshot->steps[this]++;
  push_pieces(snapshot->id, PushKind::kAdd, delta, step);
  return true;
}

std::vector<uint64_t> RemoteVariable::push_pieces(uint64_t closure_id, PushKind kind,
                                                  const Tensor& value,
                                                  const GradientStep& step) const {
  Tensor whole = contiguous(value);
  std::vector<uint64_t> incarnations;
  for (const Shard& s : shards_) {
    s.ps->push(closure_id, kind, {s.spec}, {piece_of(whole, s)}, step);
    incarnations.push_back(s.ps->incarnation());
    if (snapshot != nullptr && snapshot->id == closure_id) {
      // The first push's incarnation: if the server restarted since, the commit is refused.
      snapshot->staged_on.emplace(s.ps->task(), incarnations.back());
    }
  }
  return incarnations;
}

}  // namespace weft::distribute::parameter_server::internal
