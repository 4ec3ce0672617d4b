#include "weft/data/datasets.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include "weft/data/readers/npy.h"
#include "weft/np/np.h"
#include "weft/ops/creation.h"
#include "weft/ops/shape_ops.h"

namespace weft::data {
namespace {

using ::testing::HasSubstr;

class DatasetsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("weft_datasets_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void write(const std::string& name, const std::vector<uint8_t>& bytes, bool gzip = false) {
    std::string path = (dir_ / name).string();
    if (gzip) {
      gzFile f = gzopen(path.c_str(), "wb");
      gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
      gzclose(f);
    } else {
      std::ofstream(path, std::ios::binary)
          .write(reinterpret_cast<const char*>(bytes.data()),
                 static_cast<std::streamsize>(bytes.size()));
    }
  }
  // An IDX uint8 file of the given dims; values are (i * 13 + label) % 256 / labels i % 10.
  void write_idx(const std::string& name, const std::vector<uint32_t>& dims, int salt) {
    std::vector<uint8_t> out = {0, 0, 0x08, static_cast<uint8_t>(dims.size())};
    size_t n = 1;
    for (uint32_t d : dims) {
      for (int shift : {24, 16, 8, 0}) out.push_back(static_cast<uint8_t>(d >> shift));
      n *= d;
    }
    for (size_t i = 0; i < n; ++i) {
      out.push_back(dims.size() == 1 ? static_cast<uint8_t>((i + salt) % 10)
                                     : static_cast<uint8_t>((i * 13 + salt) % 256));
    }
    write(name, out, /*gzip=*/true);
  }

  std::filesystem::path dir_;
};

TEST_F(DatasetsTest, FashionMnistElementsAreScaledImagesAndInt64Labels) {
  write_idx("train-images-idx3-ubyte.gz", {5, 28, 28}, 0);
  write_idx("train-labels-idx1-ubyte.gz", {5}, 0);
  write_idx("t10k-images-idx3-ubyte.gz", {2, 28, 28}, 1);
  write_idx("t10k-labels-idx1-ubyte.gz", {2}, 3);
  auto [train, test] = datasets::fashion_mnist(dir_.string());
  EXPECT_EQ(train.cardinality(), 5);
  EXPECT_EQ(test.cardinality(), 2);
  std::vector<Element> rows;
  for (const Element& e : train) rows.push_back(e);
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[2][0].shape(), (Shape{28, 28, 1}));
  EXPECT_EQ(rows[2][0].dtype(), kFloat32);
  EXPECT_EQ(rows[2][1].dtype(), kInt64);
  EXPECT_EQ(rows[2][1].rank(), 0);
  EXPECT_EQ(rows[2][1].item<int64_t>(), 2);
  std::vector<float> px = rows[2][0].to_vector<float>();
  for (size_t j : {0, 100, 783}) {
    EXPECT_FLOAT_EQ(px[j], static_cast<float>(((2 * 784 + j) * 13) % 256) / 255.0f);
  }
  // Batches go through the same conversion, gathered in one copy.
  Element batch = *train.shuffle(5, 1).batch(4).begin();
  EXPECT_EQ(batch[0].shape(), (Shape{4, 28, 28, 1}));
  EXPECT_EQ(batch[1].dtype(), kInt64);
  std::vector<float> bpx = batch[0].to_vector<float>();
  std::vector<int64_t> labels = batch[1].to_vector<int64_t>();
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_FLOAT_EQ(bpx[k * 784 + 10],
                    static_cast<float>(((labels[k] * 784 + 10) * 13) % 256) / 255.0f);
  }
  Element t0 = *test.begin();
  EXPECT_EQ(t0[1].item<int64_t>(), 3);
}

TEST_F(DatasetsTest, Cifar10FromAnUnpackedDirectory) {
  auto records = [](int n, int label) {
    std::vector<uint8_t> out;
    for (int i = 0; i < n; ++i) {
      out.push_back(static_cast<uint8_t>(label));
      for (int c = 0; c < 3; ++c) {
        for (int p = 0; p < 1024; ++p) out.push_back(static_cast<uint8_t>(c * 80 + p % 7));
      }
    }
    return out;
  };
  for (int b = 1; b <= 5; ++b) write("data_batch_" + std::to_string(b) + ".bin", records(2, b));
  write("test_batch.bin", records(3, 9));
  ImageClassificationData raw = load_cifar10(dir_.string());
  EXPECT_EQ(raw.train_images.shape(), (Shape{10, 32, 32, 3}));
  EXPECT_EQ(raw.train_labels.to_vector<int64_t>(),
            (std::vector<int64_t>{1, 1, 2, 2, 3, 3, 4, 4, 5, 5}));
  auto [train, test] = datasets::cifar10(dir_.string());
  EXPECT_EQ(train.cardinality(), 10);
  EXPECT_EQ(test.cardinality(), 3);
  Element e = *test.begin();
  EXPECT_EQ(e[0].shape(), (Shape{32, 32, 3}));
  EXPECT_EQ(e[0].dtype(), kFloat32);
  std::vector<float> px = e[0].to_vector<float>();
  EXPECT_FLOAT_EQ(px[3 * 9 + 2], (160.0f + 9 % 7) / 255.0f);  // pixel 9, blue
  EXPECT_EQ(e[1].item<int64_t>(), 9);

  std::filesystem::remove(dir_ / "data_batch_4.bin");
  EXPECT_THAT([&] { load_cifar10(dir_.string()); },
              ::testing::ThrowsMessage<FailedPrecondition>(HasSubstr("data_batch_4.bin")));
  EXPECT_THAT([&] { load_cifar10((dir_ / "missing").string()); },
              ::testing::ThrowsMessage<FailedPrecondition>(HasSubstr("CIFAR-10 directory")));
}

TEST_F(DatasetsTest, NpyFilesAsComponents) {
  np::save((dir_ / "x.npy").string(), reshape(arange(0, 12, 1, kFloat32), {4, 3}));
  np::save((dir_ / "y.npy").string(), arange(5, 9, 1, kInt64));
  np::save((dir_ / "short.npy").string(), arange(0, 3, 1, kInt64));
  std::vector<Element> rows;
  for (const Element& e :
       read_npy_dataset({(dir_ / "x.npy").string(), (dir_ / "y.npy").string()})) {
    rows.push_back(e);
  }
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[3][0].to_vector<float>(), (std::vector<float>{9, 10, 11}));
  EXPECT_EQ(rows[3][1].item<int64_t>(), 8);
  EXPECT_THAT(
      [&] {
        read_npy_dataset({(dir_ / "x.npy").string(), (dir_ / "short.npy").string()});
      },
      ::testing::ThrowsMessage<InvalidArgument>(HasSubstr("short.npy has 3 rows")));
}

}  // namespace
}  // namespace weft::data
