// Dataset::save / load: the order, dtypes and ragged shapes come back at any shard count; custom
// shard_func and reader_func; GZIP; element_spec and compression checks; a damaged record is
// DataLoss naming the file and offset; a save that fails leaves the previous one; iterator
// states restore at every cut.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "weft/core/config.h"
#include "weft/data/dataset.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/testing/dataset_checks.h"

namespace weft::data {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using weft::testing::all;
using weft::testing::every_cut;
using weft::testing::expect_restores_exactly;
using weft::testing::Flat;

class SaveLoadTest : public weft::testing::DirectoryTest {
 protected:
  SaveLoadTest() : DirectoryTest("weft_save") {}
  // The run directories under path().
  std::vector<std::string> runs() const {
    std::vector<std::string> out;
    for (const auto& d : fs::directory_iterator(dir_)) {
      if (d.is_directory()) out.push_back(d.path().filename().string());
    }
    return out;
  }
  std::vector<std::string> chunk_files() const {
    std::vector<std::string> out;
    for (const auto& f : fs::recursive_directory_iterator(dir_)) {
      if (f.path().extension() == ".snapshot") out.push_back(f.path().string());
    }
    std::sort(out.begin(), out.end());
    return out;
  }
};

// Every dtype weft has, one row per element, plus a ragged component.
Dataset mixed(int64_t n) {
  Tensor i = arange(0, n, 1, kInt64);
  Tensor x = arange(0, n, 1, kFloat32) * 0.5;
  return Dataset::from_tensor_slices({i, cast(x, kFloat16), cast(x, kBFloat16), greater(x, 2.0),
                                      cast(i, kUInt8), cast(i, kInt32), cast(x, kFloat64)})
      .map([](const Element& e) {
        Element out = e;
        out.push_back(ones({e[0].item<int64_t>() % 4}, kFloat32));  // lengths 0, 1, 2, 3, 0, ...
        return out;
      });
}

TEST_F(SaveLoadTest, TheOrderDtypesAndShapesComeBackAtAnyShardCount) {
  for (int threads : {1, 3, 4}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    config::set_num_threads(threads);  // the default shard count
    mixed(11).save(path());
    config::set_num_threads(2);  // loading on another machine
    Dataset loaded = Dataset::load(path());
    EXPECT_EQ(all(loaded), all(mixed(11)));
    EXPECT_EQ(loaded.cardinality(), 11);
    std::vector<TensorSpec> spec = loaded.element_spec();
    ASSERT_EQ(spec.size(), 8u);
    EXPECT_EQ(spec[1].dtype, kFloat16);
    EXPECT_EQ(spec[2].dtype, kBFloat16);
    EXPECT_EQ(spec[3].dtype, kBool);
    EXPECT_EQ(spec[4].dtype, kUInt8);
    EXPECT_EQ(runs().size(), 1u);  // the earlier save's run was removed
  }
  // The saved spec marks the ragged axis -1, and a given spec is checked against it.
  EXPECT_EQ(all(Dataset::load(path(), {.element_spec = {{kInt64, {}},
                                                        {kFloat16, {}},
                                                        {kBFloat16, {}},
                                                        {kBool, {}},
                                                        {kUInt8, {}},
                                                        {kInt32, {}},
                                                        {kFloat64, {}},
                                                        {kFloat32, {-1}}}}))
                .size(),
            11u);
  EXPECT_THAT(
      [&] {
        Dataset::load(path(), {.element_spec = {{kInt64, {}}}});
      },
      ::testing::ThrowsMessage<InvalidArgument>(
          HasSubstr("Dataset::load: element_spec (int64 ()) was given, but " + path() +
                    " holds elements (int64 (), float16 (), bfloat16 (), bool (), uint8 (), int32 "
                    "(), float64 (), float32 (-1,))")));
}

TEST_F(SaveLoadTest, CustomShardFuncAndReaderFunc) {
  Dataset::range(10).save(path(), {.shard_func = [](const Element& e) {
                            return e[0].item<int64_t>() % 2 * 5;  // shards 0 and 5
                          }});
  Dataset odd_first = Dataset::load(path(), {.reader_func = [](const std::vector<Dataset>& s) {
                                      EXPECT_EQ(s.size(), 2u);
                                      return s[1].concatenate(s[0]);
                                    }});
  EXPECT_EQ(all(odd_first), all(Dataset::range(1, 10, 2).concatenate(Dataset::range(0, 10, 2))));
  // The default reader takes one element of each shard in turn.
  EXPECT_EQ(all(Dataset::load(path())), all(Dataset::range(10)));
  EXPECT_THAT(
      [&] {
        Dataset::range(3).save(path(), {.shard_func = [](const Element&) { return int64_t{-1}; }});
      },
      ::testing::ThrowsMessage<InvalidArgument>(
          HasSubstr("Dataset::save: shard_func gave -1 for element 0; expected a shard id >= 0")));
}

TEST_F(SaveLoadTest, GzipDeflatesEachRecord) {
  Dataset zeros_ds = Dataset::range(6).map([](const Tensor&) { return zeros({1000}, kFloat32); });
  zeros_ds.save(path(), {.compression = Compression::kGzip});
  uintmax_t bytes = 0;
  for (const std::string& f : chunk_files()) bytes += fs::file_size(f);
  EXPECT_LT(bytes, 6u * 1000u);  // 24000 bytes of zeros uncompressed
  EXPECT_EQ(all(Dataset::load(path())), all(zeros_ds));
  EXPECT_EQ(all(Dataset::load(path(), {.compression = Compression::kGzip})).size(), 6u);
  EXPECT_THAT(
      [&] { Dataset::load(path(), {.compression = Compression::kNone}); },
      ::testing::ThrowsMessage<InvalidArgument>(HasSubstr(
          "Dataset::load: compression NONE was given, but " + path() + " was saved with GZIP")));
}

TEST_F(SaveLoadTest, ADamagedRecordIsDataLossNamingTheFileAndOffset) {
  config::set_num_threads(1);
  Dataset::range(5).save(path());
  const std::vector<std::string> files = chunk_files();
  ASSERT_EQ(files.size(), 1u);
  {
    std::fstream f(files[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(files[0]) - 6));  // in the last record
    f.put('\x7f');
  }
  Dataset::Iterator it = Dataset::load(path()).begin();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(it.next().value()[0].item<int64_t>(), i);
  try {
    it.next();
    ADD_FAILURE() << "expected DataLoss";
  } catch (const DataLoss& e) {
    // Each record: 12 bytes of header, 32 of element (count, dtype, rank, value), a 4-byte CRC.
    EXPECT_THAT(e.message(), HasSubstr(files[0] + ": corrupted record at byte offset 192"));
  }
  fs::remove_all(path() + "/" + runs()[0]);
  EXPECT_THAT([&] { Dataset::load(path()).begin().next(); },
              ::testing::ThrowsMessage<DataLoss>(HasSubstr("does not exist any more")));
  EXPECT_THAT([&] { Dataset::load(path() + "/nothing"); },
              ::testing::ThrowsMessage<FailedPrecondition>(
                  HasSubstr("snapshot.metadata does not exist; expected a directory written by "
                            "Dataset::save")));
}

TEST_F(SaveLoadTest, ASaveThatFailsLeavesThePreviousOne) {
  Dataset::range(4).save(path());
  Dataset failing = Dataset::range(10).map([](const Tensor& t) {
    WEFT_CHECK(t.item<int64_t>() != 7, DataLoss) << "record 7 is damaged";
    return t;
  });
  EXPECT_THROW(failing.save(path()), DataLoss);
  EXPECT_EQ(all(Dataset::load(path())), all(Dataset::range(4)));
  EXPECT_EQ(runs().size(), 1u);
  Dataset::range(6).save(path());
  EXPECT_EQ(all(Dataset::load(path())), all(Dataset::range(6)));
  EXPECT_EQ(runs().size(), 1u);
}

TEST_F(SaveLoadTest, IteratorsRestoreAtEveryCut) {
  config::set_num_threads(3);
  mixed(13).save(path());
  const std::string p = path();
  expect_restores_exactly([p] { return Dataset::load(p); }, 13, every_cut(13));
  expect_restores_exactly([p] { return Dataset::load(p).skip(2).repeat(2); }, 22, every_cut(22));
  expect_restores_exactly(
      [p] {
        return Dataset::load(p, {.reader_func = [](const std::vector<Dataset>& s) {
                               return s[2].concatenate(s[0]).concatenate(s[1]);
                             }});
      },
      13, every_cut(13));
}

}  // namespace
}  // namespace weft::data
