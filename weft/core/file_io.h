// POSIX file helpers shared by every writer and reader of weft's files (.npy/.npz, checkpoints,
// their state file), so that all of them write, fsync and rename alike: a file appears under its
// name only complete and synced, or not at all. Errors throw FailedPrecondition naming the file and
// the system's reason (DataLoss for a file that ends early).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace weft::io {

std::string errno_text(int err);

// A file being written from scratch, with the current offset (for alignment and headers that are
// filled in afterwards).
class OutputFile {
 public:
  explicit OutputFile(std::string path);  // creates; fails if it exists
  ~OutputFile();                          // only closes: an unsynced file of a failed write
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void append(const void* data, size_t size);
  void append(std::string_view bytes) { append(bytes.data(), bytes.size()); }
  void pad_to_multiple_of(size_t alignment);  // with zero bytes
  // Overwrites `size` bytes already written at `offset` (a header known only afterwards).
  void write_at(uint64_t offset, const void* data, size_t size);
  uint64_t offset() const { return offset_; }
  void sync_and_close();  // fsync, then close
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t offset_ = 0;
};

// An OutputFile written as `path + ".tmp-<pid>-<n>"`; commit() syncs it, renames it over `path` and
// syncs the directory. Without a commit (an error was thrown) the temporary file is removed, so
// `path` never holds a partial file.
class AtomicOutputFile : public OutputFile {
 public:
  explicit AtomicOutputFile(const std::string& path);
  ~AtomicOutputFile();
  void commit();
  const std::string& final_path() const { return final_path_; }

 private:
  std::string final_path_;
  bool committed_ = false;
};

// A file opened for positional reads.
class InputFile {
 public:
  InputFile() = default;
  // Throws FailedPrecondition "cannot open <path>: <reason>".
  explicit InputFile(const std::string& path);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  // Empty on success, otherwise why not ("No such file or directory"), for callers that collect
  // every problem instead of stopping at the first. Only regular files open.
  std::string open(const std::string& path);
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Reads exactly `size` bytes at `offset`; false (with the reason in *error) on failure.
  bool read_at(uint64_t offset, void* dst, size_t size, std::string* error) const;
  // The same, throwing: FailedPrecondition if the system fails the read, DataLoss if the file ends
  // first.
  void read_exactly(uint64_t offset, void* dst, size_t size) const;

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// The whole file into *contents; false (with the reason in *error) when it cannot.
bool read_whole_file(const std::string& path, std::string* contents, std::string* error);
// The same, throwing (as InputFile and read_exactly do).
std::string read_whole_file(const std::string& path);

void fsync_directory(const std::string& dir);
// `contents` through an AtomicOutputFile.
void write_file_atomically(const std::string& path, std::string_view contents);
// Renames directory `from` to `to`. If `to` exists it is swapped atomically (renameat2
// RENAME_EXCHANGE) and the old contents, now at `from`, are removed.
void rename_directory_replacing(const std::string& from, const std::string& to);
// "a/b/c" -> "a/b", "c" -> ".", trailing slashes ignored.
std::string parent_directory(const std::string& path);
std::string base_name(const std::string& path);
// This host's name (gethostname; "localhost" when it has none), as files written per host are
// named (TensorBoard's event files, the profiler's traces).
std::string host_name();

}  // namespace weft::io
