// File sources as tf.data has them: list_files, TextLineDataset, TFRecordDataset and
// FixedLengthRecordDataset (here text_line_dataset, tfrecord_dataset and
// fixed_length_record_dataset), and tf.io.parse_single_example for the tf.train.Example records
// TFRecord files usually hold. weft's tensors have no string dtype: a
// string (a file name, a line, a record) is a 1-D uint8 tensor of its bytes; string_tensor and
// as_string convert.
//
//   auto lines = weft::data::text_line_dataset({"/usr/share/common-licenses/GPL-3"});
//   auto records = weft::data::tfrecord_dataset(weft::data::list_files("data/*.tfrecord"));
//   auto parsed = records.map([](const weft::data::Element& e) {
//     return weft::data::parse_example(e[0], {{"label", weft::data::FixedLenFeature{weft::kInt64}},
//                                             {"pixels", weft::data::FixedLenFeature{
//                                                            weft::kFloat32, {784}}}});
//   });
//
// Iterators over these datasets save their position (the file and the byte offset in it), so
// BackupAndRestore resumes them exactly; a file that changed since is refused on restore only if
// it is now shorter than the saved offset.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "weft/data/dataset.h"

namespace weft::data {

Tensor string_tensor(std::string_view s);
// InvalidArgument unless `t` is a 1-D uint8 tensor.
std::string as_string(const Tensor& t);

// The files matching a glob pattern, sorted, as strings; shuffled each pass (seeded as shuffle())
// when `shuffle`, as tf.data.Dataset.list_files does by default. InvalidArgument when nothing
// matches.
Dataset list_files(const std::string& pattern, bool shuffle = true, uint64_t seed = 0);

// Each line of each file (without its "\n" or "\r\n"), file after file.
Dataset text_line_dataset(const std::vector<std::string>& filenames);
Dataset text_line_dataset(const Dataset& filenames);
// Each record of each TFRecord file, CRC-checked: a damaged file throws DataLoss naming it and
// the record's byte offset.
Dataset tfrecord_dataset(const std::vector<std::string>& filenames);
Dataset tfrecord_dataset(const Dataset& filenames);

// Records of record_bytes bytes, after a header and before a footer of the given sizes, from each
// file (tf.data.FixedLengthRecordDataset). A file whose size does not fit is DataLoss naming it.
Dataset fixed_length_record_dataset(const std::vector<std::string>& filenames, int64_t record_bytes,
                                    int64_t header_bytes = 0, int64_t footer_bytes = 0);
Dataset fixed_length_record_dataset(const Dataset& filenames, int64_t record_bytes,
                                    int64_t header_bytes = 0, int64_t footer_bytes = 0);

// tf.io.FixedLenFeature: exactly shape's element count of values (or none, when a default is
// given), as a tensor of `shape`. dtype kInt64, kFloat32, or kUInt8 for a bytes feature (one
// bytes value, given as a 1-D uint8 tensor; shape must be empty).
struct FixedLenFeature {
  DType dtype = kFloat32;
  Shape shape{};
  std::vector<double> default_value{};  // used when the example lacks the feature
};
// tf.io.VarLenFeature: all of the feature's values as a 1-D tensor (TensorFlow gives a
// SparseTensor; weft has none). An absent feature gives an empty tensor.
struct VarLenFeature {
  DType dtype = kFloat32;
};
using FeatureSpec = std::variant<FixedLenFeature, VarLenFeature>;

// One tensor per feature of `spec`, in its order, from a serialized tf.train.Example (a 1-D
// uint8 tensor). InvalidArgument naming the feature when it is missing, of another kind, or has
// the wrong number of values; DataLoss when the bytes are not an Example.
Element parse_example(const Tensor& serialized,
                      const std::vector<std::pair<std::string, FeatureSpec>>& spec);

}  // namespace weft::data
