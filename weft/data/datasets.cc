#include "weft/data/datasets.h"

#include <cstring>
#include <filesystem>

#include "weft/core/config.h"
#include "weft/data/internal/pipeline.h"
#include "weft/data/readers/cifar10.h"
#include "weft/data/readers/idx.h"
#include "weft/ops/shape_ops.h"

namespace weft::data {

Tensor read_idx(const std::string& path) {
  IdxArray a = read_idx_file(path);
  Tensor t = Tensor::empty(a.shape, a.dtype);
  if (!a.data.empty()) std::memcpy(t.raw_data(), a.data.data(), a.data.size());
  return t;
}

ImageClassificationData load_fashion_mnist(const std::string& dir_in) {
  std::string dir = dir_in.empty() ? config::data_dir() + "/fashion-mnist" : dir_in;
  WEFT_CHECK(std::filesystem::is_directory(dir), FailedPrecondition)
      << "Fashion-MNIST directory " << dir
      << " does not exist; install Debian's dataset-fashion-mnist (scripts/install-deps) or set "
         "WEFT_DATA_DIR";
  ImageClassificationData d;
  d.train_images = read_idx(dir + "/train-images-idx3-ubyte.gz");
  d.train_labels = read_idx(dir + "/train-labels-idx1-ubyte.gz");
  d.test_images = read_idx(dir + "/t10k-images-idx3-ubyte.gz");
  d.test_labels = read_idx(dir + "/t10k-labels-idx1-ubyte.gz");
  WEFT_CHECK(d.train_images.dim(0) == d.train_labels.dim(0), DataLoss)
      << dir << ": " << d.train_images.dim(0) << " training images but " << d.train_labels.dim(0)
      << " labels";
  WEFT_CHECK(d.test_images.dim(0) == d.test_labels.dim(0), DataLoss)
      << dir << ": " << d.test_images.dim(0) << " test images but " << d.test_labels.dim(0)
      << " labels";
  return d;
}

ImageClassificationData load_cifar10(const std::string& dir_in) {
  std::string dir = dir_in.empty() ? config::data_dir() + "/cifar-10-batches-bin" : dir_in;
  WEFT_CHECK(std::filesystem::is_directory(dir), FailedPrecondition)
      << "CIFAR-10 directory " << dir
      << " does not exist; unpack the binary version (cifar-10-binary.tar.gz) there or set "
         "WEFT_DATA_DIR";
  std::vector<std::string> train;
  for (int i = 1; i <= 5; ++i) train.push_back(dir + "/data_batch_" + std::to_string(i) + ".bin");
  Cifar10Arrays tr = read_cifar10_files(train);
  Cifar10Arrays te = read_cifar10_file(dir + "/test_batch.bin");
  return {tr.images, tr.labels, te.images, te.labels};
}

namespace datasets {
namespace {

// (image float32 in [0, 1] with a channel axis, label int64), converted row by row.
Dataset image_dataset(const Tensor& images, const Tensor& labels) {
  Tensor x = images.rank() == 3 ? reshape(images, {images.dim(0), images.dim(1), images.dim(2), 1})
                                : images;
  auto source = std::make_shared<const RowSource>(
      std::vector<Tensor>{x, labels},
      std::vector<RowSource::Conversion>{{kFloat32, 255.0}, {kInt64, 1.0}});
  return Dataset(internal::make_slices_node(std::move(source)));
}

}  // namespace

TrainTest fashion_mnist(const std::string& dir) {
  ImageClassificationData d = load_fashion_mnist(dir);
  return {image_dataset(d.train_images, d.train_labels),
          image_dataset(d.test_images, d.test_labels)};
}

TrainTest cifar10(const std::string& dir) {
  ImageClassificationData d = load_cifar10(dir);
  return {image_dataset(d.train_images, d.train_labels),
          image_dataset(d.test_images, d.test_labels)};
}

}  // namespace datasets
}  // namespace weft::data
