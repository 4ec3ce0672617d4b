#include "weft/checkpoint/checkpoint_io.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <filesystem>
#include <functional>
#include <set>
#include <system_error>

#include "weft/autodiff/tape.h"
#include "weft/checkpoint/internal/index.h"
#include "weft/core/crc32c.h"
#include "weft/core/errors.h"
#include "weft/core/file_io.h"
#include "weft/ops/cast.h"

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
  WEFT_CHECK(::mkdir(tmp.c_str(), 0755) == 0, FailedPrecondition)
      << "write_checkpoint: cannot create " << tmp << ": " << errno_text(errno);
  try {
    CheckpointIndex index;
    size_t next = 0;
    for (int s = 0; s < num_shards; ++s) {
      std::string name = internal::shard_file_name(s, num_shards);
      OutputFile f(tmp + "/" + name);
      for (; next < blobs.size() && blobs[next].shard == s; ++next) {
        Blob& b = blobs[next];
        f.pad_to_multiple_of(kDataAlignment);
        b.offset = f.offset();
        b.crc = crc32c(b.data, b.size);
        f.append(b.data, b.size);
      }
      f.sync_and_close();
      index.shards.push_back({name, f.offset()});
    }
    for (size_t i = 0; i < tensors.size(); ++i) {
      const Blob& b = blobs[i];
      index.tensors.push_back({tensors[i].path, values[i].dtype(), values[i].shape(),
                               index.shards[b.shard].file, b.offset, b.size, b.crc});
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
  for (const TensorEntry& t : index.tensors) {
    Tensor value = Tensor::empty(t.shape, t.dtype);
    read_blob(dir, shards, "tensor \"" + t.path + "\"", t.shard, t.offset, t.length, t.crc32c,
              value.raw_data(), throw_data_loss);
    out.tensors.emplace(t.path, std::move(value));
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
  report.ok = report.problems.empty();
  return report;
}

}  // namespace weft::checkpoint
