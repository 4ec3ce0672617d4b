#include "weft/data/readers/records.h"

#include <glob.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "weft/core/file_io.h"
#include "weft/core/tfrecord.h"
#include "weft/data/internal/pipeline.h"
#include "weft/data/readers/example.pb.h"
#include "weft/ops/cast.h"
#include "weft/ops/shape_ops.h"

namespace weft::data {

Tensor string_tensor(std::string_view s) {
  Tensor t = Tensor::empty({static_cast<int64_t>(s.size())}, kUInt8);
  if (!s.empty()) std::memcpy(t.raw_data(), s.data(), s.size());
  return t;
}

std::string as_string(const Tensor& t) {
  WEFT_CHECK(t.defined() && t.dtype() == kUInt8 && t.rank() == 1, InvalidArgument)
      << "as_string: a string is a 1-D uint8 tensor, got "
      << (t.defined() ? shape_str(t.shape()) + " " + std::string(dtype_name(t.dtype()))
                      : std::string("an undefined tensor"));
  Tensor c = contiguous(t);
  return std::string(static_cast<const char*>(c.raw_data()), static_cast<size_t>(c.numel()));
}

namespace {

using internal::Node;
using internal::NodePtr;
using internal::Reader;

// ---- records of files: lines or TFRecords ----------------------------------------------------

enum class Format { kTextLine, kTFRecord, kFixedLength };

struct FileFormat {
  Format format;
  int64_t record_bytes = 0, header_bytes = 0, footer_bytes = 0;  // kFixedLength
};

// One open file and the next record's byte offset in it.
class OpenFile {
 public:
  OpenFile(std::string path, const FileFormat& f) : path_(std::move(path)), f_(f) {
    if (f_.format == Format::kTFRecord) {
      records_ = std::make_unique<TFRecordReader>(path_);
      return;
    }
    text_ = io::read_whole_file(path_);
    if (f_.format == Format::kFixedLength) {
      const int64_t size = static_cast<int64_t>(text_.size());
      const int64_t body = size - f_.header_bytes - f_.footer_bytes;
      WEFT_CHECK(body >= 0 && body % f_.record_bytes == 0, DataLoss)
          << path_ << ": " << size << " bytes are not a " << f_.header_bytes
          << "-byte header, whole records of " << f_.record_bytes << " bytes and a "
          << f_.footer_bytes << "-byte footer";
      offset_ = static_cast<size_t>(f_.header_bytes);
    }
  }
  std::optional<std::string> next() {
    if (records_) return records_->next();
    if (f_.format == Format::kFixedLength) {
      if (offset_ + f_.footer_bytes >= text_.size()) return std::nullopt;
      std::string record = text_.substr(offset_, static_cast<size_t>(f_.record_bytes));
      offset_ += static_cast<size_t>(f_.record_bytes);
      return record;
    }
    if (offset_ >= text_.size()) return std::nullopt;
    size_t end = text_.find('\n', offset_);
    size_t stop = end == std::string::npos ? text_.size() : end;
    std::string line = text_.substr(offset_, stop - offset_);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    offset_ = end == std::string::npos ? text_.size() : end + 1;
    return line;
  }
  uint64_t offset() const { return records_ ? records_->offset() : offset_; }
  void seek(uint64_t offset) {
    if (records_) return records_->seek(offset);
    WEFT_CHECK(offset <= text_.size(), DataLoss)
        << path_ << ": a saved position " << offset << " past the end of the file (" << text_.size()
        << " bytes)";
    offset_ = offset;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  FileFormat f_;
  std::unique_ptr<TFRecordReader> records_;
  std::string text_;
  size_t offset_ = 0;
};

const char* name_of(Format f) {
  return f == Format::kTFRecord      ? "tfrecord_dataset"
         : f == Format::kFixedLength ? "fixed_length_record_dataset"
                                     : "text_line_dataset";
}

class FileRecordsReader : public Reader {
 public:
  FileRecordsReader(std::unique_ptr<Reader> filenames, FileFormat format)
      : filenames_(std::move(filenames)), format_(format) {}
  std::optional<Element> next() override {
    while (true) {
      if (!file_) {
        std::optional<Element> name = filenames_->next();
        if (!name) return std::nullopt;
        WEFT_CHECK(name->size() == 1, InvalidArgument)
            << name_of(format_.format) << ": a dataset of file names must have one component, got "
            << name->size();
        file_ = std::make_unique<OpenFile>(as_string(name->at(0)), format_);
      }
      std::optional<std::string> record;
      try {
        record = file_->next();
      } catch (const DataLoss&) {
        file_.reset();  // the rest of a damaged file is skipped (ignore_errors goes on)
        throw;
      }
      if (record) return Element{string_tensor(*record)};
      file_.reset();
    }
  }
  void save(StateWriter& w) const override {
    w.begin(name_of(format_.format));
    filenames_->save(w);
    w.write_bool(file_ != nullptr);
    if (file_) {
      w.write_string(file_->path());
      w.write_u64(file_->offset());
    }
  }
  void restore(StateReader& r) override {
    r.begin(name_of(format_.format));
    filenames_->restore(r);
    file_.reset();
    if (r.read_bool("an open file")) {
      std::string path = r.read_string("the file's name");
      uint64_t offset = r.read_u64("the position in the file");
      file_ = std::make_unique<OpenFile>(path, format_);
      file_->seek(offset);
    }
  }

 private:
  std::unique_ptr<Reader> filenames_;
  FileFormat format_;
  std::unique_ptr<OpenFile> file_;
};

class FileRecordsNode : public Node {
 public:
  FileRecordsNode(NodePtr filenames, FileFormat format)
      : filenames_(std::move(filenames)), format_(format) {}
  std::unique_ptr<Reader> make_reader() const override {
    return std::make_unique<FileRecordsReader>(filenames_->make_reader(), format_);
  }
  std::string describe() const override {
    std::string s = std::string(name_of(format_.format)) + "(" + filenames_->describe();
    if (format_.format == Format::kFixedLength) {
      s += ", " + std::to_string(format_.record_bytes) + ", " +
           std::to_string(format_.header_bytes) + ", " + std::to_string(format_.footer_bytes);
    }
    return s + ")";
  }

  NodePtr shard_files(FileShard& shard) const override {
    return internal::with_sharded_input(*this, &FileRecordsNode::filenames_, shard);
  }

 private:
  NodePtr filenames_;
  FileFormat format_;
};

Dataset names(const std::vector<std::string>& filenames) {
  std::vector<Element> elements;
  std::string description = "[";
  for (size_t i = 0; i < filenames.size(); ++i) {
    elements.push_back({string_tensor(filenames[i])});
    description += (i ? ", " : "") + filenames[i];
  }
  return Dataset(internal::make_elements_node(std::move(elements), description + "]", true));
}

}  // namespace

Dataset list_files(const std::string& pattern, bool shuffle, uint64_t seed) {
  glob_t g{};
  int rc = ::glob(pattern.c_str(), GLOB_ERR, nullptr, &g);
  std::vector<std::string> found;
  if (rc == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) found.emplace_back(g.gl_pathv[i]);
  }
  globfree(&g);
  WEFT_CHECK(rc == 0 && !found.empty(), InvalidArgument)
      << "list_files: no files match \"" << pattern << "\"";
  std::sort(found.begin(), found.end());
  std::vector<Element> elements;
  for (const std::string& f : found) elements.push_back({string_tensor(f)});
  Dataset ds(
      internal::make_elements_node(std::move(elements), "list_files(" + pattern + ")", true));
  return shuffle ? ds.shuffle(static_cast<int64_t>(found.size()), seed) : ds;
}

Dataset text_line_dataset(const std::vector<std::string>& filenames) {
  return text_line_dataset(names(filenames));
}
Dataset text_line_dataset(const Dataset& filenames) {
  return Dataset(
      std::make_shared<FileRecordsNode>(filenames.node(), FileFormat{Format::kTextLine}));
}
Dataset fixed_length_record_dataset(const std::vector<std::string>& filenames, int64_t record_bytes,
                                    int64_t header_bytes, int64_t footer_bytes) {
  return fixed_length_record_dataset(names(filenames), record_bytes, header_bytes, footer_bytes);
}
Dataset fixed_length_record_dataset(const Dataset& filenames, int64_t record_bytes,
                                    int64_t header_bytes, int64_t footer_bytes) {
  WEFT_CHECK(record_bytes > 0 && header_bytes >= 0 && footer_bytes >= 0, InvalidArgument)
      << "fixed_length_record_dataset: record_bytes (" << record_bytes << ") must be positive, "
      << "header_bytes (" << header_bytes << ") and footer_bytes (" << footer_bytes
      << ") non-negative";
  return Dataset(std::make_shared<FileRecordsNode>(
      filenames.node(),
      FileFormat{Format::kFixedLength, record_bytes, header_bytes, footer_bytes}));
}
Dataset tfrecord_dataset(const std::vector<std::string>& filenames) {
  return tfrecord_dataset(names(filenames));
}
Dataset tfrecord_dataset(const Dataset& filenames) {
  return Dataset(
      std::make_shared<FileRecordsNode>(filenames.node(), FileFormat{Format::kTFRecord}));
}

// ---- tf.train.Example -----------------------------------------------------------------------

namespace {

template <typename T, typename List>
Tensor values_of(const List& list, DType dtype) {
  std::vector<T> v(list.value().begin(), list.value().end());
  return cast(Tensor::from_vector(v), dtype);
}

// The values of a feature as a 1-D tensor of `dtype`; InvalidArgument naming the feature when its
// kind does not match.
Tensor feature_values(const std::string& name, const proto::Feature& f, DType dtype) {
  const char* want = dtype == kInt64 ? "int64_list" : dtype == kUInt8 ? "bytes_list" : "float_list";
  switch (f.kind_case()) {
    case proto::Feature::kInt64List:
      WEFT_CHECK(dtype == kInt64 || dtype == kInt32, InvalidArgument)
          << "parse_example: feature \"" << name << "\" holds an int64_list, the spec expects a "
          << want;
      return values_of<int64_t>(f.int64_list(), dtype);
    case proto::Feature::kFloatList:
      WEFT_CHECK(is_floating(dtype), InvalidArgument)
          << "parse_example: feature \"" << name << "\" holds a float_list, the spec expects a "
          << want;
      return values_of<float>(f.float_list(), dtype);
    case proto::Feature::kBytesList: {
      WEFT_CHECK(dtype == kUInt8, InvalidArgument)
          << "parse_example: feature \"" << name << "\" holds a bytes_list, the spec expects a "
          << want;
      WEFT_CHECK(f.bytes_list().value_size() == 1, InvalidArgument)
          << "parse_example: bytes feature \"" << name << "\" has " << f.bytes_list().value_size()
          << " values; weft reads exactly one (a uint8 tensor)";
      return string_tensor(f.bytes_list().value(0));
    }
    case proto::Feature::KIND_NOT_SET:
      return Tensor::empty({0}, dtype);
  }
  return Tensor();
}

}  // namespace

Element parse_example(const Tensor& serialized,
                      const std::vector<std::pair<std::string, FeatureSpec>>& spec) {
  std::string bytes = as_string(serialized);
  proto::Example example;
  WEFT_CHECK(example.ParseFromString(bytes), DataLoss)
      << "parse_example: " << bytes.size() << " bytes that are not a serialized tf.train.Example";
  const auto& features = example.features().feature();
  Element out;
  for (const auto& [name, feature_spec] : spec) {
    auto found = features.find(name);
    if (const auto* var = std::get_if<VarLenFeature>(&feature_spec)) {
      out.push_back(found == features.end() ? Tensor::empty({0}, var->dtype)
                                            : feature_values(name, found->second, var->dtype));
      continue;
    }
    const auto& fixed = std::get<FixedLenFeature>(feature_spec);
    const int64_t want = num_elements(fixed.shape);
    if (found == features.end()) {
      WEFT_CHECK(static_cast<int64_t>(fixed.default_value.size()) == want && fixed.dtype != kUInt8,
                 InvalidArgument)
          << "parse_example: the example has no feature \"" << name
          << "\" and its FixedLenFeature has no default_value of " << want << " values";
      out.push_back(cast(Tensor::from_vector(fixed.default_value, fixed.shape), fixed.dtype));
      continue;
    }
    Tensor values = feature_values(name, found->second, fixed.dtype);
    if (fixed.dtype == kUInt8) {
      WEFT_CHECK(fixed.shape.empty(), InvalidArgument)
          << "parse_example: bytes feature \"" << name << "\" must have shape (), got "
          << shape_str(fixed.shape);
      out.push_back(values);
      continue;
    }
    WEFT_CHECK(values.numel() == want, InvalidArgument)
        << "parse_example: feature \"" << name << "\" has " << values.numel()
        << " values, its FixedLenFeature of shape " << shape_str(fixed.shape) << " wants " << want;
    out.push_back(reshape(values, fixed.shape));
  }
  return out;
}

}  // namespace weft::data
