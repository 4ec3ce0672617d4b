// train::Checkpoint: Trackable objects saved and restored (variables and opaque state), all-or-
// nothing restore with mismatches named, max_to_keep pruning, and recovery: a crashed save (a
// .tmp- directory) and an index-less directory are ignored, and a damaged newest checkpoint is
// skipped, with a report, for the one before it.
#include "weft/train/checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "weft/checkpoint/checkpoint_io.h"
#include "weft/core/config.h"
#include "weft/core/errors.h"
#include "weft/core/file_io.h"
#include "weft/distribute/mirrored_strategy.h"
#include "weft/nn/dense.h"
#include "weft/nn/model.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/random.h"
#include "weft/ops/reduce.h"
#include "weft/optim/adam.h"

namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using weft::Tensor;
using weft::Variable;

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// A model-like object: two variables of different dtypes, and a position as opaque state.
class FakeModel : public weft::Trackable {
 public:
  explicit FakeModel(float fill, weft::Shape kernel_shape = {2, 3}) {
    std::vector<float> k(static_cast<size_t>(weft::num_elements(kernel_shape)), fill);
    kernel_ = Variable(Tensor::from_vector<float>(k, kernel_shape), "dense/kernel");
    count_ = Variable(Tensor::from_vector<int64_t>({static_cast<int64_t>(fill)}, {}), "count",
                      /*trainable=*/false);
  }
  std::vector<std::pair<std::string, Variable>> tracked_variables() const override {
    return {{"dense/kernel", kernel_}, {"count", count_}};
  }
  std::string tracked_state() const override { return "position=" + std::to_string(position); }
  void restore_state(const std::string& state) override {
    ASSERT_TRUE(state.starts_with("position=")) << state;
    position = std::stoll(state.substr(9));
  }

  float kernel_value() const { return kernel_.value().to_vector<float>()[0]; }
  int64_t count_value() const { return count_.value().item<int64_t>(); }
  void set(float v) {
    std::vector<float> k(static_cast<size_t>(kernel_.value().numel()), v);
    kernel_.assign(Tensor::from_vector<float>(k, kernel_.shape()));
    count_.assign(Tensor::from_vector<int64_t>({static_cast<int64_t>(v)}, {}));
  }

  int64_t position = 0;

 private:
  Variable kernel_, count_;
};

class TrainCheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() /
            ("weft_train_checkpoint_test_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Saves steps with the model's kernel set to the step number.
  void save_steps(weft::train::Checkpoint& ckpt, FakeModel& model, std::vector<int64_t> steps) {
    for (int64_t s : steps) {
      model.set(static_cast<float>(s));
      model.position = s * 10;
      ckpt.save(s);
    }
  }

  std::string dir_;
};

TEST_F(TrainCheckpointTest, SavesAndRestoresVariablesAndState) {
  FakeModel model(1.5f), other(-2.0f, {4});
  other.position = 99;
  weft::train::Checkpoint ckpt({{"model", &model}, {"other", &other}}, dir_);
  model.position = 1234;
  std::string saved = ckpt.save(1200);
  EXPECT_EQ(saved, dir_ + "/ckpt-1200");

  // What is on disk: "object/variable" paths and one state blob per object.
  weft::checkpoint::LoadedCheckpoint raw = weft::checkpoint::read_checkpoint(saved);
  EXPECT_EQ(raw.tensors.size(), 4u);
  EXPECT_EQ(raw.tensors.at("model/dense/kernel").shape(), (weft::Shape{2, 3}));
  EXPECT_EQ(raw.tensors.at("other/count").dtype(), weft::kInt64);
  EXPECT_EQ(raw.state.at("model"), "position=1234");
  EXPECT_EQ(raw.state.at("other"), "position=99");

  model.set(7);
  model.position = 0;
  other.set(8);
  other.position = 0;
  ckpt.restore(saved);
  EXPECT_EQ(model.kernel_value(), 1.5f);
  EXPECT_EQ(model.count_value(), 1);
  EXPECT_EQ(model.position, 1234);
  EXPECT_EQ(other.kernel_value(), -2.0f);
  EXPECT_EQ(other.count_value(), -2);
  EXPECT_EQ(other.position, 99);
  EXPECT_EQ(ckpt.latest(), saved);
  EXPECT_EQ(weft::train::latest_checkpoint(dir_), saved);
}

TEST_F(TrainCheckpointTest, RestoreRejectsMismatchesAndAssignsNothing) {
  FakeModel model(3.0f);
  weft::train::Checkpoint ckpt({{"model", &model}}, dir_);
  std::string saved = ckpt.save(1);

  FakeModel wrong_shape(5.0f, {3, 2});
  weft::train::Checkpoint c2({{"model", &wrong_shape}}, dir_);
  try {
    c2.restore(saved);
    FAIL() << "expected InvalidArgument";
  } catch (const weft::InvalidArgument& e) {
    EXPECT_THAT(e.message(), HasSubstr("\"model/dense/kernel\""));
    EXPECT_THAT(e.message(), HasSubstr("(3, 2)"));
    EXPECT_THAT(e.message(), HasSubstr("(2, 3)"));
  }
  EXPECT_EQ(wrong_shape.kernel_value(), 5.0f);
  EXPECT_EQ(wrong_shape.count_value(), 5);  // checked before, so not assigned either
  EXPECT_EQ(wrong_shape.position, 0);

  FakeModel renamed(5.0f);
  weft::train::Checkpoint c3({{"net", &renamed}}, dir_);
  EXPECT_THROW(c3.restore(saved), weft::InvalidArgument);
}

TEST_F(TrainCheckpointTest, RejectsBadObjects) {
  FakeModel m(1);
  EXPECT_THROW(weft::train::Checkpoint({{"a", &m}, {"a", &m}}, dir_), weft::InvalidArgument);
  EXPECT_THROW(weft::train::Checkpoint({{"a/b", &m}}, dir_), weft::InvalidArgument);
  EXPECT_THROW(weft::train::Checkpoint({{"a", nullptr}}, dir_), weft::InvalidArgument);
  weft::train::Checkpoint ok({{"a", &m}}, dir_);
  EXPECT_THROW(ok.save(-1), weft::InvalidArgument);
}

TEST_F(TrainCheckpointTest, KeepsTheNewestMaxToKeep) {
  FakeModel model(0);
  weft::train::Checkpoint ckpt({{"model", &model}}, dir_, /*max_to_keep=*/3);
  save_steps(ckpt, model, {100, 200, 300, 400, 500});
  EXPECT_THAT(ckpt.checkpoints(),
              ElementsAre(dir_ + "/ckpt-300", dir_ + "/ckpt-400", dir_ + "/ckpt-500"));
  EXPECT_FALSE(fs::exists(dir_ + "/ckpt-100"));
  EXPECT_FALSE(fs::exists(dir_ + "/ckpt-200"));
  std::string state = weft::io::read_whole_file(dir_ + "/checkpoint");
  EXPECT_THAT(state, HasSubstr("\"latest\": \"ckpt-500\""));
  EXPECT_THAT(state, HasSubstr("\"ckpt-300\""));
  EXPECT_THAT(state, ::testing::Not(HasSubstr("\"ckpt-200\"")));
  // Only checkpoints and the state file: no temporary directories or files left.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 4);

  weft::train::Checkpoint keep_all({{"model", &model}}, dir_, /*max_to_keep=*/0);
  save_steps(keep_all, model, {600, 700, 800, 900});
  EXPECT_EQ(keep_all.checkpoints().size(), 7u);
}

TEST_F(TrainCheckpointTest, CrashedSaveAndIndexlessDirectoryAreIgnored) {
  FakeModel model(0);
  weft::train::Checkpoint ckpt({{"model", &model}}, dir_);
  save_steps(ckpt, model, {1, 2});
  // A save of step 3 that died before its rename, and a step-4 directory that never got an index.
  fs::copy(dir_ + "/ckpt-2", dir_ + "/ckpt-3.tmp-4242");
  fs::create_directories(dir_ + "/ckpt-4");
  fs::copy(dir_ + "/ckpt-2/data-00000-of-00001", dir_ + "/ckpt-4/data-00000-of-00001");
  EXPECT_EQ(ckpt.latest(), dir_ + "/ckpt-2");
  EXPECT_THAT(ckpt.checkpoints(), ElementsAre(dir_ + "/ckpt-1", dir_ + "/ckpt-2"));

  std::vector<std::string> warnings;
  ckpt.set_warning_handler([&](const std::string& w) { warnings.push_back(w); });
  model.set(-1);
  ASSERT_TRUE(ckpt.restore_latest());
  EXPECT_EQ(model.kernel_value(), 2.0f);
  EXPECT_EQ(model.position, 20);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr(dir_ + "/ckpt-4"));
  EXPECT_THAT(warnings[0], HasSubstr("index.json"));
}

// The next save removes the temporary directories that saves which never committed left: a
// single writer's and a cluster's whose commit never came; another name's stay.
TEST_F(TrainCheckpointTest, TheNextSaveRemovesWhatCrashedSavesLeft) {
  FakeModel model(0);
  weft::train::Checkpoint ckpt({{"model", &model}}, dir_);
  save_steps(ckpt, model, {1});
  fs::copy(dir_ + "/ckpt-1", dir_ + "/ckpt-2.tmp-4242");
  weft::train::Checkpoint::Writers part1;  // writer 1 of 2 wrote its part; writer 0 never did
  part1.part = 1;
  part1.parts = 2;
  part1.save_id = "77";
  part1.barrier = [] {};
  model.set(3);
  ckpt.save(3, part1);
  ASSERT_TRUE(fs::exists(dir_ + "/ckpt-3.tmp-77"));
  fs::create_directories(dir_ + "/other-5.tmp-1");
  save_steps(ckpt, model, {4});
  EXPECT_FALSE(fs::exists(dir_ + "/ckpt-2.tmp-4242"));
  EXPECT_FALSE(fs::exists(dir_ + "/ckpt-3.tmp-77"));
  EXPECT_TRUE(fs::exists(dir_ + "/other-5.tmp-1"));
  EXPECT_THAT(ckpt.checkpoints(), ElementsAre(dir_ + "/ckpt-1", dir_ + "/ckpt-4"));
}

TEST_F(TrainCheckpointTest, DamagedNewestFallsBackToThePreviousOne) {
  FakeModel model(0);
  weft::train::Checkpoint ckpt({{"model", &model}}, dir_);
  save_steps(ckpt, model, {10, 20, 30});
  // A flipped byte in step 30's kernel: the index is fine, the data is not.
  std::string shard = dir_ + "/ckpt-30/data-00000-of-00001";
  std::string bytes = weft::io::read_whole_file(shard);
  bytes[2] ^= 0x40;
  write_bytes(shard, bytes);

  std::vector<std::string> warnings;
  ckpt.set_warning_handler([&](const std::string& w) { warnings.push_back(w); });
  model.set(-1);
  ASSERT_TRUE(ckpt.restore_latest());
  EXPECT_EQ(model.kernel_value(), 20.0f);
  EXPECT_EQ(model.count_value(), 20);
  EXPECT_EQ(model.position, 200);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("skipping checkpoint " + dir_ + "/ckpt-30"));
  EXPECT_THAT(warnings[0], HasSubstr("tensor \"model/dense/kernel\" at offset 0"));
  EXPECT_THAT(warnings[0], HasSubstr("CRC32C mismatch"));

  // Truncating step 20's shard and corrupting its index: both are visible to latest() too.
  fs::resize_file(dir_ + "/ckpt-20/data-00000-of-00001", 3);
  EXPECT_EQ(ckpt.latest(), dir_ + "/ckpt-30");  // its index and sizes are intact
  std::string index = weft::io::read_whole_file(dir_ + "/ckpt-30/index.json");
  index[index.size() / 2] ^= 0x01;
  write_bytes(dir_ + "/ckpt-30/index.json", index);
  EXPECT_EQ(ckpt.latest(), dir_ + "/ckpt-10");
  warnings.clear();
  ASSERT_TRUE(ckpt.restore_latest());
  EXPECT_EQ(model.kernel_value(), 10.0f);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_THAT(warnings[0], HasSubstr("ckpt-30/index.json"));
  EXPECT_THAT(warnings[1], HasSubstr("truncated"));
}

TEST_F(TrainCheckpointTest, NothingToRestore) {
  FakeModel model(4);
  weft::train::Checkpoint ckpt({{"model", &model}}, dir_);
  EXPECT_EQ(ckpt.latest(), std::nullopt);
  EXPECT_FALSE(ckpt.restore_latest());
  EXPECT_EQ(model.kernel_value(), 4.0f);
}

TEST_F(TrainCheckpointTest, SavingTheSameStepAgainReplacesIt) {
  FakeModel model(0);
  weft::train::Checkpoint ckpt({{"model", &model}}, dir_);
  save_steps(ckpt, model, {5});
  model.set(6);
  ckpt.save(5);
  model.set(0);
  ASSERT_TRUE(ckpt.restore_latest());
  EXPECT_EQ(model.kernel_value(), 6.0f);
  EXPECT_EQ(ckpt.checkpoints().size(), 1u);
}

TEST_F(TrainCheckpointTest, ACustomLoopResumesWhereItsCheckpointWasMade) {
  // A custom loop under MirroredStrategy (2 replicas): 12 global batches of a shuffled dataset,
  // a checkpoint of the model, the optimizer and the distributed iterator after step 5. Run
  // again from that checkpoint, it ends with the same weights as the run that went on.
  weft::config::set_logical_cpu_devices(2);
  weft::distribute::MirroredStrategy strategy;
  Tensor x = weft::stateless_random_uniform({24, 3}, {1, 2});
  Tensor y = weft::stateless_random_uniform({24, 1}, {3, 4});
  weft::data::Dataset dataset =
      weft::data::Dataset::from_tensor_slices({x, y}).shuffle(24, 7).batch(4).repeat(2);
  auto train = [&](bool resume) {
    weft::nn::Model model;
    weft::optim::Optimizer optimizer = weft::optim::Adam({.learning_rate = 0.05});
    {
      auto scope = strategy.scope();
      model = weft::nn::Sequential({weft::nn::Dense(4, "relu"), weft::nn::Dense(1)});
      model(weft::zeros({1, 3}));
      optimizer.build(model.trainable_variables());  // its slots, to restore into
    }
    auto it = strategy.experimental_distribute_dataset(dataset).begin();
    weft::train::Checkpoint ckpt({{"model", &model}, {"optimizer", &optimizer}, {"iterator", &it}},
                                 dir_);
    int64_t step = 0;
    if (resume) {
      EXPECT_TRUE(ckpt.restore_latest());
      step = optimizer.iterations().value().item<int64_t>();
      EXPECT_EQ(step, 5);
    }
    while (std::optional<weft::distribute::DistributedElement> batch = it.next()) {
      strategy.run(
          [&](const weft::data::Element& b) {
            weft::GradientTape tape;
            Tensor error = weft::sub(model(b[0], /*training=*/true), b[1]);
            Tensor loss = weft::distribute::compute_average_loss(
                weft::sum(weft::mul(error, error), std::vector<int64_t>{1}));
            optimizer.minimize(loss, model.trainable_variables(), tape);
          },
          *batch);
      if (++step == 5 && !resume) ckpt.save(step);
    }
    EXPECT_EQ(step, 12);
    return model.weights_fingerprint();
  };
  std::string uninterrupted = train(false);
  EXPECT_EQ(train(true), uninterrupted);
  weft::config::set_logical_cpu_devices(1);
}

}  // namespace
