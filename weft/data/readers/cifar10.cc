#include "weft/data/readers/cifar10.h"

#include <cstring>

#include "weft/core/errors.h"
#include "weft/core/file_io.h"
#include "weft/ops/shape_ops.h"

namespace weft::data {
namespace {

constexpr int64_t kSide = 32;
constexpr int64_t kPlane = kSide * kSide;
constexpr int kClasses = 10;

}  // namespace

Cifar10Arrays parse_cifar10(const uint8_t* bytes, size_t size, const std::string& source_name) {
  const auto record = static_cast<size_t>(kCifar10RecordBytes);
  WEFT_CHECK(size > 0, DataLoss) << "CIFAR-10 file " << source_name
                                 << " is empty; expected records of " << record << " bytes";
  WEFT_CHECK(size % record == 0, DataLoss)
      << "CIFAR-10 file " << source_name << " is truncated: its " << size
      << " bytes are not a multiple of the " << record
      << "-byte record (1 label byte + 3072 pixel bytes); the record at byte offset "
      << size / record * record << " has only " << size % record << " bytes";
  const auto n = static_cast<int64_t>(size / record);
  Cifar10Arrays out{Tensor::empty({n, kSide, kSide, 3}, kUInt8), Tensor::empty({n}, kUInt8)};
  uint8_t* images = out.images.data<uint8_t>();
  uint8_t* labels = out.labels.data<uint8_t>();
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* r = bytes + i * record;
    WEFT_CHECK(r[0] < kClasses, DataLoss)
        << "CIFAR-10 file " << source_name << ": record " << i << " at byte offset " << i * record
        << " has label " << int{r[0]} << ", expected 0-9";
    labels[i] = r[0];
    uint8_t* img = images + i * 3 * kPlane;
    // CHW planes to HWC pixels.
    for (int64_t p = 0; p < kPlane; ++p) {
      img[3 * p] = r[1 + p];
      img[3 * p + 1] = r[1 + kPlane + p];
      img[3 * p + 2] = r[1 + 2 * kPlane + p];
    }
  }
  return out;
}

Cifar10Arrays read_cifar10_file(const std::string& path) {
  const std::string bytes = io::read_whole_file(path);
  return parse_cifar10(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), path);
}

Cifar10Arrays read_cifar10_files(const std::vector<std::string>& paths) {
  WEFT_CHECK(!paths.empty(), InvalidArgument) << "read_cifar10_files: no files given";
  std::vector<Tensor> images, labels;
  for (const std::string& path : paths) {
    Cifar10Arrays a = read_cifar10_file(path);
    images.push_back(a.images);
    labels.push_back(a.labels);
  }
  if (paths.size() == 1) return {images[0], labels[0]};
  return {concat(images, 0), concat(labels, 0)};
}

}  // namespace weft::data
