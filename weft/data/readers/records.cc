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

// ---- in-memory elements (list_files' names) -------------------------------------------------

class ElementsReader : public Reader {
 public:
  explicit ElementsReader(std::shared_ptr<const std::vector<Element>> elements)
      : elements_(std::move(elements)) {}
  std::optional<Element> next() override {
    if (index_ >= elements_->size()) return std::nullopt;
    return (*elements_)[index_++];
  }
  void save(StateWriter& w) const override {
    w.begin("elements");
    w.write_i64(static_cast<int64_t>(index_));
  }
  void restore(StateReader& r) override {
    r.begin("elements");
    index_ =
        static_cast<size_t>(r.read_i64("position", 0, static_cast<int64_t>(elements_->size())));
  }

 private:
  std::shared_ptr<const std::vector<Element>> elements_;
  size_t index_ = 0;
};

class ElementsNode : public Node {
 public:
  ElementsNode(std::vector<Element> elements, std::string description)
      : elements_(std::make_shared<const std::vector<Element>>(std::move(elements))),
        description_(std::move(description)) {}
  std::unique_ptr<Reader> make_reader() const override {
    return std::make_unique<ElementsReader>(elements_);
  }
  int64_t cardinality() const override { return static_cast<int64_t>(elements_->size()); }
  std::string describe() const override { return description_; }

 private:
  std::shared_ptr<const std::vector<Element>> elements_;
  std::string description_;
};

// ---- records of files: lines or TFRecords ----------------------------------------------------

enum class Format { kTextLine, kTFRecord };

// One open file and the next record's byte offset in it.
class OpenFile {
 public:
  OpenFile(std::string path, Format format) : path_(std::move(path)), format_(format) {
    if (format_ == Format::kTFRecord) {
      records_ = std::make_unique<TFRecordReader>(path_);
    } else {
      text_ = io::read_whole_file(path_);
    }
  }
  std::optional<std::string> next() {
    if (records_) return records_->next();
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
  Format format_;
  std::unique_ptr<TFRecordReader> records_;
  std::string text_;
  size_t offset_ = 0;
};

class FileRecordsReader : public Reader {
 public:
  FileRecordsReader(std::unique_ptr<Reader> filenames, Format format)
      : filenames_(std::move(filenames)), format_(format) {}
  std::optional<Element> next() override {
    while (true) {
      if (!file_) {
        std::optional<Element> name = filenames_->next();
        if (!name) return std::nullopt;
        WEFT_CHECK(name->size() == 1, InvalidArgument)
            << "a dataset of file names must have one component, got " << name->size();
        file_ = std::make_unique<OpenFile>(as_string(name->at(0)), format_);
      }
      if (std::optional<std::string> record = file_->next()) return Element{string_tensor(*record)};
      file_.reset();
    }
  }
  void save(StateWriter& w) const override {
    w.begin(format_ == Format::kTFRecord ? "tfrecord" : "text_line");
    filenames_->save(w);
    w.write_bool(file_ != nullptr);
    if (file_) {
      w.write_string(file_->path());
      w.write_u64(file_->offset());
    }
  }
  void restore(StateReader& r) override {
    r.begin(format_ == Format::kTFRecord ? "tfrecord" : "text_line");
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
  Format format_;
  std::unique_ptr<OpenFile> file_;
};

class FileRecordsNode : public Node {
 public:
  FileRecordsNode(NodePtr filenames, Format format)
      : filenames_(std::move(filenames)), format_(format) {}
  std::unique_ptr<Reader> make_reader() const override {
    return std::make_unique<FileRecordsReader>(filenames_->make_reader(), format_);
  }
  std::string describe() const override {
    return std::string(format_ == Format::kTFRecord ? "tfrecord_dataset(" : "text_line_dataset(") +
           filenames_->describe() + ")";
  }

 private:
  NodePtr filenames_;
  Format format_;
};

Dataset names(const std::vector<std::string>& filenames) {
  std::vector<Element> elements;
  std::string description = "[";
  for (size_t i = 0; i < filenames.size(); ++i) {
    elements.push_back({string_tensor(filenames[i])});
    description += (i ? ", " : "") + filenames[i];
  }
  return Dataset(std::make_shared<ElementsNode>(std::move(elements), description + "]"));
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
  Dataset ds(std::make_shared<ElementsNode>(std::move(elements), "list_files(" + pattern + ")"));
  return shuffle ? ds.shuffle(static_cast<int64_t>(found.size()), seed) : ds;
}

Dataset text_line_dataset(const std::vector<std::string>& filenames) {
  return text_line_dataset(names(filenames));
}
Dataset text_line_dataset(const Dataset& filenames) {
  return Dataset(std::make_shared<FileRecordsNode>(filenames.node(), Format::kTextLine));
}
Dataset tfrecord_dataset(const std::vector<std::string>& filenames) {
  return tfrecord_dataset(names(filenames));
}
Dataset tfrecord_dataset(const Dataset& filenames) {
  return Dataset(std::make_shared<FileRecordsNode>(filenames.node(), Format::kTFRecord));
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
