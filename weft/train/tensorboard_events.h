// TensorBoard event files (SPEC §5): `tensorboard --logdir` shows the scalars weft writes here.
// A file `events.out.tfevents.<secs>.<hostname>.<pid>.<n>` holds TFRecords (length, masked CRC32C
// of the length, an Event protobuf, masked CRC32C of it); the first Event carries the file
// version "brain.Event:2", each later one a Summary with one scalar.
//
//   weft::train::EventFileWriter writer("/tmp/logs/train");
//   writer.add_scalar("loss", 0.25, /*step=*/100);
//   writer.flush();   // also done by the destructor
//   read_scalar_events("/tmp/logs/train");  // {"loss", 100, 0.25, ...}: what TensorBoard shows
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace weft::train {

class EventFileWriter {
 public:
  // Creates `logdir` (and parents) if needed and a new event file in it. FailedPrecondition,
  // naming the path, when it cannot.
  explicit EventFileWriter(const std::string& logdir);
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  // Records `value` (stored as float32, as TensorBoard's simple_value) under `tag` at `step`,
  // stamped with the current wall time. Thread-safe.
  void add_scalar(const std::string& tag, double value, int64_t step);
  // Hands buffered records to the operating system (TensorBoard then sees them).
  void flush();

  const std::string& path() const { return path_; }

 private:
  void write_record(std::string_view event);

  std::string path_;
  std::mutex mu_;
  struct Closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::unique_ptr<std::FILE, Closer> file_;
};

struct ScalarEvent {
  std::string tag;
  int64_t step = 0;
  double value = 0;  // a simple_value (float32)
  double wall_time = 0;
};
// Every scalar (simple_value) of the event files directly in `logdir`, file by file in name order
// (the order they were started), each in record order; other events are skipped. Nothing when
// `logdir` does not exist. DataLoss naming the file for a damaged record or Event.
std::vector<ScalarEvent> read_scalar_events(const std::string& logdir);

namespace internal {
// Exposed for tests: the encodings the writer uses.
std::string encode_file_version_event(double wall_time, std::string_view version);
std::string encode_scalar_event(double wall_time, int64_t step, std::string_view tag, float value);
}  // namespace internal

}  // namespace weft::train
