#include "weft/data/internal/snapshot_io.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>

#include "weft/core/config_dict.h"
#include "weft/core/tfrecord.h"

namespace weft::data::internal {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kFormatVersion = 1;

std::string padded(int64_t n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%08lld", static_cast<long long>(n));
  return buf;
}

std::string chunk_path(const std::string& shard_dir, int64_t chunk) {
  return shard_dir + "/" + padded(chunk) + ".snapshot";
}

Compression compression_from_name(const std::string& name, const std::string& file) {
  if (name == "NONE") return Compression::kNone;
  if (name == "GZIP") return Compression::kGzip;
  WEFT_CHECK(false, DataLoss) << file << ": unknown compression \"" << name
                              << "\"; expected NONE or GZIP";
  return Compression::kNone;
}

// An element's record: its bytes as an iterator state holds them; with kGzip, the uncompressed
// length (8 bytes, little-endian) and the bytes deflated by zlib.
std::string encode(const Element& e, Compression c) {
  StateWriter w;
  w.write_element(e);
  if (c != Compression::kGzip) return w.bytes();
  const std::string& raw = w.bytes();
  uLongf size = compressBound(static_cast<uLong>(raw.size()));
  std::string out(8 + size, '\0');
  const uint64_t n = raw.size();
  std::memcpy(out.data(), &n, 8);
  const int rc = compress2(reinterpret_cast<Bytef*>(out.data() + 8), &size,
                           reinterpret_cast<const Bytef*>(raw.data()),
                           static_cast<uLong>(raw.size()), Z_DEFAULT_COMPRESSION);
  WEFT_CHECK(rc == Z_OK, Internal) << "Dataset::save: zlib compress2 failed with code " << rc;
  out.resize(8 + size);
  return out;
}

Element decode(const std::string& record, Compression c, const std::string& file, uint64_t offset) {
  std::string inflated;
  const std::string* bytes = &record;
  if (c == Compression::kGzip) {
    uint64_t n = 0;
    WEFT_CHECK(record.size() >= 8, DataLoss)
        << file << ": the record at byte offset " << offset << " is too short to be deflated";
    std::memcpy(&n, record.data(), 8);
    WEFT_CHECK(n < (uint64_t{1} << 40), DataLoss)
        << file << ": the record at byte offset " << offset << " announces " << n << " bytes";
    inflated.resize(n);
    uLongf size = static_cast<uLongf>(n);
    const int rc = uncompress(reinterpret_cast<Bytef*>(inflated.data()), &size,
                              reinterpret_cast<const Bytef*>(record.data() + 8), record.size() - 8);
    WEFT_CHECK(rc == Z_OK && size == n, DataLoss)
        << file << ": the record at byte offset " << offset << " does not inflate (zlib code " << rc
        << "); was it saved with GZIP?";
    bytes = &inflated;
  }
  try {
    StateReader r(*bytes);
    Element e = r.read_element("saved element");
    if (!r.at_end()) r.fail("the end of the record after the element");
    return e;
  } catch (const DataLoss& e) {
    WEFT_CHECK(false, DataLoss) << file << ": the record at byte offset " << offset
                                << " is not an element: " << e.message();
    throw;
  }
}

class SnapshotShardReader : public Reader {
 public:
  SnapshotShardReader(std::string dir, Compression c) : dir_(std::move(dir)), compression_(c) {
    std::error_code ec;
    WEFT_CHECK(fs::is_directory(dir_, ec), DataLoss)
        << "Dataset::load: the shard directory " << dir_
        << " does not exist any more; the data was removed or saved over";
    for (const fs::directory_entry& f : fs::directory_iterator(dir_)) {
      const std::string name = f.path().filename().string();
      if (name.size() > 9 && name.ends_with(".snapshot")) chunks_.push_back(f.path().string());
    }
    std::sort(chunks_.begin(), chunks_.end());
  }

  std::optional<Element> next() override {
    while (chunk_ < static_cast<int64_t>(chunks_.size())) {
      if (!file_) {
        file_.emplace(chunks_[static_cast<size_t>(chunk_)]);
        file_->seek(offset_);
      }
      const uint64_t at = file_->offset();
      if (std::optional<std::string> record = file_->next()) {
        offset_ = file_->offset();
        return decode(*record, compression_, file_->path(), at);
      }
      ++chunk_;
      offset_ = 0;
      file_.reset();
    }
    return std::nullopt;
  }
  void save(StateWriter& w) const override {
    w.begin("snapshot_shard");
    w.write_i64(chunk_);
    w.write_u64(offset_);
  }
  void restore(StateReader& r) override {
    r.begin("snapshot_shard");
    chunk_ = r.read_i64("chunk index", 0, static_cast<int64_t>(chunks_.size()));
    offset_ = r.read_u64("byte offset in the chunk");
    file_.reset();
  }

 private:
  std::string dir_;
  Compression compression_;
  std::vector<std::string> chunks_;  // sorted: the order they were written in
  int64_t chunk_ = 0;
  uint64_t offset_ = 0;
  std::optional<TFRecordReader> file_;
};

class SnapshotShardNode : public Node {
 public:
  SnapshotShardNode(std::string dir, Compression c) : dir_(std::move(dir)), compression_(c) {}
  std::unique_ptr<Reader> make_reader() const override {
    return std::make_unique<SnapshotShardReader>(dir_, compression_);
  }
  std::string describe() const override { return "snapshot_shard(\"" + dir_ + "\")"; }

 private:
  std::string dir_;
  Compression compression_;
};

ConfigDict spec_config(const TensorSpec& s) {
  ConfigDict c;
  c.set("dtype", std::string(dtype_name(s.dtype)));
  c.set("shape", std::vector<int64_t>(s.shape.begin(), s.shape.end()));
  return c;
}

}  // namespace

const char* compression_name(Compression c) {
  switch (c) {
    case Compression::kAuto:
      return "AUTO";
    case Compression::kNone:
      return "NONE";
    case Compression::kGzip:
      return "GZIP";
  }
  return "?";
}

std::string metadata_path(const std::string& dir) { return dir + "/snapshot.metadata"; }

std::optional<SnapshotMetadata> read_metadata(const std::string& dir) {
  const std::string path = metadata_path(dir);
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  const std::string json = io::read_whole_file(path);
  SnapshotMetadata m;
  try {
    ConfigDict c = ConfigDict::from_json(json);
    m.version = c.get_int("version");
    WEFT_CHECK(m.version == kFormatVersion, DataLoss)
        << path << ": format version " << m.version << "; expected " << kFormatVersion;
    m.pipeline = c.get_string("pipeline");
    for (const ConfigDict& s : c.get_dicts("element_spec")) {
      std::vector<int64_t> shape = s.get_ints("shape");
      m.element_spec.push_back({dtype_from_name(s.get_string("dtype")), Shape(shape)});
    }
    m.compression = compression_from_name(c.get_string("compression"), path);
    m.shards = c.get_ints("shards");
    m.num_elements = c.get_int("num_elements");
    m.run_id = c.get_string("run_id");
    m.finalized = c.get_bool("finalized");
  } catch (const InvalidArgument& e) {
    WEFT_CHECK(false, DataLoss) << path << " is damaged: " << e.message();
  }
  WEFT_CHECK(!m.run_id.empty() && m.run_id.find('/') == std::string::npos, DataLoss)
      << path << " is damaged: run_id \"" << m.run_id << "\" is not a directory name";
  return m;
}

void write_metadata(const std::string& dir, const SnapshotMetadata& m) {
  ConfigDict c;
  c.set("version", m.version);
  c.set("pipeline", m.pipeline);
  std::vector<ConfigDict> spec;
  for (const TensorSpec& s : m.element_spec) spec.push_back(spec_config(s));
  c.set("element_spec", spec);
  c.set("compression", std::string(compression_name(m.compression)));
  c.set("shards", m.shards);
  c.set("num_elements", m.num_elements);
  c.set("run_id", m.run_id);
  c.set("finalized", m.finalized);
  io::write_file_atomically(metadata_path(dir), c.to_json(2) + "\n");
}

std::string shard_dir(const std::string& dir, const std::string& run_id, int64_t shard) {
  return dir + "/" + run_id + "/" + padded(shard) + ".shard";
}

std::string new_run_id() {
  std::random_device device;
  std::mt19937_64 gen((uint64_t{device()} << 32) ^ device());
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(gen()));
  return buf;
}

SnapshotWriter::SnapshotWriter(std::string dir, std::string run_id, Compression compression)
    : dir_(std::move(dir)), run_id_(std::move(run_id)), compression_(compression) {}

void SnapshotWriter::write(int64_t shard, const Element& e) {
  Shard& s = shards_[shard];
  if (!s.file) {
    const std::string d = shard_dir(dir_, run_id_, shard);
    std::error_code ec;
    fs::create_directories(d, ec);
    WEFT_CHECK(!ec, FailedPrecondition) << "cannot create " << d << ": " << ec.message();
    s.file = std::make_unique<io::AtomicOutputFile>(chunk_path(d, s.next_chunk++));
  }
  s.file->append(frame_tfrecord(encode(e, compression_)));
}

void SnapshotWriter::close_chunks() {
  for (auto& [id, s] : shards_) {
    if (s.file) s.file->commit();
    s.file.reset();
  }
}

std::vector<int64_t> SnapshotWriter::shards() const {
  std::vector<int64_t> ids;
  for (const auto& [id, s] : shards_) ids.push_back(id);
  return ids;
}

std::map<int64_t, int64_t> SnapshotWriter::chunk_counts() const {
  std::map<int64_t, int64_t> out;
  for (const auto& [id, s] : shards_) out[id] = s.next_chunk - (s.file ? 1 : 0);
  return out;
}

bool SnapshotWriter::adopt(const std::string& from, const std::map<int64_t, int64_t>& chunks) {
  for (const auto& [id, n] : chunks) {
    const std::string src = shard_dir(dir_, from, id), dst = shard_dir(dir_, run_id_, id);
    std::error_code ec;
    fs::create_directories(dst, ec);
    if (ec) return false;
    for (int64_t c = 0; c < n; ++c) {
      fs::create_hard_link(chunk_path(src, c), chunk_path(dst, c), ec);
      if (ec) fs::copy_file(chunk_path(src, c), chunk_path(dst, c), ec);
      if (ec) return false;
    }
    shards_[id].next_chunk = n;
  }
  return true;
}

NodePtr make_snapshot_shard_node(std::string shard_dir, Compression compression) {
  return std::make_shared<SnapshotShardNode>(std::move(shard_dir), compression);
}

void widen_spec(std::vector<TensorSpec>& spec, const Element& e, int64_t index) {
  if (index == 0) {
    spec.clear();
    for (const Tensor& t : e) spec.push_back({t.dtype(), t.shape()});
    return;
  }
  WEFT_CHECK(e.size() == spec.size(), InvalidArgument)
      << "Dataset::save: element " << index << " has " << e.size()
      << " components; the first element has " << spec.size();
  for (size_t i = 0; i < e.size(); ++i) {
    TensorSpec& s = spec[i];
    WEFT_CHECK(e[i].dtype() == s.dtype && e[i].rank() == static_cast<int64_t>(s.shape.size()),
               InvalidArgument)
        << "Dataset::save: component " << i << " of element " << index << " is "
        << dtype_name(e[i].dtype()) << " " << shape_str(e[i].shape())
        << "; expected the dtype and rank of the elements before it, " << dtype_name(s.dtype) << " "
        << shape_str(s.shape);
    for (size_t d = 0; d < s.shape.size(); ++d) {
      if (s.shape[d] != e[i].shape()[d]) s.shape[d] = -1;
    }
  }
}

std::string spec_str(const std::vector<TensorSpec>& spec) {
  std::string out = "(";
  for (size_t i = 0; i < spec.size(); ++i) {
    out +=
        (i ? ", " : "") + std::string(dtype_name(spec[i].dtype)) + " " + shape_str(spec[i].shape);
  }
  return out + ")";
}

}  // namespace weft::data::internal
