#include "weft/checkpoint/checkpoint_io.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <system_error>

#include "weft/autodiff/tape.h"
#include "weft/checkpoint/internal/index.h"
#include "weft/core/crc32c.h"
#include "weft/core/errors.h"
#include "weft/core/file_io.h"
#include "weft/core/internal/io_faults.h"
#include "weft/ops/cast.h"
#include "weft/ops/shape_ops.h"

namespace weft::checkpoint {
namespace {

static_assert(std::endian::native == std::endian::little,
              "checkpoint data is little-endian and copied to and from files as is");

using internal::hex32;
using io::errno_text;
using io::InputFile;
using io::OutputFile;

constexpr std::string_view kTmpMarker = ".tmp-";

std::string strip_trailing_slashes(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

// One thing to store: a tensor's or a state blob's bytes.
struct Blob {
  const void* data;
  uint64_t size;
  int shard = 0;
  uint64_t offset = 0;
  uint32_t crc = 0;
};

uint64_t align_up(uint64_t n) { return (n + kDataAlignment - 1) / kDataAlignment * kDataAlignment; }

// Appends b at the next aligned offset of f, recording where and its CRC32C.
void append_blob(OutputFile& f, Blob& b) {
  f.pad_to_multiple_of(kDataAlignment);
  b.offset = f.offset();
  b.crc = crc32c(b.data, b.size);
  f.append(b.data, b.size);
}

TensorEntry entry_of(const std::string& path, const Tensor& value, const Blob& b,
                     const std::string& shard) {
  TensorEntry e;
  e.path = path;
  e.dtype = value.dtype();
  e.shape = value.shape();
  e.shard = shard;
  e.offset = b.offset;
  e.length = b.size;
  e.crc32c = b.crc;
  return e;
}

// Problems go to a sink: read_checkpoint throws at the first, verify_checkpoint collects them all.
using Sink = std::function<void(const std::string&)>;

void throw_data_loss(const std::string& problem) { WEFT_FAIL(DataLoss) << problem; }

// Checks what can be checked without the index: a directory, committed by name, with an index.
CheckpointIndex load_index(const std::string& dir_arg) {
  std::string dir = strip_trailing_slashes(dir_arg);
  std::error_code ec;
  WEFT_CHECK(std::filesystem::is_directory(dir, ec), FailedPrecondition)
      << "checkpoint " << dir << ": no such directory";
  WEFT_CHECK(io::base_name(dir).find(kTmpMarker) == std::string::npos, DataLoss)
      << dir << ": an uncommitted checkpoint (the temporary directory of a save that did not "
      << "finish)";
  std::string path = dir + "/" + kIndexFileName;
  std::string bytes, error;
  WEFT_CHECK(io::read_whole_file(path, &bytes, &error), DataLoss)
      << path << ": cannot read the index (" << error << "): not a committed checkpoint";
  return internal::decode_index(bytes, path);
}

struct OpenShards {
  std::map<std::string, InputFile> files;
  std::map<std::string, std::string> open_errors;  // file -> why it could not be opened
};

OpenShards open_shards(const std::string& dir, const CheckpointIndex& index, const Sink& sink) {
  std::set<std::string> used;
  for (const TensorEntry& t : index.tensors) used.insert(t.shard);
  for (const StateEntry& s : index.state) used.insert(s.shard);
  OpenShards out;
  for (const ShardEntry& s : index.shards) {
    std::string path = dir + "/" + s.file;
    InputFile& f = out.files[s.file];
    if (std::string e = f.open(path); !e.empty()) {
      // Reported with each tensor it holds; a shard holding none is reported here.
      out.open_errors[s.file] = "the shard file is missing or unreadable (" + e + ")";
      out.files.erase(s.file);
      if (!used.contains(s.file)) sink(path + ": " + out.open_errors[s.file]);
      continue;
    }
    if (f.size() > s.length) {
      sink(path + ": " + std::to_string(f.size()) + " bytes where the index records " +
           std::to_string(s.length) + ": the shard was changed after it was written");
    }
  }
  return out;
}

// The writer pads between blobs with zeros; a non-zero byte there is damage too, so that no byte
// of a shard goes unchecked.
void check_padding(const std::string& dir, const CheckpointIndex& index, const OpenShards& shards,
                   const Sink& sink) {
  struct Extent {
    uint64_t offset, length;
    std::string what;
  };
  std::map<std::string, std::vector<Extent>> by_shard;
  for (const TensorEntry& t : index.tensors) {
    by_shard[t.shard].push_back({t.offset, t.length, "tensor \"" + t.path + "\""});
  }
  for (const StateEntry& s : index.state) {
    by_shard[s.shard].push_back({s.offset, s.length, "state blob \"" + s.name + "\""});
  }
  for (const ShardEntry& shard : index.shards) {
    auto file = shards.files.find(shard.file);
    if (file == shards.files.end()) continue;  // missing: reported with its blobs
    std::vector<Extent>& extents = by_shard[shard.file];
    std::sort(extents.begin(), extents.end(),
              [](const Extent& a, const Extent& b) { return a.offset < b.offset; });
    extents.push_back({shard.length, 0, "the end of the shard"});
    std::string path = dir + "/" + shard.file;
    uint64_t pos = 0;
    for (const Extent& e : extents) {
      if (e.offset < pos) {
        sink(path + ": " + e.what + " at offset " + std::to_string(e.offset) +
             " overlaps the blob before it (which ends at " + std::to_string(pos) + ")");
      }
      uint64_t end = std::min(e.offset, file->second.size());
      if (pos < end) {
        char gap[kDataAlignment];
        std::string error;
        uint64_t n = end - pos;
        if (n > sizeof gap || !file->second.read_at(pos, gap, n, &error) ||
            std::any_of(gap, gap + n, [](char c) { return c != 0; })) {
          sink(path + ": the padding at offset " + std::to_string(pos) + " (" + std::to_string(n) +
               " bytes) before " + e.what + " is not zero: damaged");
        }
      }
      pos = std::max(pos, e.offset + e.length);
    }
  }
}

// Reads one blob into `dst` (or, when dst is null, only checks it) and verifies its CRC32C.
void read_blob(const std::string& dir, OpenShards& shards, const std::string& what,
               const std::string& shard, uint64_t offset, uint64_t length, uint32_t crc, void* dst,
               const Sink& sink) {
  std::string where = dir + "/" + shard + ": " + what + " at offset " + std::to_string(offset) +
                      " (" + std::to_string(length) + " bytes): ";
  if (auto it = shards.open_errors.find(shard); it != shards.open_errors.end()) {
    sink(where + it->second);
    return;
  }
  const InputFile& f = shards.files.at(shard);
  if (offset > f.size() || length > f.size() - offset) {
    sink(where + "extends past the end of the shard, which has " + std::to_string(f.size()) +
         " bytes: truncated");
    return;
  }
  std::string error;
  uint32_t actual = 0;
  if (dst != nullptr) {
    if (!f.read_at(offset, dst, length, &error)) return sink(where + "read failed: " + error);
    actual = crc32c(dst, length);
  } else {
    std::vector<char> buf(std::min<uint64_t>(length, uint64_t{1} << 20));
    for (uint64_t done = 0; done < length;) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), length - done));
      if (!f.read_at(offset + done, buf.data(), n, &error)) {
        return sink(where + "read failed at offset " + std::to_string(offset + done) + ": " +
                    error);
      }
      actual = crc32c(buf.data(), n, actual);
      done += n;
    }
  }
  if (actual != crc) {
    sink(where + "CRC32C mismatch (the index records " + hex32(crc) + ", the data has " +
         hex32(actual) + ")");
  }
}

// A sliced tensor's entries (format v2) agree on dtype and global shape, and cover it exactly
// once: their volumes add up to it and no two overlap.
void check_coverage(const std::string& index_file, const std::string& path,
                    const std::vector<const TensorEntry*>& slices, const Sink& sink) {
  const TensorEntry& first = *slices[0];
  std::string who = index_file + ": tensor \"" + path + "\": ";
  uint64_t volume = 0;
  for (const TensorEntry* s : slices) {
    if (s->dtype != first.dtype || *s->global_shape != *first.global_shape) {
      return sink(who + "its slices disagree on dtype or global shape (" +
                  std::string(dtype_name(first.dtype)) + " " + shape_str(*first.global_shape) +
                  " and " + std::string(dtype_name(s->dtype)) + " " +
                  shape_str(*s->global_shape) + "): a checkpoint mixed from two saves");
    }
    volume += static_cast<uint64_t>(num_elements(s->shape));
  }
  for (size_t a = 0; a < slices.size(); ++a) {
    for (size_t b = a + 1; b < slices.size(); ++b) {
      bool overlap = num_elements(slices[a]->shape) > 0 && num_elements(slices[b]->shape) > 0;
      for (size_t d = 0; overlap && d < first.shape.size(); ++d) {
        int64_t lo = std::max(slices[a]->slice_offsets[d], slices[b]->slice_offsets[d]);
        int64_t hi = std::min(slices[a]->slice_offsets[d] + slices[a]->shape[d],
                              slices[b]->slice_offsets[d] + slices[b]->shape[d]);
        overlap = lo < hi;
      }
      if (overlap) {
        return sink(who + "slices in " + slices[a]->shard + " and " + slices[b]->shard +
                    " overlap: a checkpoint mixed from two saves");
      }
    }
  }
  if (volume != static_cast<uint64_t>(num_elements(*first.global_shape))) {
    sink(who + "its slices cover " + std::to_string(volume) + " of its " +
         std::to_string(num_elements(*first.global_shape)) +
         " elements: a part of the checkpoint is missing");
  }
}

// Every sliced tensor's entries, by path, in the order they first appear.
std::vector<std::pair<std::string, std::vector<const TensorEntry*>>> sliced_tensors(
    const CheckpointIndex& index) {
  std::vector<std::pair<std::string, std::vector<const TensorEntry*>>> out;
  std::map<std::string, size_t> at;
  for (const TensorEntry& t : index.tensors) {
    if (!t.global_shape) continue;
    auto [it, added] = at.emplace(t.path, out.size());
    if (added) out.emplace_back(t.path, std::vector<const TensorEntry*>{});
    out[it->second].second.push_back(&t);
  }
  return out;
}

void check_every_coverage(const std::string& dir, const CheckpointIndex& index, const Sink& sink) {
  for (const auto& [path, slices] : sliced_tensors(index)) {
    check_coverage(dir + "/" + kIndexFileName, path, slices, sink);
  }
}

std::string part_index_name(int part, int parts) {
  return "index-" + internal::shard_file_name(part, parts).substr(5) + ".json";
}

std::string temporary_directory(const std::string& dir, const std::string& save_id) {
  WEFT_CHECK(!save_id.empty() && save_id.find('/') == std::string::npos, InvalidArgument)
      << "checkpoint " << dir << ": save_id \"" << save_id
      << "\" must be non-empty and without '/'";
  return dir + std::string(kTmpMarker) + save_id;
}

}  // namespace

void write_checkpoint(const std::string& dir_arg, const std::vector<SavedTensor>& tensors,
                      const std::map<std::string, std::string>& state,
                      const WriteOptions& options) {
  WEFT_CHECK(!dir_arg.empty(), InvalidArgument) << "write_checkpoint: empty directory name";
  std::string dir = strip_trailing_slashes(dir_arg);
  WEFT_CHECK(io::base_name(dir).find(kTmpMarker) == std::string::npos, InvalidArgument)
      << "write_checkpoint: \"" << dir << "\": a checkpoint name must not contain \"" << kTmpMarker
      << "\" (it marks uncommitted checkpoints)";
  std::string parent = io::parent_directory(dir);
  std::error_code ec;
  WEFT_CHECK(std::filesystem::is_directory(parent, ec), FailedPrecondition)
      << "write_checkpoint: " << dir << ": the parent directory " << parent << " does not exist";

  // Contiguous copies where needed, and the plan: which blob goes where.
  autodiff::NoRecordScope no_record;
  std::vector<Tensor> values;
  std::vector<Blob> blobs;
  std::set<std::string> paths;
  values.reserve(tensors.size());
  for (const SavedTensor& t : tensors) {
    WEFT_CHECK(!t.path.empty(), InvalidArgument) << "write_checkpoint: a tensor has an empty path";
    WEFT_CHECK(paths.insert(t.path).second, InvalidArgument)
        << "write_checkpoint: tensor path \"" << t.path << "\" appears twice";
    WEFT_CHECK(t.value.defined(), InvalidArgument)
        << "write_checkpoint: tensor \"" << t.path << "\" is undefined";
    values.push_back(contiguous(t.value));
    blobs.push_back({values.back().raw_data(),
                     static_cast<uint64_t>(values.back().numel() * dtype_size(t.value.dtype()))});
  }
  for (const auto& [name, bytes] : state) blobs.push_back({bytes.data(), bytes.size()});
  int num_shards = 1;
  for (uint64_t used = 0; Blob & b : blobs) {
    if (used > 0 && align_up(used) + b.size > options.max_shard_bytes) {
      ++num_shards;
      used = 0;
    }
    b.shard = num_shards - 1;
    used = align_up(used) + b.size;
  }

  std::string tmp = dir + std::string(kTmpMarker) + std::to_string(::getpid());
  std::filesystem::remove_all(tmp, ec);  // from an earlier process with our pid that crashed
  io::internal::io_step();
  WEFT_CHECK(::mkdir(tmp.c_str(), 0755) == 0, FailedPrecondition)
      << "write_checkpoint: cannot create " << tmp << ": " << errno_text(errno);
  try {
    CheckpointIndex index;
    size_t next = 0;
    for (int s = 0; s < num_shards; ++s) {
      std::string name = internal::shard_file_name(s, num_shards);
      OutputFile f(tmp + "/" + name);
      for (; next < blobs.size() && blobs[next].shard == s; ++next) append_blob(f, blobs[next]);
      f.sync_and_close();
      index.shards.push_back({name, f.offset()});
    }
    for (size_t i = 0; i < tensors.size(); ++i) {
      index.tensors.push_back(entry_of(tensors[i].path, values[i], blobs[i],
                                       index.shards[blobs[i].shard].file));
    }
    size_t i = tensors.size();
    for (const auto& [name, bytes] : state) {
      const Blob& b = blobs[i++];
      index.state.push_back({name, index.shards[b.shard].file, b.offset, b.size, b.crc});
    }
    std::string encoded = internal::encode_index(index);
    OutputFile f(tmp + "/" + kIndexFileName);
    f.append(encoded.data(), encoded.size());
    f.sync_and_close();
    io::fsync_directory(tmp);
    io::rename_directory_replacing(tmp, dir);
  } catch (...) {
    std::filesystem::remove_all(tmp, ec);
    throw;
  }
  io::fsync_directory(parent);
}

CheckpointIndex read_index(const std::string& dir) { return load_index(dir); }

LoadedCheckpoint read_checkpoint(const std::string& dir_arg) {
  std::string dir = strip_trailing_slashes(dir_arg);
  CheckpointIndex index = load_index(dir);
  OpenShards shards = open_shards(dir, index, throw_data_loss);
  LoadedCheckpoint out;
  check_every_coverage(dir, index, throw_data_loss);
  autodiff::NoRecordScope no_record;
  for (const TensorEntry& t : index.tensors) {
    Tensor value = Tensor::empty(t.shape, t.dtype);
    read_blob(dir, shards, "tensor \"" + t.path + "\"", t.shard, t.offset, t.length, t.crc32c,
              value.raw_data(), throw_data_loss);
    if (!t.global_shape) {
      out.tensors.emplace(t.path, std::move(value));
      continue;
    }
    // A slice: written into the whole tensor, made at its first slice.
    auto [it, first] = out.tensors.try_emplace(t.path);
    if (first) it->second = Tensor::empty(*t.global_shape, t.dtype);
    std::vector<Slice> where;
    for (size_t d = 0; d < t.shape.size(); ++d) {
      where.push_back(Slice{t.slice_offsets[d], t.slice_offsets[d] + t.shape[d]});
    }
    if (value.numel() > 0) assign_into(slice(it->second, where), value);
  }
  for (const StateEntry& s : index.state) {
    std::string bytes(s.length, '\0');
    read_blob(dir, shards, "state blob \"" + s.name + "\"", s.shard, s.offset, s.length, s.crc32c,
              bytes.data(), throw_data_loss);
    out.state.emplace(s.name, std::move(bytes));
  }
  check_padding(dir, index, shards, throw_data_loss);
  return out;
}

std::vector<Tensor> read_checkpoint_regions(const std::string& dir_arg,
                                            const std::vector<Region>& regions,
                                            std::map<std::string, std::string>* state) {
  std::string dir = strip_trailing_slashes(dir_arg);
  CheckpointIndex index = load_index(dir);
  OpenShards shards = open_shards(dir, index, throw_data_loss);
  check_every_coverage(dir, index, throw_data_loss);
  autodiff::NoRecordScope no_record;
  std::map<std::string, std::vector<const TensorEntry*>> by_path;
  for (const TensorEntry& t : index.tensors) by_path[t.path].push_back(&t);
  std::map<const TensorEntry*, Tensor> read;  // each entry read (and checked) once
  std::vector<Tensor> out;
  for (const Region& r : regions) {
    auto it = by_path.find(r.path);
    WEFT_CHECK(it != by_path.end(), InvalidArgument)
        << "checkpoint " << dir << " holds no tensor \"" << r.path << "\"";
    const TensorEntry& first = *it->second.front();
    const Shape& whole = first.global_shape ? *first.global_shape : first.shape;
    bool inside = r.offsets.size() == whole.size() && r.shape.size() == whole.size();
    for (size_t d = 0; inside && d < whole.size(); ++d) {
      inside = r.offsets[d] >= 0 && r.shape[d] >= 0 && r.offsets[d] + r.shape[d] <= whole[d];
    }
    WEFT_CHECK(inside, InvalidArgument)
        << "checkpoint " << dir << ": a region of shape " << shape_str(r.shape) << " at "
        << shape_str(r.offsets) << " lies outside tensor \"" << r.path << "\" of shape "
        << shape_str(whole);
    Tensor region = Tensor::empty(r.shape, first.dtype);
    for (const TensorEntry* e : it->second) {
      // The overlap of the entry and the region, in the coordinates of each.
      std::vector<Slice> in_entry, in_region;
      bool overlaps = true;
      for (size_t d = 0; d < whole.size(); ++d) {
        const int64_t at = e->global_shape ? e->slice_offsets[d] : 0;
        const int64_t lo = std::max(at, r.offsets[d]);
        const int64_t hi = std::min(at + e->shape[d], r.offsets[d] + r.shape[d]);
        overlaps = overlaps && lo < hi;
        in_entry.push_back(Slice{lo - at, hi - at});
        in_region.push_back(Slice{lo - r.offsets[d], hi - r.offsets[d]});
      }
      if (!overlaps) continue;
      auto [cached, fresh] = read.try_emplace(e);
      if (fresh) {
        cached->second = Tensor::empty(e->shape, e->dtype);
        read_blob(dir, shards, "tensor \"" + e->path + "\"", e->shard, e->offset, e->length,
                  e->crc32c, cached->second.raw_data(), throw_data_loss);
      }
      if (whole.empty()) {
        assign_into(region, cached->second);
      } else {
        assign_into(slice(region, in_region), slice(cached->second, in_entry));
      }
    }
    out.push_back(std::move(region));
  }
  if (state != nullptr) {
    for (const StateEntry& s : index.state) {
      std::string bytes(s.length, '\0');
      read_blob(dir, shards, "state blob \"" + s.name + "\"", s.shard, s.offset, s.length,
                s.crc32c, bytes.data(), throw_data_loss);
      (*state)[s.name] = std::move(bytes);
    }
  }
  return out;
}

std::string check_committed(const std::string& dir_arg) {
  std::string dir = strip_trailing_slashes(dir_arg);
  try {
    CheckpointIndex index = load_index(dir);
    for (const ShardEntry& s : index.shards) {
      std::string path = dir + "/" + s.file;
      struct stat st;
      if (::stat(path.c_str(), &st) != 0) {
        return path + ": the shard file is missing (" + errno_text(errno) + ")";
      }
      if (static_cast<uint64_t>(st.st_size) != s.length) {
        return path + ": " + std::to_string(st.st_size) + " bytes where the index records " +
               std::to_string(s.length) +
               (static_cast<uint64_t>(st.st_size) < s.length ? ": truncated" : "");
      }
    }
  } catch (const Error& e) {
    return e.message();
  }
  return {};
}

VerifyReport verify_checkpoint(const std::string& dir_arg) {
  std::string dir = strip_trailing_slashes(dir_arg);
  VerifyReport report;
  try {
    report.index = load_index(dir);
  } catch (const Error& e) {
    report.problems.push_back(e.message());
    return report;
  }
  Sink collect = [&](const std::string& p) { report.problems.push_back(p); };
  OpenShards shards = open_shards(dir, *report.index, collect);
  for (const TensorEntry& t : report.index->tensors) {
    read_blob(dir, shards, "tensor \"" + t.path + "\"", t.shard, t.offset, t.length, t.crc32c,
              nullptr, collect);
  }
  for (const StateEntry& s : report.index->state) {
    read_blob(dir, shards, "state blob \"" + s.name + "\"", s.shard, s.offset, s.length, s.crc32c,
              nullptr, collect);
  }
  check_padding(dir, *report.index, shards, collect);
  check_every_coverage(dir, *report.index, collect);
  report.ok = report.problems.empty();
  return report;
}

void write_checkpoint_part(const std::string& dir_arg, const std::string& save_id, int part,
                           int parts, const std::vector<SavedSlice>& slices,
                           const std::map<std::string, std::string>& state) {
  std::string dir = strip_trailing_slashes(dir_arg);
  WEFT_CHECK(parts >= 1 && part >= 0 && part < parts, InvalidArgument)
      << "write_checkpoint_part: part " << part << " of " << parts;
  const std::string tmp = temporary_directory(dir, save_id);
  io::internal::io_step();
  WEFT_CHECK(::mkdir(tmp.c_str(), 0755) == 0 || errno == EEXIST, FailedPrecondition)
      << "write_checkpoint_part: cannot create " << tmp << ": " << errno_text(errno);
  autodiff::NoRecordScope no_record;
  std::vector<Tensor> values;
  std::vector<Blob> blobs;
  values.reserve(slices.size());
  for (const SavedSlice& s : slices) {
    WEFT_CHECK(!s.path.empty() && s.value.defined(), InvalidArgument)
        << "write_checkpoint_part: slice \"" << s.path << "\" has an empty path or no value";
    WEFT_CHECK(s.global_shape.size() == s.value.shape().size() &&
                   s.offsets.size() == s.global_shape.size(),
               InvalidArgument)
        << "write_checkpoint_part: slice \"" << s.path << "\" of shape "
        << shape_str(s.value.shape()) << " at " << shape_str(s.offsets) << " of "
        << shape_str(s.global_shape) << ": the ranks differ";
    for (size_t d = 0; d < s.global_shape.size(); ++d) {
      WEFT_CHECK(s.offsets[d] >= 0 && s.offsets[d] + s.value.dim(static_cast<int64_t>(d)) <=
                                          s.global_shape[d],
                 InvalidArgument)
          << "write_checkpoint_part: slice \"" << s.path << "\" of shape "
          << shape_str(s.value.shape()) << " at " << shape_str(s.offsets)
          << " does not lie within " << shape_str(s.global_shape);
    }
    values.push_back(contiguous(s.value));
    blobs.push_back({values.back().raw_data(),
                     static_cast<uint64_t>(values.back().numel() * dtype_size(s.value.dtype()))});
  }
  for (const auto& [name, bytes] : state) blobs.push_back({bytes.data(), bytes.size()});
  CheckpointIndex index;
  const std::string name = internal::shard_file_name(part, parts);
  {
    OutputFile f(tmp + "/" + name);
    for (Blob& b : blobs) append_blob(f, b);
    f.sync_and_close();
    index.shards.push_back({name, f.offset()});
  }
  for (size_t i = 0; i < slices.size(); ++i) {
    TensorEntry e = entry_of(slices[i].path, values[i], blobs[i], name);
    e.global_shape = slices[i].global_shape;
    e.slice_offsets = slices[i].offsets;
    index.tensors.push_back(std::move(e));
  }
  size_t i = slices.size();
  for (const auto& [state_name, bytes] : state) {
    const Blob& b = blobs[i++];
    index.state.push_back({state_name, name, b.offset, b.size, b.crc});
  }
  std::string encoded = internal::encode_index(index);
  OutputFile f(tmp + "/" + part_index_name(part, parts));
  f.append(encoded.data(), encoded.size());
  f.sync_and_close();
  io::fsync_directory(tmp);
}

int remove_abandoned_saves(const std::string& parent, const std::string& name_prefix) {
  std::error_code ec;
  std::vector<std::filesystem::path> abandoned;
  for (const auto& e : std::filesystem::directory_iterator(parent, ec)) {
    std::string base = e.path().filename().string();
    if (base.starts_with(name_prefix) && base.find(kTmpMarker) != std::string::npos &&
        e.is_directory(ec)) {
      abandoned.push_back(e.path());
    }
  }
  for (const auto& p : abandoned) std::filesystem::remove_all(p, ec);
  return static_cast<int>(abandoned.size());
}

void commit_checkpoint(const std::string& dir_arg, const std::string& save_id, int parts) {
  std::string dir = strip_trailing_slashes(dir_arg);
  const std::string tmp = temporary_directory(dir, save_id);
  CheckpointIndex merged;
  for (int k = 0; k < parts; ++k) {
    const std::string path = tmp + "/" + part_index_name(k, parts);
    std::string bytes, error;
    WEFT_CHECK(io::read_whole_file(path, &bytes, &error), DataLoss)
        << path << ": part " << k << " of " << parts << " of checkpoint " << dir
        << " was not written (" << error << ")";
    CheckpointIndex part = internal::decode_index(bytes, path);
    for (const ShardEntry& s : part.shards) {
      struct stat st;
      std::string file = tmp + "/" + s.file;
      WEFT_CHECK(::stat(file.c_str(), &st) == 0 && static_cast<uint64_t>(st.st_size) == s.length,
                 DataLoss)
          << file << ": part " << k << "'s data file is missing or not the " << s.length
          << " bytes its entries record";
      merged.shards.push_back(s);
    }
    merged.tensors.insert(merged.tensors.end(), part.tensors.begin(), part.tensors.end());
    merged.state.insert(merged.state.end(), part.state.begin(), part.state.end());
  }
  std::string encoded = internal::encode_index(merged);
  // What a reader will check (duplicates, coverage), before anything is committed.
  CheckpointIndex check = internal::decode_index(encoded, tmp + "/" + kIndexFileName);
  check_every_coverage(tmp, check, throw_data_loss);
  {
    OutputFile f(tmp + "/" + kIndexFileName);
    f.append(encoded.data(), encoded.size());
    f.sync_and_close();
  }
  for (int k = 0; k < parts; ++k) {
    io::internal::io_step();
    std::filesystem::remove(tmp + "/" + part_index_name(k, parts));
  }
  io::fsync_directory(tmp);
  io::rename_directory_replacing(tmp, dir);
  io::fsync_directory(io::parent_directory(dir));
}

}  // namespace weft::checkpoint
