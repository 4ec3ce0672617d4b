// A collective call's profiler events (host level 1, weft/core/trace_me.h): the call itself
// ("all_reduce", category kCollective) with its bytes, implementation and id (the communicator's
// name and the call header's sequence number: equal on every rank, so a trace links the ranks'
// events of one call), and inside it the wait (kCollectiveWait): from the call's start until the
// call's first exchange with its peers has completed, that is, until they had arrived too.
//
//   internal::CollectiveTrace trace(name_, implementation_name(impl));
//   trace.call(header);
//   ... exchange headers ...
//   internal::CollectiveTrace::arrived();
#pragma once

#include <string>

#include "weft/core/trace_me.h"
#include "weft/distribute/collective/internal/call_header.h"

namespace weft::distribute::collective::internal {

class CollectiveTrace {
 public:
  CollectiveTrace(const std::string& communicator, const char* implementation)
      : on_(trace_active(1)) {
    if (!on_) return;
    communicator_ = &communicator;
    implementation_ = implementation;
    start_ns_ = trace_now_ns();
    outer_ = current_;
    current_ = this;
  }
  ~CollectiveTrace() {
    if (on_) finish();
  }
  CollectiveTrace(const CollectiveTrace&) = delete;
  CollectiveTrace& operator=(const CollectiveTrace&) = delete;

  // What the call is (its header names the event and gives its id and bytes).
  void call(const Header& h) {
    if (on_) header_ = h;
  }
  // On the calling thread's innermost collective in progress: its wait starts now (else at the
  // call's start: shared memory copies its values in first), or ends now: the first exchange
  // with the peers is done. Later calls change nothing.
  static void waiting() {
    if (current_ && current_->wait_start_ns_ == 0) current_->wait_start_ns_ = trace_now_ns();
  }
  static void arrived() {
    if (current_ && current_->arrived_ns_ == 0) current_->arrived_ns_ = trace_now_ns();
  }

 private:
  void finish();

  static thread_local CollectiveTrace* current_;
  bool on_;
  const std::string* communicator_ = nullptr;
  const char* implementation_ = "";
  Header header_;
  int64_t start_ns_ = 0;
  int64_t wait_start_ns_ = 0;
  int64_t arrived_ns_ = 0;
  CollectiveTrace* outer_ = nullptr;
};

}  // namespace weft::distribute::collective::internal
