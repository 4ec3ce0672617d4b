#include "weft/core/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "weft/core/errors.h"
#include "weft/core/internal/io_faults.h"

namespace weft::io {
namespace {

// Reads exactly `size` bytes at `offset`: 0 when done, -1 when the file ends first, otherwise the
// errno of the failed read; *at is where it stopped.
int pread_fully(int fd, uint64_t offset, void* dst, size_t size, uint64_t* at) {
  char* p = static_cast<char*>(dst);
  while (size > 0) {
    ssize_t n = ::pread(fd, p, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    *at = offset;
    if (n < 0) return errno;
    if (n == 0) return -1;
    p += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return 0;
}

}  // namespace

std::string errno_text(int err) { return std::system_category().message(err); }

namespace internal {
namespace {
std::atomic<uint64_t> steps{0};
std::atomic<uint64_t> crash_at{0};  // 0: never
}  // namespace

void io_step() {
  uint64_t n = ++steps;
  uint64_t at = crash_at.load();
  if (at != 0 && n >= at) ::_exit(kIoFaultExitStatus);
}
uint64_t io_steps() { return steps.load(); }
void crash_after_io_steps(uint64_t k) { crash_at = k == 0 ? 0 : steps.load() + k; }
}  // namespace internal

OutputFile::OutputFile(std::string path) : path_(std::move(path)) {
  internal::io_step();
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);  // less the umask
  WEFT_CHECK(fd_ >= 0, FailedPrecondition)
      << "cannot create " << path_ << ": " << errno_text(errno);
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
}

void OutputFile::append(const void* data, size_t size) { write_at(offset_, data, size); }

void OutputFile::write_at(uint64_t offset, const void* data, size_t size) {
  WEFT_ASSERT(offset <= offset_) << path_ << ": write at " << offset << " past the end " << offset_;
  internal::io_step();
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::pwrite(fd_, p, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    WEFT_CHECK(n > 0, FailedPrecondition) << "cannot write " << path_ << " at byte offset "
                                          << offset << ": " << errno_text(n < 0 ? errno : EIO);
    p += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
    if (offset > offset_) offset_ = offset;
  }
}

void OutputFile::pad_to_multiple_of(size_t alignment) {
  static const char kZeros[256] = {};
  WEFT_ASSERT(alignment <= sizeof kZeros) << "alignment " << alignment;
  size_t pad = (alignment - offset_ % alignment) % alignment;
  append(kZeros, pad);
}

void OutputFile::sync_and_close() {
  // fsync before any rename: otherwise a crash can leave the name pointing at unwritten data.
  internal::io_step();
  WEFT_CHECK(::fsync(fd_) == 0, FailedPrecondition)
      << "cannot fsync " << path_ << ": " << errno_text(errno);
  int fd = fd_;
  fd_ = -1;
  WEFT_CHECK(::close(fd) == 0, FailedPrecondition)
      << "cannot close " << path_ << ": " << errno_text(errno);
}

namespace {
// Unique to this writer: two threads writing one path each have their own temporary file.
std::string temporary_name(const std::string& path) {
  static std::atomic<uint64_t> writers{0};
  std::string tmp = path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(writers++);
  ::unlink(tmp.c_str());  // left by an earlier process that had our pid and crashed
  return tmp;
}
}  // namespace

AtomicOutputFile::AtomicOutputFile(const std::string& path)
    : OutputFile(temporary_name(path)), final_path_(path) {}

AtomicOutputFile::~AtomicOutputFile() {
  if (!committed_) ::unlink(path().c_str());
}

void AtomicOutputFile::commit() {
  sync_and_close();
  WEFT_CHECK(::rename(path().c_str(), final_path_.c_str()) == 0, FailedPrecondition)
      << "cannot rename " << path() << " to " << final_path_ << ": " << errno_text(errno);
  committed_ = true;
  fsync_directory(parent_directory(final_path_));
}

InputFile::InputFile(const std::string& path) {
  std::string reason = open(path);
  WEFT_CHECK(reason.empty(), FailedPrecondition) << "cannot open " << path << ": " << reason;
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::string InputFile::open(const std::string& path) {
  if (fd_ >= 0) ::close(fd_);
  path_ = path;
  size_ = 0;
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) return errno_text(errno);
  struct stat st;
  std::string why;
  if (::fstat(fd_, &st) != 0) {
    why = errno_text(errno);
  } else if (S_ISDIR(st.st_mode)) {
    why = errno_text(EISDIR);
  } else if (!S_ISREG(st.st_mode)) {
    why = "not a regular file";
  }
  if (!why.empty()) {
    ::close(fd_);
    fd_ = -1;
    return why;
  }
  size_ = static_cast<uint64_t>(st.st_size);
  return {};
}

bool InputFile::read_at(uint64_t offset, void* dst, size_t size, std::string* error) const {
  uint64_t at = 0;
  int rc = pread_fully(fd_, offset, dst, size, &at);
  if (rc != 0) *error = rc < 0 ? "unexpected end of file" : errno_text(rc);
  return rc == 0;
}

void InputFile::read_exactly(uint64_t offset, void* dst, size_t size) const {
  uint64_t at = 0;
  int rc = pread_fully(fd_, offset, dst, size, &at);
  WEFT_CHECK(rc <= 0, FailedPrecondition)
      << "cannot read " << path_ << " at byte offset " << at << ": " << errno_text(rc);
  WEFT_CHECK(rc == 0, DataLoss) << path_ << ": unexpected end of file at byte offset " << at
                                << " (was the file changed while being read?)";
}

bool read_whole_file(const std::string& path, std::string* contents, std::string* error) {
  InputFile f;
  if (std::string e = f.open(path); !e.empty()) {
    *error = e;
    return false;
  }
  contents->resize(f.size());
  return f.read_at(0, contents->data(), contents->size(), error);
}

std::string read_whole_file(const std::string& path) {
  InputFile f(path);
  std::string contents(f.size(), '\0');
  f.read_exactly(0, contents.data(), contents.size());
  return contents;
}

void fsync_directory(const std::string& dir) {
  internal::io_step();
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  WEFT_CHECK(fd >= 0, FailedPrecondition)
      << "cannot open directory " << dir << " to fsync it: " << errno_text(errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  WEFT_CHECK(rc == 0, FailedPrecondition)
      << "cannot fsync directory " << dir << ": " << errno_text(err);
}

void write_file_atomically(const std::string& path, std::string_view contents) {
  AtomicOutputFile f(path);
  f.append(contents);
  f.commit();
}

void rename_directory_replacing(const std::string& from, const std::string& to) {
  internal::io_step();
  if (::rename(from.c_str(), to.c_str()) == 0) return;
  int err = errno;
  WEFT_CHECK(err == ENOTEMPTY || err == EEXIST, FailedPrecondition)
      << "cannot rename " << from << " to " << to << ": " << errno_text(err);
  // `to` is an earlier checkpoint of the same name: swap, so that at every instant `to` is one
  // complete checkpoint, then remove the old one from under the temporary name.
  WEFT_CHECK(::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_EXCHANGE) == 0,
             FailedPrecondition)
      << "cannot replace " << to << " with " << from << ": " << errno_text(errno);
  internal::io_step();
  std::error_code ec;
  std::filesystem::remove_all(from, ec);
}

namespace {
std::filesystem::path without_trailing_slashes(const std::string& path) {
  std::filesystem::path p(path);
  while (!p.empty() && p.filename().empty() && p != p.root_path()) p = p.parent_path();
  return p;
}
}  // namespace

std::string parent_directory(const std::string& path) {
  std::filesystem::path parent = without_trailing_slashes(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

std::string base_name(const std::string& path) {
  return without_trailing_slashes(path).filename().string();
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

}  // namespace weft::io
