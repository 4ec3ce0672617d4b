#include "weft/core/file_io.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

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
// their own temporary file, every read sees one writer's complete contents, nothing else is left.
TEST_F(FileIoTest, WritersOfOnePathNeverPublishAPartialFile) {
  const std::string path = dir_ + "/state.json";
  std::vector<std::thread> writers;
  for (int w = 0; w < 2; ++w) {
    writers.emplace_back([&, w] {
      std::string contents(100000 + w, static_cast<char>('a' + w));
      for (int i = 0; i < 20; ++i) write_file_atomically(path, contents);
    });
  }
  for (int i = 0; i < 50; ++i) {
    std::string got, error;
    if (!read_whole_file(path, &got, &error)) continue;  // not written yet
    ASSERT_TRUE(got == std::string(100000, 'a') || got == std::string(100001, 'b'))
        << got.size() << " bytes";
  }
  for (std::thread& t : writers) t.join();
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

// A write that fails leaves neither the file nor its temporary file.
TEST_F(FileIoTest, AnUncommittedFileLeavesNothing) {
  const std::string path = dir_ + "/a.bin";
  {
    AtomicOutputFile f(path);
    f.append("partial");
  }
  EXPECT_TRUE(fs::is_empty(dir_));
  EXPECT_THAT(
      [&] { AtomicOutputFile f(dir_ + "/missing/a.bin"); },
      testing::ThrowsMessage<FailedPrecondition>(HasSubstr("cannot create " + dir_ + "/missing")));
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
      testing::ThrowsMessage<DataLoss>(HasSubstr("unexpected end of file at byte offset 5")));
  EXPECT_EQ(read_whole_file(dir_ + "/x"), "hello");
}

}  // namespace
}  // namespace weft::io
