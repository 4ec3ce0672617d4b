#include "weft/train/tensorboard_events.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <system_error>

#include "weft/core/crc32c.h"
#include "weft/core/errors.h"
#include "weft/core/tfrecord.h"

namespace weft::train {
namespace {

static_assert(std::endian::native == std::endian::little,
              "TFRecord and protobuf fixed-width fields are little-endian, copied as is");

// Protobuf wire types.
constexpr uint32_t kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

// Field numbers from tensorflow/core/util/event.proto and framework/summary.proto.
constexpr uint32_t kEventWallTime = 1, kEventStep = 2, kEventFileVersion = 3, kEventSummary = 5;
constexpr uint32_t kSummaryValue = 1;
constexpr uint32_t kValueTag = 1, kValueSimpleValue = 2;

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void put_key(std::string& out, uint32_t field, uint32_t wire_type) {
  put_varint(out, uint64_t{field} << 3 | wire_type);
}
template <typename T>
void put_fixed(std::string& out, uint32_t field, T v) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8);
  put_key(out, field, sizeof(T) == 8 ? kFixed64 : kFixed32);
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));
  out.append(bytes, sizeof(T));
}
void put_bytes(std::string& out, uint32_t field, std::string_view s) {
  put_key(out, field, kLengthDelimited);
  put_varint(out, s.size());
  out.append(s);
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A protobuf message's fields, read in order (what read_scalar_events needs of the format).
class FieldReader {
 public:
  explicit FieldReader(std::string_view bytes) : bytes_(bytes) {}
  // The next field's number and wire type; false at the end. Throws std::out_of_range when the
  // bytes end inside a field.
  bool next(uint32_t* field, uint32_t* wire_type) {
    if (at_ >= bytes_.size()) return false;
    const uint64_t key = varint();
    *field = static_cast<uint32_t>(key >> 3);
    *wire_type = static_cast<uint32_t>(key & 7);
    return true;
  }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const uint8_t b = static_cast<uint8_t>(take(1)[0]);
      v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return v;
    }
    throw std::out_of_range("varint");
  }
  template <typename T>
  T fixed() {
    T v;
    std::memcpy(&v, take(sizeof(T)).data(), sizeof(T));
    return v;
  }
  std::string_view bytes() { return take(varint()); }
  void skip(uint32_t wire_type) {
    switch (wire_type) {
      case kVarint:
        varint();
        return;
      case kFixed64:
        take(8);
        return;
      case kLengthDelimited:
        bytes();
        return;
      case kFixed32:
        take(4);
        return;
      default:
        throw std::out_of_range("wire type");
    }
  }

 private:
  std::string_view take(uint64_t n) {
    if (n > bytes_.size() - at_) throw std::out_of_range("field");
    std::string_view out = bytes_.substr(at_, n);
    at_ += n;
    return out;
  }
  std::string_view bytes_;
  std::size_t at_ = 0;
};

// The scalars of one Event's Summary.
void read_event(std::string_view event, std::vector<ScalarEvent>& out) {
  FieldReader r(event);
  double wall_time = 0;
  int64_t step = 0;
  std::vector<std::string_view> values;
  uint32_t field, type;
  while (r.next(&field, &type)) {
    if (field == kEventWallTime && type == kFixed64) {
      wall_time = r.fixed<double>();
    } else if (field == kEventStep && type == kVarint) {
      step = static_cast<int64_t>(r.varint());
    } else if (field == kEventSummary && type == kLengthDelimited) {
      FieldReader summary(r.bytes());
      while (summary.next(&field, &type)) {
        if (field == kSummaryValue && type == kLengthDelimited) {
          values.push_back(summary.bytes());
        } else {
          summary.skip(type);
        }
      }
    } else {
      r.skip(type);
    }
  }
  for (std::string_view v : values) {
    FieldReader value(v);
    ScalarEvent e;
    e.step = step;
    e.wall_time = wall_time;
    bool simple = false;
    while (value.next(&field, &type)) {
      if (field == kValueTag && type == kLengthDelimited) {
        e.tag = std::string(value.bytes());
      } else if (field == kValueSimpleValue && type == kFixed32) {
        e.value = value.fixed<float>();
        simple = true;
      } else {
        value.skip(type);
      }
    }
    if (simple) out.push_back(std::move(e));
  }
}

}  // namespace

std::vector<ScalarEvent> read_scalar_events(const std::string& logdir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(logdir, ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && name.find("tfevents") != std::string::npos) {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<ScalarEvent> out;
  for (const std::string& path : files) {
    TFRecordReader reader(path);
    while (std::optional<std::string> record = reader.next()) {
      try {
        read_event(*record, out);
      } catch (const std::out_of_range&) {
        WEFT_FAIL(DataLoss) << path << ": the Event ending at byte " << reader.offset()
                            << " is not a valid protobuf message";
      }
    }
  }
  return out;
}

namespace internal {

std::string encode_file_version_event(double wall_time, std::string_view version) {
  std::string event;
  put_fixed(event, kEventWallTime, wall_time);
  put_bytes(event, kEventFileVersion, version);
  return event;
}

std::string encode_scalar_event(double wall_time, int64_t step, std::string_view tag, float value) {
  std::string summary_value;
  put_bytes(summary_value, kValueTag, tag);
  put_fixed(summary_value, kValueSimpleValue, value);
  std::string summary;
  put_bytes(summary, kSummaryValue, summary_value);
  std::string event;
  put_fixed(event, kEventWallTime, wall_time);
  if (step != 0) {  // proto3 leaves out a zero, as TensorFlow's writer does
    put_key(event, kEventStep, kVarint);
    put_varint(event, static_cast<uint64_t>(step));  // int64: negatives take 10 bytes
  }
  put_bytes(event, kEventSummary, summary);
  return event;
}

}  // namespace internal

EventFileWriter::EventFileWriter(const std::string& logdir) {
  WEFT_CHECK(!logdir.empty(), InvalidArgument) << "EventFileWriter: empty logdir";
  std::error_code ec;
  std::filesystem::create_directories(logdir, ec);
  WEFT_CHECK(!ec, FailedPrecondition)
      << "EventFileWriter: cannot create logdir " << logdir << ": " << ec.message();
  // pid and a per-process count keep two writers started in the same second apart.
  static std::atomic<int> count{0};
  double wall_time = now_seconds();
  path_ = logdir + "/events.out.tfevents." + std::to_string(static_cast<int64_t>(wall_time)) + "." +
          io::host_name() + "." + std::to_string(::getpid()) + "." +
          std::to_string(count.fetch_add(1));
  file_.reset(std::fopen(path_.c_str(), "wbx"));
  WEFT_CHECK(file_ != nullptr, FailedPrecondition)
      << "EventFileWriter: cannot create " << path_ << ": " << std::strerror(errno);
  write_record(internal::encode_file_version_event(wall_time, "brain.Event:2"));
  flush();
}

EventFileWriter::~EventFileWriter() = default;  // fclose writes what is buffered

void EventFileWriter::write_record(std::string_view event) {
  std::string record = frame_tfrecord(event);
  WEFT_CHECK(std::fwrite(record.data(), 1, record.size(), file_.get()) == record.size(),
             FailedPrecondition)
      << "EventFileWriter: cannot write " << path_ << ": " << std::strerror(errno);
}

void EventFileWriter::add_scalar(const std::string& tag, double value, int64_t step) {
  WEFT_CHECK(!tag.empty(), InvalidArgument) << "EventFileWriter::add_scalar: empty tag";
  std::string event =
      internal::encode_scalar_event(now_seconds(), step, tag, static_cast<float>(value));
  std::lock_guard<std::mutex> lock(mu_);
  write_record(event);
}

void EventFileWriter::flush() {
  std::lock_guard<std::mutex> lock(mu_);
  WEFT_CHECK(std::fflush(file_.get()) == 0, FailedPrecondition)
      << "EventFileWriter: cannot write " << path_ << ": " << std::strerror(errno);
}

}  // namespace weft::train
