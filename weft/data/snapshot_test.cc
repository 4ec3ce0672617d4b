// Dataset::snapshot: the first pass writes the input through, later passes (and a freshly built
// identical pipeline) read the finished run instead; a pass stopped early never finishes one;
// GZIP, shard_func and reader_func; iterator states restore at every cut while writing (into a
// new run that takes the files written so far) and while reading; a vanished run is DataLoss.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>

#include "weft/core/config.h"
#include "weft/data/dataset.h"
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

class SnapshotTest : public weft::testing::DirectoryTest {
 protected:
  SnapshotTest() : DirectoryTest("weft_snapshot") {
    config::set_num_threads(3);  // three shards
  }
  // The one hash directory under path().
  std::string hash_dir() const {
    std::vector<std::string> dirs;
    for (const auto& d : fs::directory_iterator(dir_)) dirs.push_back(d.path().string());
    EXPECT_EQ(dirs.size(), 1u);
    return dirs.empty() ? "" : dirs[0];
  }
  // A map that counts its calls, as the work a snapshot saves.
  Dataset counted(int64_t n, SnapshotOptions o = {}) const {
    auto calls = calls_;
    return Dataset::range(n)
        .map([calls](const Tensor& t) {
          ++*calls;
          return mul(t, 10);
        })
        .snapshot(path(), std::move(o));
  }
  std::shared_ptr<std::atomic<int>> calls_ = std::make_shared<std::atomic<int>>(0);
};

TEST_F(SnapshotTest, TheFirstPassWritesAndLaterPassesRead) {
  Dataset ds = counted(10);
  const Flat expected = all(Dataset::range(0, 100, 10));
  EXPECT_EQ(all(ds), expected);
  EXPECT_EQ(calls_->load(), 10);
  EXPECT_EQ(all(ds), expected);  // read from the files: the map is not called
  EXPECT_EQ(calls_->load(), 10);
  EXPECT_EQ(all(counted(10)), expected);  // a new pipeline, as a new process builds it
  EXPECT_EQ(calls_->load(), 10);
  EXPECT_EQ(ds.cardinality(), 10);
  EXPECT_EQ(all(Dataset::load(hash_dir())), expected);  // the files are save's
  // Another pipeline hashes to another directory.
  EXPECT_EQ(all(counted(4)), all(Dataset::range(0, 40, 10)));
  EXPECT_EQ(calls_->load(), 14);
}

TEST_F(SnapshotTest, APassStoppedEarlyFinishesNothing) {
  Dataset ds = counted(10);
  EXPECT_EQ(all(ds.take(3)).size(), 3u);
  EXPECT_EQ(calls_->load(), 3);
  EXPECT_EQ(all(ds), all(Dataset::range(0, 100, 10)));  // written again, from the start
  EXPECT_EQ(calls_->load(), 13);
  EXPECT_EQ(all(ds).size(), 10u);
  EXPECT_EQ(calls_->load(), 13);
}

TEST_F(SnapshotTest, GzipShardFuncAndReaderFunc) {
  SnapshotOptions o{.compression = Compression::kGzip,
                    .shard_func = [](const Element& e) { return e[0].item<int64_t>() % 20; },
                    .reader_func =
                        [](const std::vector<Dataset>& shards) {
                          return shards[1].concatenate(shards[0]);  // 10s first, then 0s
                        }};
  Dataset ds = counted(6, o);
  EXPECT_EQ(all(ds), all(Dataset::range(0, 60, 10)));  // writing: the input's order
  EXPECT_EQ(all(ds), all(Dataset::range(10, 60, 20).concatenate(Dataset::range(0, 60, 20))));
  EXPECT_EQ(calls_->load(), 6);
  EXPECT_EQ(all(Dataset::load(hash_dir(), {.compression = Compression::kGzip})).size(), 6u);
}

TEST_F(SnapshotTest, WritingIteratorsRestoreAtEveryCut) {
  // At every cut of a writing pass: the restored iterator writes a new run that takes the files
  // written so far, and finishes it complete; the saving iterator goes on and finishes its own.
  const Flat expected = all(Dataset::range(0, 110, 10));
  for (int64_t k = 0; k <= 11; ++k) {
    SCOPED_TRACE("cut after " + std::to_string(k) + " elements");
    fs::remove_all(dir_);
    Dataset::Iterator it = counted(11).begin();
    ASSERT_EQ(weft::testing::take_n(it, k), Flat(expected.begin(), expected.begin() + k));
    const std::string state = it.save_state();
    Dataset::Iterator restored = counted(11).begin();
    restored.restore_state(state);
    EXPECT_EQ(weft::testing::take_n(restored, 20), weft::testing::tail(expected, k));
    EXPECT_EQ(all(Dataset::load(hash_dir())), expected);
    EXPECT_EQ(weft::testing::take_n(it, 20), weft::testing::tail(expected, k));
    EXPECT_EQ(all(Dataset::load(hash_dir())), expected);
  }
  // Restored where the saved run's files are gone, it reads the input without writing.
  fs::remove_all(dir_);
  Dataset::Iterator it = counted(11).begin();
  weft::testing::take_n(it, 4);
  const std::string state = it.save_state();
  it = Dataset::Iterator();
  fs::remove_all(dir_);
  Dataset::Iterator restored = counted(11).begin();
  restored.restore_state(state);
  EXPECT_EQ(weft::testing::take_n(restored, 20), weft::testing::tail(expected, 4));
  EXPECT_FALSE(fs::exists(hash_dir() + "/snapshot.metadata"));
}

TEST_F(SnapshotTest, ReadingIteratorsRestoreAtEveryCut) {
  EXPECT_EQ(all(counted(11)).size(), 11u);  // written
  expect_restores_exactly([this] { return counted(11).repeat(2); }, 22, every_cut(22));
  EXPECT_EQ(calls_->load(), 11);
  // A reader's state names its run: when the run is gone, restoring it is DataLoss.
  Dataset::Iterator it = counted(11).begin();
  it.next();
  const std::string state = it.save_state();
  for (const auto& d : fs::directory_iterator(hash_dir())) {
    if (d.is_directory()) fs::remove_all(d.path());
  }
  EXPECT_THAT([&] { counted(11).begin().restore_state(state); },
              ::testing::ThrowsMessage<DataLoss>(HasSubstr("does not exist any more")));
}

TEST_F(SnapshotTest, DescribeAndErrors) {
  EXPECT_EQ(Dataset::range(3).snapshot(path()).describe(),
            "from_tensor_slices((3,) int64).snapshot(\"" + path() + "\")");
  EXPECT_THAT(
      [] { Dataset::range(3).snapshot(""); },
      ::testing::ThrowsMessage<InvalidArgument>(HasSubstr("Dataset::snapshot: the path is empty")));
  Dataset bad = Dataset::range(3).snapshot(
      path(), {.shard_func = [](const Element&) { return int64_t{-2}; }});
  EXPECT_THAT([&] { all(bad); }, ::testing::ThrowsMessage<InvalidArgument>(HasSubstr(
                                     "Dataset::snapshot: shard_func gave -2 for element 0")));
}

}  // namespace
}  // namespace weft::data
