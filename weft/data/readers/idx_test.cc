#include "weft/data/readers/idx.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "weft/core/errors.h"

namespace weft::data {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<uint8_t> idx_bytes(uint8_t type_code, const std::vector<uint32_t>& dims,
                               const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> out = {0, 0, type_code, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift : {24, 16, 8, 0}) out.push_back(static_cast<uint8_t>(d >> shift));
  }
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

std::vector<uint8_t> gzip(const std::vector<uint8_t>& raw) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::vector<uint8_t> out(deflateBound(&zs, raw.size()));
  zs.next_in = const_cast<Bytef*>(raw.data());
  zs.avail_in = static_cast<uInt>(raw.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

template <typename T>
std::vector<uint8_t> le_bytes(std::initializer_list<T> values) {
  std::vector<uint8_t> out(values.size() * sizeof(T));
  std::memcpy(out.data(), std::data(values), out.size());
  return out;
}

template <typename ErrorT, typename F>
std::string error_message(F&& f) {
  try {
    f();
  } catch (const ErrorT& e) {
    return e.message();
  }
  ADD_FAILURE() << "expected an exception";
  return "";
}

class IdxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "weft_idx_test_" + std::to_string(::getpid()) + "/";
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, const std::vector<uint8_t>& bytes) {
    const std::string path = dir_ + name;
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
    return path;
  }

  std::string dir_;
};

TEST_F(IdxTest, ReadsRawAndGzippedImages) {
  std::vector<uint8_t> pixels(3 * 2 * 4);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 11);
  const std::vector<uint8_t> raw = idx_bytes(0x08, {3, 2, 4}, pixels);
  const IdxArray expected{kUInt8, {3, 2, 4}, pixels};
  EXPECT_EQ(read_idx_file(write("images-idx3-ubyte", raw)), expected);
  const std::vector<uint8_t> gz = gzip(raw);
  ASSERT_EQ(gz[0], 0x1f);
  EXPECT_EQ(read_idx_file(write("images-idx3-ubyte.gz", gz)), expected);
  EXPECT_EQ(parse_idx(gz.data(), gz.size(), "mem"), expected);
}

TEST_F(IdxTest, DecodesEveryTypeFromBigEndian) {
  const auto parse = [](const std::vector<uint8_t>& b) {
    return parse_idx(b.data(), b.size(), "t");
  };
  EXPECT_EQ(parse(idx_bytes(0x08, {3}, {0, 9, 255})), (IdxArray{kUInt8, {3}, {0, 9, 255}}));
  EXPECT_EQ(parse(idx_bytes(0x09, {4}, {0xff, 0x7f, 0x80, 0x05})),
            (IdxArray{kInt32, {4}, le_bytes<int32_t>({-1, 127, -128, 5})}));
  EXPECT_EQ(parse(idx_bytes(0x0b, {3}, {0x80, 0x00, 0x01, 0x02, 0xff, 0xfe})),
            (IdxArray{kInt32, {3}, le_bytes<int32_t>({-32768, 258, -2})}));
  EXPECT_EQ(parse(idx_bytes(0x0c, {2}, {0x01, 0x02, 0x03, 0x04, 0xff, 0xff, 0xff, 0xfd})),
            (IdxArray{kInt32, {2}, le_bytes<int32_t>({0x01020304, -3})}));
  EXPECT_EQ(parse(idx_bytes(0x0d, {2}, {0x3f, 0xc0, 0, 0, 0xc0, 0x10, 0, 0})),
            (IdxArray{kFloat32, {2}, le_bytes<float>({1.5f, -2.25f})}));
  EXPECT_EQ(parse(idx_bytes(0x0e, {1, 1}, {0xbf, 0xf8, 0, 0, 0, 0, 0, 0})),
            (IdxArray{kFloat64, {1, 1}, le_bytes<double>({-1.5})}));
  // 0-d holds one element; a zero dimension holds none.
  EXPECT_EQ(parse(idx_bytes(0x0c, {}, {0, 0, 0, 7})),
            (IdxArray{kInt32, {}, le_bytes<int32_t>({7})}));
  EXPECT_EQ(parse(idx_bytes(0x08, {0, 28, 28}, {})), (IdxArray{kUInt8, {0, 28, 28}, {}}));
}

TEST_F(IdxTest, ConcatenatedGzipMembersDecodeToConcatenatedData) {
  const std::vector<uint8_t> raw = idx_bytes(0x08, {6}, {1, 2, 3, 4, 5, 6});
  std::vector<uint8_t> gz = gzip(std::vector<uint8_t>(raw.begin(), raw.begin() + 7));
  const std::vector<uint8_t> rest = gzip(std::vector<uint8_t>(raw.begin() + 7, raw.end()));
  gz.insert(gz.end(), rest.begin(), rest.end());
  EXPECT_EQ(parse_idx(gz.data(), gz.size(), "cat.gz"), (IdxArray{kUInt8, {6}, {1, 2, 3, 4, 5, 6}}));
}

TEST_F(IdxTest, MalformedFilesAreDataLossNamingTheFile) {
  const std::vector<uint8_t> good = idx_bytes(0x08, {2, 3}, {1, 2, 3, 4, 5, 6});
  std::vector<uint8_t> short_data = good;
  short_data.pop_back();
  std::vector<uint8_t> long_data = good;
  long_data.push_back(0);
  std::vector<uint8_t> corrupt_gz = gzip(idx_bytes(0x08, {64}, std::vector<uint8_t>(64, 7)));
  corrupt_gz[corrupt_gz.size() - 6] ^= 0xff;  // in the CRC-32 trailer
  std::vector<uint8_t> truncated_gz = gzip(good);
  truncated_gz.resize(truncated_gz.size() / 2);
  std::vector<uint8_t> garbage_gz = {0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0, 0x03, 0xff, 0xff, 0xff};

  struct Case {
    std::string file;
    std::vector<uint8_t> bytes;
    std::vector<std::string> message_parts;
  };
  const std::vector<Case> cases = {
      {"npy-instead",
       {0x93, 'N', 'U', 'M', 'P', 'Y'},
       {"bad IDX magic at byte offset 0: found 93 4e 55 4d, expected 00 00 <type code> <ndims>"}},
      {"two-bytes", {0, 0}, {"bad IDX magic", "found 00 00, expected"}},
      {"empty", {}, {"bad IDX magic", "found no bytes"}},
      {"type-07",
       idx_bytes(0x07, {1}, {0}),
       {"unknown IDX type code 07 at byte offset 2; expected 08 (uint8)"}},
      {"short-dims",
       std::vector<uint8_t>(good.begin(), good.begin() + 9),
       {"truncated IDX header: 2 dimensions need 12 header bytes", "found 9"}},
      {"short-data",
       short_data,
       {"truncated: expected 6 data bytes after the header at offset 12, found 5"}},
      {"long-data", long_data, {"trailing bytes: expected 6 data bytes", "found 7"}},
      {"huge-dims",
       idx_bytes(0x0e, {0xffffffff, 0xffffffff, 0xffffffff}, {}),
       {"truncated: expected more than 2^64 data bytes after the header at offset 16"}},
      {"corrupt.gz", corrupt_gz, {"corrupt gzip stream at compressed byte offset", "check"}},
      {"truncated.gz", truncated_gz, {"truncated gzip stream"}},
      {"garbage.gz", garbage_gz, {"corrupt gzip stream"}},
      {"short-data.gz", gzip(short_data), {" (gunzipped): truncated: expected 6 data bytes"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    const std::string path = write(c.file, c.bytes);
    const std::string message = error_message<DataLoss>([&] { read_idx_file(path); });
    EXPECT_THAT(message, HasSubstr(path + (c.file.ends_with(".gz") ? "" : ": ")));
    for (const std::string& part : c.message_parts) EXPECT_THAT(message, HasSubstr(part));
  }
}

TEST_F(IdxTest, MissingFileIsFailedPrecondition) {
  const std::string path = dir_ + "missing-idx1-ubyte";
  EXPECT_THAT(error_message<FailedPrecondition>([&] { read_idx_file(path); }),
              HasSubstr("cannot open " + path + ": No such file or directory"));
}

// The copy Debian's dataset-fashion-mnist package installs (SPEC §6).
TEST_F(IdxTest, ReadsInstalledFashionMnist) {
  const std::string dir = "/usr/share/datasets/fashion-mnist/";
  if (!std::filesystem::exists(dir + "t10k-labels-idx1-ubyte.gz")) {
    GTEST_SKIP() << dir << " is not installed (scripts/install-deps installs it)";
  }
  const IdxArray labels = read_idx_file(dir + "t10k-labels-idx1-ubyte.gz");
  EXPECT_EQ(labels.dtype, kUInt8);
  EXPECT_THAT(labels.shape, ElementsAre(10000));
  ASSERT_EQ(labels.data.size(), 10000u);
  EXPECT_THAT(std::vector<uint8_t>(labels.data.begin(), labels.data.begin() + 10),
              ElementsAre(9, 2, 1, 1, 6, 1, 4, 6, 5, 7));
  const IdxArray images = read_idx_file(dir + "t10k-images-idx3-ubyte.gz");
  EXPECT_EQ(images.dtype, kUInt8);
  EXPECT_THAT(images.shape, ElementsAre(10000, 28, 28));
  ASSERT_EQ(images.data.size(), 10000u * 28 * 28);
  int64_t first_image_sum = 0;
  for (int i = 0; i < 28 * 28; ++i) first_image_sum += images.data[i];
  EXPECT_EQ(first_image_sum, 33456);
}

}  // namespace
}  // namespace weft::data
