#include "weft/data/iterator_state.h"

#include <bit>
#include <cstdlib>
#include <cstring>

#include "weft/core/errors.h"
#include "weft/ops/cast.h"

namespace weft::data {
namespace {

static_assert(std::endian::native == std::endian::little,
              "iterator states are written in host order, which must be little-endian");

constexpr int64_t kMaxRank = 64;

}  // namespace

// ---- writer ------------------------------------------------------------------------------------

void StateWriter::begin(std::string_view stage) { write_string(stage); }

void StateWriter::write_i64(int64_t v) { out_.append(reinterpret_cast<const char*>(&v), sizeof v); }

void StateWriter::write_u64(uint64_t v) {
  out_.append(reinterpret_cast<const char*>(&v), sizeof v);
}

void StateWriter::write_string(std::string_view s) {
  write_u64(s.size());
  out_.append(s);
}

void StateWriter::write_tensor(const Tensor& t) {
  WEFT_CHECK(t.defined(), InvalidArgument)
      << "Dataset iterator state: an element holds an undefined tensor, which cannot be saved";
  write_u64(static_cast<uint64_t>(t.dtype()));
  write_u64(t.shape().size());
  for (int64_t d : t.shape()) write_i64(d);
  Tensor c = contiguous(t);
  const int64_t bytes = c.numel() * dtype_size(c.dtype());
  if (bytes > 0) out_.append(static_cast<const char*>(c.raw_data()), bytes);
}

void StateWriter::write_element(const Element& e) {
  write_u64(e.size());
  for (const Tensor& t : e) write_tensor(t);
}

void StateWriter::write_error(const std::exception_ptr& error) {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    code = e.code();
    message = e.message();
  } catch (const std::exception& e) {
    message = e.what();
  } catch (...) {
    message = "an exception that is not a std::exception";
  }
  write_u64(static_cast<uint64_t>(code));
  write_string(message);
}

// ---- reader ------------------------------------------------------------------------------------

StateReader::StateReader(const std::string& bytes, size_t offset) : in_(bytes), pos_(offset) {}

void StateReader::fail(const std::string& expected) const {
  WEFT_FAIL(DataLoss) << "Dataset iterator state: expected " << expected << ", at byte " << pos_
                      << " of " << in_.size()
                      << (stage_.empty() ? std::string()
                                         : " in the state of stage '" + stage_ + "'")
                      << "; the state is damaged or was saved from a different pipeline";
  std::abort();  // unreachable: WEFT_FAIL throws
}

const char* StateReader::take(size_t n, std::string_view what) {
  if (in_.size() - pos_ < n) {
    fail(std::string(what) + " (" + std::to_string(n) + " bytes) but the state ends after " +
         std::to_string(in_.size() - pos_));
  }
  const char* p = in_.data() + pos_;
  pos_ += n;
  return p;
}

void StateReader::begin(std::string_view stage) {
  size_t at = pos_;
  std::string found;
  if (in_.size() - pos_ >= sizeof(uint64_t)) {
    uint64_t n;
    std::memcpy(&n, in_.data() + pos_, sizeof n);
    if (n <= 64 && in_.size() - pos_ - sizeof n >= n) found.assign(in_.data() + pos_ + 8, n);
  }
  if (found != stage) {
    pos_ = at;
    fail("the state of stage '" + std::string(stage) + "'" +
         (found.empty() ? std::string() : ", found stage '" + found + "'"));
  }
  pos_ += sizeof(uint64_t) + found.size();
  stage_ = std::string(stage);
}

int64_t StateReader::read_i64(std::string_view what, int64_t lo, int64_t hi) {
  size_t at = pos_;
  int64_t v;
  std::memcpy(&v, take(sizeof v, what), sizeof v);
  if (v < lo || v > hi) {
    pos_ = at;
    fail(std::string(what) + " in [" + std::to_string(lo) + ", " + std::to_string(hi) +
         "], found " + std::to_string(v));
  }
  return v;
}

uint64_t StateReader::read_u64(std::string_view what) {
  uint64_t v;
  std::memcpy(&v, take(sizeof v, what), sizeof v);
  return v;
}

bool StateReader::read_bool(std::string_view what) { return read_i64(what, 0, 1) == 1; }

std::string StateReader::read_string(std::string_view what) {
  size_t remaining = in_.size() - pos_;
  int64_t n = read_i64(std::string(what) + " length", 0,
                       static_cast<int64_t>(remaining >= 8 ? remaining - 8 : 0));
  return std::string(take(n, what), n);
}

Tensor StateReader::read_tensor(std::string_view what) {
  std::string w(what);
  auto dtype = static_cast<DType>(read_i64(w + " dtype", 0, static_cast<int64_t>(kFloat64)));
  int64_t rank = read_i64(w + " rank", 0, kMaxRank);
  Shape shape(rank);
  int64_t remaining = static_cast<int64_t>(in_.size() - pos_);
  for (int64_t& d : shape) d = read_i64(w + " dimension", 0, remaining);
  // Checked before multiplying, so a damaged shape cannot overflow or allocate wildly.
  int64_t bytes = dtype_size(dtype);
  for (int64_t d : shape) {
    if (d != 0 && bytes > remaining / d) {
      fail(w + " of shape " + shape_str(shape) + " " + std::string(dtype_name(dtype)) +
           ", which is larger than the rest of the state");
    }
    bytes *= d;
  }
  Tensor t = Tensor::empty(shape, dtype);
  if (bytes > 0) std::memcpy(t.raw_data(), take(bytes, w + " data"), bytes);
  return t;
}

Element StateReader::read_element(std::string_view what) {
  int64_t n = read_i64(std::string(what) + " component count", 0, 1 << 20);
  Element e;
  e.reserve(n);
  for (int64_t i = 0; i < n; ++i) e.push_back(read_tensor(what));
  return e;
}

std::exception_ptr StateReader::read_error(std::string_view what) {
  auto code = static_cast<ErrorCode>(
      read_i64(std::string(what) + " error code", 0, static_cast<int64_t>(ErrorCode::kCancelled)));
  return make_error(code, read_string(std::string(what) + " error message"));
}

// ---- Reader defaults ---------------------------------------------------------------------------

void Dataset::Reader::save(StateWriter&) const {
  WEFT_FAIL(FailedPrecondition) << "Dataset iterator: a custom pipeline stage does not implement "
                                   "Reader::save, so this iterator's state cannot be saved";
}

void Dataset::Reader::restore(StateReader&) {
  WEFT_FAIL(FailedPrecondition) << "Dataset iterator: a custom pipeline stage does not implement "
                                   "Reader::restore, so this iterator's state cannot be restored";
}

std::optional<int64_t> Dataset::Reader::next_row() {
  WEFT_FAIL(Internal) << "Dataset::Reader::next_row called on a reader without a row_source(); "
                         "this is a bug";
  return std::nullopt;
}

}  // namespace weft::data
