// weft's typed errors, mirroring the gRPC/absl status codes (SPEC §7), and the two checking macros.
//
//   WEFT_CHECK(a.rank() == 2, InvalidArgument) << "matmul: a must be rank 2, got " << a.shape();
//   WEFT_ASSERT(offset >= 0) << "negative offset";   // internal invariant: "this is a bug"
#pragma once

#include <exception>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace weft {

enum class ErrorCode {
  kInvalidArgument,
  kFailedPrecondition,
  kOutOfRange,
  kDataLoss,
  kUnavailable,
  kDeadlineExceeded,
  kInternal,
  kResourceExhausted,
  kCancelled,  // last: saved iterator states keep codes as numbers
};

const char* error_code_name(ErrorCode code);
// Inverse of error_code_name; kInternal for a name it does not know.
ErrorCode error_code_from_name(std::string_view name);

// Base of every error weft throws; what() is "<CodeName>: <message>".
class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message);
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  ErrorCode code_;
  std::string message_;
};

#define WEFT_DEFINE_ERROR(Name)                                                       \
  class Name : public Error {                                                         \
   public:                                                                            \
    explicit Name(const std::string& message) : Error(ErrorCode::k##Name, message) {} \
  };
WEFT_DEFINE_ERROR(InvalidArgument)
WEFT_DEFINE_ERROR(FailedPrecondition)
WEFT_DEFINE_ERROR(OutOfRange)
WEFT_DEFINE_ERROR(DataLoss)
WEFT_DEFINE_ERROR(Unavailable)
WEFT_DEFINE_ERROR(DeadlineExceeded)
WEFT_DEFINE_ERROR(Internal)
WEFT_DEFINE_ERROR(ResourceExhausted)
WEFT_DEFINE_ERROR(Cancelled)
#undef WEFT_DEFINE_ERROR

// The error of `code` with `message` (an error that crossed a process or a saved state).
std::exception_ptr make_error(ErrorCode code, const std::string& message);

namespace internal {

// Collects a message with operator<< and throws ErrorT when destroyed. Only ever constructed by
// the macros below, on the failing path, so throwing from the destructor is intended.
template <typename ErrorT>
class ErrorBuilder {
 public:
  ErrorBuilder() = default;
  ErrorBuilder(const ErrorBuilder&) = delete;
  ErrorBuilder& operator=(const ErrorBuilder&) = delete;
  ~ErrorBuilder() noexcept(false) { throw ErrorT(stream_.str()); }
  template <typename T>
  ErrorBuilder& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }

 private:
  std::ostringstream stream_;
};

struct Voidify {
  template <typename T>
  void operator&(const T&) {}
};

}  // namespace internal
}  // namespace weft

// User error: throws weft::<ErrorType> with the streamed message when cond is false.
#define WEFT_CHECK(cond, ErrorType) \
  (cond) ? (void)0                  \
         : ::weft::internal::Voidify() & ::weft::internal::ErrorBuilder<::weft::ErrorType>()

// Internal invariant: a failure is a bug in weft, reported as Internal with file:line.
#define WEFT_ASSERT(cond)                                                                          \
  (cond) ? (void)0                                                                                 \
         : ::weft::internal::Voidify() & ::weft::internal::ErrorBuilder<::weft::Internal>()        \
                                             << "internal invariant failed at " << __FILE__ << ":" \
                                             << __LINE__ << " (" #cond "), this is a bug: "

// Unconditional user error.
#define WEFT_FAIL(ErrorType) ::weft::internal::ErrorBuilder<::weft::ErrorType>()
