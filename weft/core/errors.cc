#include "weft/core/errors.h"

namespace weft {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "InvalidArgument";
    case ErrorCode::kFailedPrecondition:
      return "FailedPrecondition";
    case ErrorCode::kOutOfRange:
      return "OutOfRange";
    case ErrorCode::kDataLoss:
      return "DataLoss";
    case ErrorCode::kUnavailable:
      return "Unavailable";
    case ErrorCode::kDeadlineExceeded:
      return "DeadlineExceeded";
    case ErrorCode::kInternal:
      return "Internal";
    case ErrorCode::kResourceExhausted:
      return "ResourceExhausted";
    case ErrorCode::kCancelled:
      return "Cancelled";
  }
  return "Unknown";
}

ErrorCode error_code_from_name(std::string_view name) {
  for (int c = 0; c <= static_cast<int>(ErrorCode::kCancelled); ++c) {
    if (name == error_code_name(static_cast<ErrorCode>(c))) return static_cast<ErrorCode>(c);
  }
  return ErrorCode::kInternal;
}

std::exception_ptr make_error(ErrorCode code, const std::string& message) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return std::make_exception_ptr(InvalidArgument(message));
    case ErrorCode::kFailedPrecondition:
      return std::make_exception_ptr(FailedPrecondition(message));
    case ErrorCode::kOutOfRange:
      return std::make_exception_ptr(OutOfRange(message));
    case ErrorCode::kDataLoss:
      return std::make_exception_ptr(DataLoss(message));
    case ErrorCode::kUnavailable:
      return std::make_exception_ptr(Unavailable(message));
    case ErrorCode::kDeadlineExceeded:
      return std::make_exception_ptr(DeadlineExceeded(message));
    case ErrorCode::kInternal:
      return std::make_exception_ptr(Internal(message));
    case ErrorCode::kResourceExhausted:
      return std::make_exception_ptr(ResourceExhausted(message));
    case ErrorCode::kCancelled:
      return std::make_exception_ptr(Cancelled(message));
  }
  return std::make_exception_ptr(Internal(message));
}

Error::Error(ErrorCode code, const std::string& message)
    : std::runtime_error(std::string(error_code_name(code)) + ": " + message),
      code_(code),
      message_(message) {}

}  // namespace weft
