// What every collective call carries to the ranks it meets: its sequence number, kind, dtype,
// shape and reduction (or root). Ranks whose headers disagree fail, naming both.
#pragma once

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>

#include "weft/core/dtype.h"
#include "weft/core/shape.h"
#include "weft/distribute/collective/communicator.h"

namespace weft::distribute::collective::internal {

enum class Kind : uint32_t {
  kAllReduce = 1,
  kBroadcast,
  kAllGather,
  kReduceScatter,
  kBarrier,
  kAllToAll,
  kSplit,
};

inline const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kAllReduce: return "all_reduce";
    case Kind::kBroadcast: return "broadcast";
    case Kind::kAllGather: return "all_gather";
    case Kind::kReduceScatter: return "reduce_scatter";
    case Kind::kBarrier: return "barrier";
    case Kind::kAllToAll: return "all_to_all";
    case Kind::kSplit: return "split";
  }
  return "?";
}

// What a collective call is, sent to the peers it meets: ranks that disagree on any field fail.
struct Header {
  uint64_t sequence = 0;
  uint32_t kind = 0;
  uint32_t dtype = 0;
  uint32_t op = 0;  // the reduction, or the broadcast's root
  int32_t rank = 0;
  int32_t ndim = 0;
  int32_t unused = 0;
  int64_t dims[8] = {};

  bool agrees(const Header& o) const {
    return sequence == o.sequence && kind == o.kind && dtype == o.dtype && op == o.op &&
           ndim == o.ndim && std::equal(dims, dims + 8, o.dims);
  }
  std::string describe() const {
    std::ostringstream s;
    s << kind_name(static_cast<Kind>(kind)) << " #" << sequence;
    if (static_cast<Kind>(kind) == Kind::kBarrier) return s.str();
    s << " of " << dtype_name(static_cast<DType>(dtype)) << " [";
    for (int i = 0; i < ndim && i < 8; ++i) s << (i ? ", " : "") << dims[i];
    if (ndim > 8) s << ", ...";
    s << "]";
    if (static_cast<Kind>(kind) == Kind::kBroadcast) s << " from root " << op;
    if (static_cast<Kind>(kind) == Kind::kAllReduce ||
        static_cast<Kind>(kind) == Kind::kReduceScatter) {
      s << " (" << reduction_name(static_cast<Reduction>(op)) << ")";
    }
    return s.str();
  }
};
static_assert(sizeof(Header) == 96);

inline Header make_header(uint64_t sequence, Kind kind, const Shape& shape, DType dtype,
                          uint32_t op, int rank) {
  Header h;
  h.sequence = sequence;
  h.kind = static_cast<uint32_t>(kind);
  h.dtype = static_cast<uint32_t>(dtype);
  h.op = op;
  h.rank = rank;
  h.ndim = static_cast<int32_t>(shape.size());
  for (size_t i = 0; i < shape.size() && i < 8; ++i) h.dims[i] = shape[i];
  return h;
}

// "collectives disagree: rank 0 (worker:0) called all_reduce #3 of float32 [10] (sum), rank 1
// (worker:1) called ...", lower rank first.
template <typename TaskOf>
std::string disagreement(const Header& a, const Header& b, TaskOf&& task_of) {
  const Header& lo = a.rank < b.rank ? a : b;
  const Header& hi = a.rank < b.rank ? b : a;
  return "collectives disagree: rank " + std::to_string(lo.rank) + " (" + task_of(lo.rank) +
         ") called " + lo.describe() + ", rank " + std::to_string(hi.rank) + " (" +
         task_of(hi.rank) + ") called " + hi.describe();
}

}  // namespace weft::distribute::collective::internal
