#include "weft/core/file_io.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "weft/core/errors.h"

namespace weft::io {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class FileIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() / ("weft_file_io_" + std::to_string(::getpid()))).string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

// A file appears under its name whole or not at all: threads writing one path at once each use
// their own temporary file, every read sees one writer's complete contents, once the file is there
// it never goes missing, nothing else is left. The writers go on (20 writes each at least, 1000 at
// most) until the reader has read the file whole 10 times while they were still writing, so the
// reads checked here overlap the writes.
TEST_F(FileIoTest, WritersOfOnePathNeverPublishAPartialFile) {
  const std::string path = dir_ + "/state.json";
  const std::string whole[2] = {std::string(100000, 'a'), std::string(100001, 'b')};
  constexpr int kReadsWhileWriting = 10;
  std::atomic<int> writing{2};
  std::atomic<int> reads_while_writing{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < 2; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; i < 1000 && (i < 20 || reads_while_writing.load() < kReadsWhileWriting);
           ++i) {
        write_file_atomically(path, whole[w]);
      }
      --writing;
    });
  }
  int reads = 0, partial = 0, missing_after_a_read = 0;
  size_t partial_size = 0;
  while (writing.load() > 0) {
    std::string got, error;
    if (!read_whole_file(path, &got, &error)) {
      if (reads > 0) ++missing_after_a_read;  // before the first read: not written yet
      continue;
    }
    ++reads;
    if (got != whole[0] && got != whole[1]) {
      ++partial;
      partial_size = got.size();
    } else if (writing.load() > 0) {  // the read began and ended while a writer was writing
      ++reads_while_writing;
    }
  }
  for (std::thread& t : writers) t.join();
  EXPECT_EQ(partial, 0) << "of " << reads << " reads; the last partial one had " << partial_size
                        << " bytes";
  EXPECT_EQ(missing_after_a_read, 0) << "of " << reads << " reads";
  EXPECT_GE(reads_while_writing.load(), kReadsWhileWriting) << "of " << reads << " reads";
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
  std::string last = read_whole_file(path);
  EXPECT_TRUE(last == whole[0] || last == whole[1]) << last.size() << " bytes";
}

// A write that fails leaves neither the file nor its temporary file.
TEST_F(FileIoTest, AnUncommittedFileLeavesNothing) {
  const std::string path = dir_ + "/a.bin";
  {
    AtomicOutputFile f(path);
    f.append("partial");
  }
  EXPECT_TRUE(fs::is_empty(dir_));
  EXPECT_THAT([&] { AtomicOutputFile f(dir_ + "/missing/a.bin"); },
              ::testing::ThrowsMessage<FailedPrecondition>(
                  HasSubstr("cannot create " + dir_ + "/missing")));
}

// Opening a directory or a missing file says why; a reader can open again after a failure.
TEST_F(FileIoTest, OpenSaysWhyAndCanBeRetried) {
  InputFile f;
  EXPECT_EQ(f.open(dir_), "Is a directory");
  EXPECT_EQ(f.open(dir_ + "/none"), "No such file or directory");
  write_file_atomically(dir_ + "/x", "hello");
  EXPECT_EQ(f.open(dir_ + "/x"), "");
  char buf[5];
  f.read_exactly(0, buf, 5);
  EXPECT_EQ(std::string(buf, 5), "hello");
  EXPECT_THAT(
      [&] { f.read_exactly(3, buf, 5); },
      ::testing::ThrowsMessage<DataLoss>(HasSubstr("unexpected end of file at byte offset 5")));
  EXPECT_EQ(read_whole_file(dir_ + "/x"), "hello");
}

}  // namespace
}  // namespace weft::io
