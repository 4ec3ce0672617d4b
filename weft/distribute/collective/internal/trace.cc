#include "weft/distribute/collective/internal/trace.h"

#include <utility>

#include "weft/core/dtype.h"

namespace weft::distribute::collective::internal {

thread_local CollectiveTrace* CollectiveTrace::current_ = nullptr;

void CollectiveTrace::finish() {
  current_ = outer_;
  const int64_t end_ns = trace_now_ns();
  const Kind kind = static_cast<Kind>(header_.kind);
  int64_t elements = kind == Kind::kBarrier ? 0 : 1;
  for (int i = 0; i < header_.ndim && i < 8; ++i) elements *= header_.dims[i];
  const std::string id = *communicator_ + "#" + std::to_string(header_.sequence);
  TraceEvent call;
  call.name = kind_name(kind);
  call.category = TraceCategory::kCollective;
  call.start_ns = start_ns_;
  call.end_ns = end_ns;
  call.stats = {{"id", id},
                {"bytes", std::to_string(elements * static_cast<int64_t>(dtype_size(
                                                        static_cast<DType>(header_.dtype))))},
                {"implementation_name", implementation_}};
  if (arrived_ns_ > 0) {
    TraceEvent wait;
    wait.name = "wait";
    wait.category = TraceCategory::kCollectiveWait;
    wait.start_ns = wait_start_ns_ > 0 ? wait_start_ns_ : start_ns_;
    wait.end_ns = arrived_ns_;
    wait.stats = {{"id", id}};
    record_trace_event(std::move(wait), 1);
  }
  record_trace_event(std::move(call), 1);
}

}  // namespace weft::distribute::collective::internal
