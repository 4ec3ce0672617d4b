#include "weft/core/tfrecord.h"

#include <cstring>

#include "weft/core/crc32c.h"
#include "weft/core/errors.h"

namespace weft {

std::string frame_tfrecord(std::string_view data) {
  std::string out;
  uint64_t length = data.size();
  char header[12];
  std::memcpy(header, &length, 8);
  uint32_t length_crc = masked_crc32c(crc32c(header, 8));
  std::memcpy(header + 8, &length_crc, 4);
  out.append(header, 12);
  out.append(data);
  uint32_t data_crc = masked_crc32c(crc32c(data.data(), data.size()));
  char footer[4];
  std::memcpy(footer, &data_crc, 4);
  out.append(footer, 4);
  return out;
}

TFRecordReader::TFRecordReader(const std::string& path) : file_(path) {}

void TFRecordReader::seek(uint64_t offset) {
  WEFT_CHECK(offset <= file_.size(), DataLoss)
      << path() << ": a record position " << offset << " past the end of the file (" << file_.size()
      << " bytes)";
  offset_ = offset;
}

std::optional<std::string> TFRecordReader::next() {
  if (offset_ == file_.size()) return std::nullopt;
  const uint64_t at = offset_;
  WEFT_CHECK(file_.size() - at >= 12, DataLoss)
      << path() << ": truncated record header at byte offset " << at << " (" << file_.size() - at
      << " bytes left, 12 needed)";
  char header[12];
  file_.read_exactly(at, header, 12);
  uint64_t length;
  uint32_t length_crc;
  std::memcpy(&length, header, 8);
  std::memcpy(&length_crc, header + 8, 4);
  WEFT_CHECK(masked_crc32c(crc32c(header, 8)) == length_crc, DataLoss)
      << path() << ": corrupted record at byte offset " << at << ": the length's CRC-32C does "
      << "not match";
  WEFT_CHECK(length <= file_.size() - at - 12 && file_.size() - at - 12 - length >= 4, DataLoss)
      << path() << ": truncated record at byte offset " << at << ": " << length
      << " data bytes and a CRC announced, " << file_.size() - at - 12 << " bytes left";
  std::string data(length, '\0');
  file_.read_exactly(at + 12, data.data(), length);
  uint32_t data_crc;
  file_.read_exactly(at + 12 + length, &data_crc, 4);
  WEFT_CHECK(masked_crc32c(crc32c(data.data(), data.size())) == data_crc, DataLoss)
      << path() << ": corrupted record at byte offset " << at << ": the data's CRC-32C does not "
      << "match";
  offset_ = at + 12 + length + 4;
  return data;
}

}  // namespace weft
