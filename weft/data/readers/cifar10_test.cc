#include "weft/data/readers/cifar10.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "weft/core/errors.h"

namespace weft::data {
namespace {

using ::testing::HasSubstr;

// Pixel (channel c, row h, column w) of record i, as the file stores it (CHW).
uint8_t pixel(int i, int c, int h, int w) {
  return static_cast<uint8_t>(i * 7 + c * 50 + h * 3 + w);
}

std::vector<uint8_t> records(int n, int first_label = 0) {
  std::vector<uint8_t> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(static_cast<uint8_t>((first_label + i) % 10));
    for (int c = 0; c < 3; ++c) {
      for (int h = 0; h < 32; ++h) {
        for (int w = 0; w < 32; ++w) out.push_back(pixel(i, c, h, w));
      }
    }
  }
  return out;
}

class Cifar10Test : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("weft_cifar10_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::vector<uint8_t>& bytes) {
    std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
    return path;
  }
  template <typename F>
  std::string data_loss(F&& f) {
    try {
      f();
    } catch (const DataLoss& e) {
      return e.message();
    }
    ADD_FAILURE() << "expected DataLoss";
    return "";
  }
  std::filesystem::path dir_;
};

TEST_F(Cifar10Test, RecordsBecomeNhwcImagesAndLabels) {
  Cifar10Arrays a = read_cifar10_file(write("data_batch_1.bin", records(3, 8)));
  EXPECT_EQ(a.images.shape(), (Shape{3, 32, 32, 3}));
  EXPECT_EQ(a.images.dtype(), kUInt8);
  EXPECT_EQ(a.labels.shape(), (Shape{3}));
  EXPECT_EQ(a.labels.to_vector<int64_t>(), (std::vector<int64_t>{8, 9, 0}));
  std::vector<uint8_t> px = a.images.to_vector<uint8_t>();
  for (int i : {0, 2}) {
    for (auto [h, w] : {std::pair{0, 0}, {5, 17}, {31, 31}}) {
      for (int c = 0; c < 3; ++c) {
        EXPECT_EQ(px[((i * 32 + h) * 32 + w) * 3 + c], pixel(i, c, h, w))
            << "image " << i << " at (" << h << ", " << w << ", " << c << ")";
      }
    }
  }
}

TEST_F(Cifar10Test, SeveralFilesConcatenate) {
  Cifar10Arrays a =
      read_cifar10_files({write("a.bin", records(2, 1)), write("b.bin", records(1, 5))});
  EXPECT_EQ(a.images.dim(0), 3);
  EXPECT_EQ(a.labels.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 5}));
}

TEST_F(Cifar10Test, TruncatedFileNamesFileAndOffset) {
  std::vector<uint8_t> bytes = records(3);
  bytes.erase(bytes.end() - 1000, bytes.end());  // the third record loses its last 1000 bytes
  std::string path = write("short.bin", bytes);
  std::string msg = data_loss([&] { read_cifar10_file(path); });
  EXPECT_THAT(msg, HasSubstr(path));
  EXPECT_THAT(msg, HasSubstr("8219 bytes are not a multiple of the 3073-byte record"));
  EXPECT_THAT(msg, HasSubstr("the record at byte offset 6146 has only 2073 bytes"));
  EXPECT_THAT(data_loss([&] { read_cifar10_file(write("empty.bin", {})); }), HasSubstr("is empty"));
}

TEST_F(Cifar10Test, BadLabelNamesRecordAndOffset) {
  std::vector<uint8_t> bytes = records(3);
  bytes[2 * 3073] = 10;
  std::string path = write("labels.bin", bytes);
  EXPECT_THAT(data_loss([&] { read_cifar10_file(path); }),
              HasSubstr(path + ": record 2 at byte offset 6146 has label 10, expected 0-9"));
}

TEST_F(Cifar10Test, MissingFileIsFailedPrecondition) {
  EXPECT_THAT([&] { read_cifar10_file((dir_ / "nope.bin").string()); },
              ::testing::ThrowsMessage<FailedPrecondition>(HasSubstr("nope.bin")));
}

}  // namespace
}  // namespace weft::data
