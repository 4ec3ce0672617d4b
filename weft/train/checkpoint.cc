#include "weft/train/checkpoint.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <system_error>

#include "weft/checkpoint/checkpoint_io.h"
#include "weft/checkpoint/held_slices.h"
#include "weft/core/errors.h"
#include "weft/core/file_io.h"
#include "weft/core/trace_me.h"
#include "weft/distribute/cluster_connection.h"
#include "weft/distribute/collective/communicator.h"
#include "weft/distribute/values.h"
#include "weft/dtensor/clients.h"
#include "weft/dtensor/dtensor.h"
#include "weft/ops/shape_ops.h"

namespace weft::train {
namespace {

namespace fs = std::filesystem;
namespace ckpt = weft::checkpoint;

constexpr const char* kStateFileName = "checkpoint";

std::vector<std::pair<int64_t, std::string>> scan(const std::string& directory,
                                                  const std::string& name) {
  std::vector<std::pair<int64_t, std::string>> out;
  std::error_code ec;
  fs::directory_iterator it(directory, ec);
  if (ec) return out;
  std::string prefix = name + "-";
  for (const fs::directory_entry& e : it) {
    std::string base = e.path().filename().string();
    if (!base.starts_with(prefix) || base.size() == prefix.size()) continue;
    int64_t step = 0;
    const char* first = base.data() + prefix.size();
    const char* last = base.data() + base.size();
    auto [end, err] = std::from_chars(first, last, step);
    if (err != std::errc() || end != last || *first == '-' || *first == '+') continue;
    if (!e.is_directory(ec)) continue;
    out.emplace_back(step, directory + "/" + base);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<std::string> newest_committed(const std::string& directory, const std::string& name) {
  auto dirs = scan(directory, name);
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
    if (ckpt::check_committed(it->second).empty()) return it->second;
  }
  return std::nullopt;
}

bool is_valid_name(const std::string& name) {
  return !name.empty() && name.find('/') == std::string::npos;
}

// What writer `part` of `parts` writes of `t`: a DTensor's blocks whose lowest device is in this
// process, each in global coordinates; a local tensor whole, or with several writers its share
// of the rows (axis 0 cut as a global batch is; a scalar is part 0's).
std::vector<ckpt::SavedSlice> own_slices(const ckpt::SavedTensor& t, int part, int parts) {
  std::vector<ckpt::SavedSlice> out;
  if (const TensorParts* p = t.value.parts()) {
    for (const TensorBlock& b : p->blocks()) {
      if (b.saves) out.push_back({t.path, b.value, t.value.shape(), b.offsets});
    }
    return out;
  }
  int64_t rows = t.value.rank() > 0 ? t.value.dim(0) : 1;
  auto [lo, hi] = distribute::row_range(rows, parts, part);
  if (lo == hi && !(rows == 0 && part == 0)) return out;  // an empty one: part 0's
  Shape offsets(static_cast<size_t>(t.value.rank()), 0);
  if (t.value.rank() > 0) offsets[0] = lo;
  out.push_back({t.path,
                 t.value.rank() > 0 && parts > 1 ? slice(t.value, {Slice{lo, hi}}) : t.value,
                 t.value.shape(), offsets});
  return out;
}

std::string random_save_id() {
  std::random_device device;
  return std::to_string((uint64_t{device()} << 32) ^ device());
}

// A checkpoint some of whose variables other processes hold (parameter servers): part 0 is this
// process's (its own variables, whole, and the objects' state), part k the k-th holder's slices,
// which it writes itself, every holder at once; then this process commits.
void save_with_holders(const std::string& dir, const std::vector<ckpt::SavedTensor>& tensors,
                       const std::map<std::string, std::string>& state,
                       std::vector<ckpt::HeldSlice> held) {
  const auto holders = ckpt::by_holder(std::move(held));
  const int parts = 1 + static_cast<int>(holders.size());
  const std::string save_id = random_save_id();
  std::vector<ckpt::SavedSlice> own;
  for (const ckpt::SavedTensor& t : tensors) {
    for (ckpt::SavedSlice& s : own_slices(t, 0, 1)) own.push_back(std::move(s));
  }
  ckpt::write_checkpoint_part(dir, save_id, 0, parts, own, state);
  ckpt::on_every_holder(holders, [&](int k, const std::vector<ckpt::HeldSlice>& slices) {
    slices.front().holder->save(dir, save_id, k + 1, parts, slices);
  });
  ckpt::commit_checkpoint(dir, save_id, parts);
}

// A checkpoint of DTensors on a mesh across clients, which every client saves (as TensorFlow's
// DTensor checkpoints): client k writes its blocks as part k of the save that client 0's draw
// names. Empty when every mesh is in this process.
std::optional<Checkpoint::Writers> clients_writing(const std::vector<ckpt::SavedTensor>& tensors) {
  for (const ckpt::SavedTensor& t : tensors) {
    if (!dtensor::is_dtensor(t.value)) continue;
    const dtensor::Mesh mesh = dtensor::fetch_layout(t.value).mesh();
    if (mesh.num_local_devices() == mesh.size()) continue;
    namespace collective = distribute::collective;
    collective::Communicator& comm = *dtensor::internal::connection().communicator();
    Checkpoint::Writers writers;
    writers.part = comm.rank();
    writers.parts = comm.size();
    std::random_device device;
    const auto draw = static_cast<int64_t>((uint64_t{device()} << 31) ^ device());
    writers.save_id = std::to_string(
        collective::broadcast(comm, Tensor::scalar(draw, kInt64), 0).item<int64_t>());
    writers.barrier = [mesh] { dtensor::barrier(mesh); };
    return writers;
  }
  return std::nullopt;
}

}  // namespace

Checkpoint::Checkpoint(std::vector<std::pair<std::string, Trackable*>> objects,
                       std::string directory, int max_to_keep, std::string checkpoint_name)
    : objects_(std::move(objects)),
      directory_(std::move(directory)),
      max_to_keep_(max_to_keep),
      checkpoint_name_(std::move(checkpoint_name)),
      warn_([](const std::string& m) { std::fprintf(stderr, "weft: %s\n", m.c_str()); }) {
  WEFT_CHECK(!directory_.empty(), InvalidArgument) << "train::Checkpoint: empty directory";
  while (directory_.size() > 1 && directory_.back() == '/') directory_.pop_back();
  WEFT_CHECK(is_valid_name(checkpoint_name_), InvalidArgument)
      << "train::Checkpoint: checkpoint_name \"" << checkpoint_name_
      << "\" must be non-empty and without '/'";
  std::set<std::string> names;
  for (const auto& [name, object] : objects_) {
    WEFT_CHECK(is_valid_name(name), InvalidArgument)
        << "train::Checkpoint: object name \"" << name << "\" must be non-empty and without '/'";
    WEFT_CHECK(object != nullptr, InvalidArgument)
        << "train::Checkpoint: object \"" << name << "\" is null";
    WEFT_CHECK(names.insert(name).second, InvalidArgument)
        << "train::Checkpoint: object name \"" << name << "\" appears twice";
  }
}

std::vector<std::pair<int64_t, std::string>> Checkpoint::numbered_dirs() const {
  return scan(directory_, checkpoint_name_);
}

std::string Checkpoint::save(int64_t step) { return save(step, Writers{}); }

std::string Checkpoint::save(int64_t step, const Writers& writers) {
  TraceMe trace("Checkpoint::save", 1, TraceCategory::kCheckpoint);
  WEFT_CHECK(writers.parts >= 1 && writers.part >= 0 && writers.part < writers.parts &&
                 (writers.parts == 1 || (!writers.save_id.empty() && writers.barrier)),
             InvalidArgument)
      << "train::Checkpoint::save: writer " << writers.part << " of " << writers.parts
      << (writers.parts > 1 ? " needs a save_id and a barrier" : "");
  WEFT_CHECK(step >= 0, InvalidArgument)
      << "train::Checkpoint::save: step " << step << " is negative";
  std::error_code ec;
  fs::create_directories(directory_, ec);
  WEFT_CHECK(!ec, FailedPrecondition)
      << "train::Checkpoint::save: cannot create " << directory_ << ": " << ec.message();
  std::vector<ckpt::SavedTensor> tensors;
  std::map<std::string, std::string> state;
  std::vector<ckpt::HeldSlice> held;  // variables whose holders write them (one writer only)
  ckpt::collect_trackables({objects_.begin(), objects_.end()}, &tensors, &state,
                           writers.parts == 1 ? &held : nullptr);
  std::string dir = directory_ + "/" + checkpoint_name_ + "-" + std::to_string(step);
  const bool laid_out = std::any_of(tensors.begin(), tensors.end(),
                                    [](const ckpt::SavedTensor& t) { return t.value.parts(); });
  if (writers.parts == 1 && laid_out) {
    if (std::optional<Writers> clients = clients_writing(tensors)) {
      std::string saved = save(step, *clients);
      clients->barrier();  // every client returns once client 0 has committed
      return saved;
    }
  }
  if (writers.parts > 1) {
    // This writer's slices of each variable, then every writer's part is in and writer 0 commits.
    std::vector<ckpt::SavedSlice> slices;
    for (const ckpt::SavedTensor& t : tensors) {
      for (ckpt::SavedSlice& s : own_slices(t, writers.part, writers.parts)) {
        slices.push_back(std::move(s));
      }
    }
    if (writers.part != 0) state.clear();
    ckpt::write_checkpoint_part(dir, writers.save_id, writers.part, writers.parts, slices, state);
    writers.barrier();
    if (writers.part != 0) return dir;
    ckpt::commit_checkpoint(dir, writers.save_id, writers.parts);
  } else if (!held.empty()) {
    save_with_holders(dir, tensors, state, std::move(held));
  } else if (laid_out) {
    // DTensors: their blocks as slices in global coordinates, one writer.
    std::vector<ckpt::SavedSlice> slices;
    for (const ckpt::SavedTensor& t : tensors) {
      for (ckpt::SavedSlice& s : own_slices(t, 0, 1)) slices.push_back(std::move(s));
    }
    const std::string save_id = random_save_id();
    ckpt::write_checkpoint_part(dir, save_id, 0, 1, slices, state);
    ckpt::commit_checkpoint(dir, save_id, 1);
  } else {
    ckpt::write_checkpoint(dir, tensors, state);
  }

  // What saves that never committed left (every writer of this save is past its barrier, so
  // none is writing now), then the oldest beyond max_to_keep. The index goes first, so a
  // deletion cut short leaves a directory that is plainly uncommitted.
  ckpt::remove_abandoned_saves(directory_, checkpoint_name_ + "-");
  auto dirs = numbered_dirs();
  std::vector<std::string> kept;
  size_t excess = max_to_keep_ > 0 && dirs.size() > static_cast<size_t>(max_to_keep_)
                      ? dirs.size() - static_cast<size_t>(max_to_keep_)
                      : 0;
  for (const auto& [s, d] : dirs) {
    if (excess > 0 && d != dir) {
      --excess;
      fs::remove(d + "/" + ckpt::kIndexFileName, ec);
      fs::remove_all(d, ec);
      continue;
    }
    kept.push_back(io::base_name(d));
  }
  io::fsync_directory(directory_);
  nlohmann::ordered_json state_file{{"latest", kept.back()}, {"all", kept}};
  io::write_file_atomically(directory_ + "/" + kStateFileName, state_file.dump(1) + "\n");
  return dir;
}

void Checkpoint::restore(const std::string& dir) {
  TraceMe trace("Checkpoint::restore", 1, TraceCategory::kCheckpoint);
  ckpt::restore_trackables(dir, objects_);
}

std::optional<std::string> Checkpoint::latest() const {
  return newest_committed(directory_, checkpoint_name_);
}

bool Checkpoint::restore_latest() {
  auto dirs = numbered_dirs();
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
    try {
      restore(it->second);
      return true;
    } catch (const DataLoss& e) {
      warn_("skipping checkpoint " + it->second + ", it is damaged or uncommitted: " + e.message());
    }
  }
  return false;
}

std::vector<std::string> Checkpoint::checkpoints() const {
  std::vector<std::string> out;
  for (const auto& [step, dir] : numbered_dirs()) {
    if (ckpt::check_committed(dir).empty()) out.push_back(dir);
  }
  return out;
}

void Checkpoint::set_warning_handler(std::function<void(const std::string&)> handler) {
  warn_ = std::move(handler);
}

std::optional<std::string> latest_checkpoint(const std::string& directory,
                                             const std::string& checkpoint_name) {
  return newest_committed(directory, checkpoint_name);
}

}  // namespace weft::train
