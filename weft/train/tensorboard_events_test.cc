// EventFileWriter's files decoded by an independent reader: scripts/read_tfevents.py checks every
// record's masked CRC32Cs and parses the Events with protos built from TensorBoard's field
// numbers; here we assert the tags, steps and values it reads back, and that it rejects damage.
#include "weft/train/tensorboard_events.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "weft/core/crc32c.h"
#include "weft/core/errors.h"
#include "weft/core/file_io.h"
#include "weft/core/tfrecord.h"

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

struct ProcessResult {
  int exit_code;
  std::string output;  // stdout and stderr
};

ProcessResult read_with_python(const std::string& file) {
  std::string cmd = std::string(WEFT_PYTHON) + " " + WEFT_SOURCE_DIR +
                    "/scripts/read_tfevents.py '" + file + "' 2>&1";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  EXPECT_NE(pipe, nullptr) << cmd;
  if (pipe == nullptr) return {-1, ""};
  std::string out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::string g9(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(static_cast<float>(v)));
  return buf;
}

class TensorBoardEventsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    logdir_ = (fs::temp_directory_path() /
               ("weft_tfevents_test_" + std::to_string(::getpid()) + "_" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name()))
                  .string();
    fs::remove_all(logdir_);
  }
  void TearDown() override { fs::remove_all(logdir_); }
  std::string logdir_;
};

TEST_F(TensorBoardEventsTest, PythonProtobufReadsBackTagsStepsAndValues) {
  std::string path;
  {
    weft::train::EventFileWriter writer(logdir_ + "/train");
    path = writer.path();
    writer.add_scalar("loss", 2.302585, 0);
    writer.add_scalar("loss", 0.5, 1);
    writer.add_scalar("epoch/accuracy", 0.875, 1);
    writer.add_scalar("lr", 1e-3, int64_t{1} << 40);
    writer.add_scalar("neg", -12345.678, 7);
    writer.flush();
    // Visible after flush, before the writer closes.
    EXPECT_EQ(read_with_python(path).exit_code, 0);
    writer.add_scalar("loss", 0.25, 2);
  }
  EXPECT_EQ(fs::path(path).parent_path(), fs::path(logdir_ + "/train"));
  EXPECT_TRUE(fs::path(path).filename().string().starts_with("events.out.tfevents."));
  ProcessResult run = read_with_python(path);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::string expected =
      "file_version brain.Event:2\n"
      "scalar 0 loss " +
      g9(2.302585) +
      "\n"
      "scalar 1 loss 0.5\n"
      "scalar 1 epoch/accuracy 0.875\n"
      "scalar 1099511627776 lr " +
      g9(1e-3) +
      "\n"
      "scalar 7 neg " +
      g9(-12345.678) +
      "\n"
      "scalar 2 loss 0.25\n";
  EXPECT_EQ(run.output, expected);
}

TEST_F(TensorBoardEventsTest, ReadScalarEventsGivesBackWhatWasWrittenFileByFile) {
  {
    weft::train::EventFileWriter first(logdir_ + "/v");
    first.add_scalar("epoch_loss", 0.5, 0);
    first.add_scalar("epoch_loss", 0.25, 1);
  }
  {
    weft::train::EventFileWriter second(logdir_ + "/v");
    second.add_scalar("epoch_accuracy", 0.875, int64_t{1} << 40);
  }
  std::vector<weft::train::ScalarEvent> events = weft::train::read_scalar_events(logdir_ + "/v");
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].tag, "epoch_loss");
  EXPECT_EQ(events[0].step, 0);
  EXPECT_EQ(events[0].value, 0.5);
  EXPECT_GT(events[0].wall_time, 1.7e9);
  EXPECT_EQ(events[1].value, 0.25);
  EXPECT_EQ(events[2].tag, "epoch_accuracy");
  EXPECT_EQ(events[2].step, int64_t{1} << 40);
  EXPECT_EQ(events[2].value, 0.875);
  EXPECT_TRUE(weft::train::read_scalar_events(logdir_ + "/none").empty());
  // An Event whose bytes end inside a field: DataLoss naming the file.
  const std::string bad = logdir_ + "/bad/events.out.tfevents.1.h.1.0";
  fs::create_directories(logdir_ + "/bad");
  std::ofstream(bad, std::ios::binary) << weft::frame_tfrecord(std::string("\x2a\x09xy", 4));
  try {
    weft::train::read_scalar_events(logdir_ + "/bad");
    FAIL() << "a damaged Event was read";
  } catch (const weft::DataLoss& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr(bad));
  }
}

TEST_F(TensorBoardEventsTest, ReaderRejectsDamagedRecords) {
  std::string path;
  {
    weft::train::EventFileWriter writer(logdir_);
    path = writer.path();
    writer.add_scalar("loss", 1.0, 5);
  }
  std::string good = weft::io::read_whole_file(path);
  uint64_t first_len;
  std::memcpy(&first_len, good.data(), 8);
  size_t second = 16 + first_len;
  struct Case {
    size_t offset;
    const char* expect;
  };
  for (Case c : {Case{second + 3, "length CRC mismatch"}, Case{second + 14, "data CRC mismatch"},
                 Case{good.size() - 1, "data CRC mismatch"}}) {
    std::string bad = good;
    bad[c.offset] ^= 0x01;
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bad;
    ProcessResult run = read_with_python(path);
    EXPECT_EQ(run.exit_code, 1) << "byte " << c.offset;
    EXPECT_THAT(run.output, HasSubstr("record 1 at byte offset " + std::to_string(second)));
    EXPECT_THAT(run.output, HasSubstr(c.expect));
  }
  std::ofstream(path, std::ios::binary | std::ios::trunc) << good.substr(0, good.size() - 2);
  EXPECT_THAT(read_with_python(path).output, HasSubstr("truncated data"));
}

TEST_F(TensorBoardEventsTest, FramingMatchesTfRecord) {
  std::string record = weft::frame_tfrecord("abc");
  ASSERT_EQ(record.size(), 8u + 4 + 3 + 4);
  uint64_t len;
  uint32_t len_crc, data_crc;
  std::memcpy(&len, record.data(), 8);
  std::memcpy(&len_crc, record.data() + 8, 4);
  std::memcpy(&data_crc, record.data() + 15, 4);
  EXPECT_EQ(len, 3u);
  EXPECT_EQ(len_crc, weft::masked_crc32c(weft::crc32c(record.data(), 8)));
  EXPECT_EQ(record.substr(12, 3), "abc");
  EXPECT_EQ(data_crc, weft::masked_crc32c(weft::crc32c("abc", 3)));
}

TEST_F(TensorBoardEventsTest, BadLogdirAndTagAreErrors) {
  std::ofstream(logdir_ + "_file") << "x";  // a file where the logdir should be
  EXPECT_THROW(weft::train::EventFileWriter(logdir_ + "_file/sub"), weft::FailedPrecondition);
  fs::remove(logdir_ + "_file");
  weft::train::EventFileWriter writer(logdir_);
  EXPECT_THROW(writer.add_scalar("", 1.0, 0), weft::InvalidArgument);
}

}  // namespace
