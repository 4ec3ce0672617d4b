// What the profiler's server and client agree on.
#pragma once

#include <cstddef>
#include <cstdint>

namespace weft::profiler::internal {

// A capture lasts at most this long, and starts at most this long after it is asked for.
inline constexpr uint32_t kMaxDurationMs = 600'000;
inline constexpr uint32_t kMaxDelayMs = 60'000;
// The largest trace a server sends (gzipped): kMaxEventsPerTask events compress well under it.
inline constexpr std::size_t kMaxTraceBytes = std::size_t{512} << 20;

}  // namespace weft::profiler::internal
