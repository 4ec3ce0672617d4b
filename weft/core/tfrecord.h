// TFRecord files (TensorFlow's record framing, used by TFRecordDataset and TensorBoard's event
// files): each record is its length (uint64, little-endian), the masked CRC-32C of those 8 bytes,
// the data, and the masked CRC-32C of the data.
//
//   std::string framed = weft::frame_tfrecord(payload);
//   weft::TFRecordReader in("train.tfrecord");
//   while (std::optional<std::string> record = in.next()) use(*record);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "weft/core/file_io.h"

namespace weft {

std::string frame_tfrecord(std::string_view data);

class TFRecordReader {
 public:
  // FailedPrecondition naming the file if it cannot be opened.
  explicit TFRecordReader(const std::string& path);
  // The next record, or nullopt at the end of the file. A damaged record (a CRC that does not
  // match, a length past the end of the file) throws DataLoss naming the file and the record's
  // byte offset.
  std::optional<std::string> next();
  // Where the next record starts; seek() goes back to such a place (a saved position).
  uint64_t offset() const { return offset_; }
  void seek(uint64_t offset);
  const std::string& path() const { return file_.path(); }

 private:
  io::InputFile file_;
  uint64_t offset_ = 0;
};

}  // namespace weft
