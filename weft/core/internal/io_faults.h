// A test seam for crash tests: weft's file writers pass through io_step() at each file-system
// step (create, write, fsync, close, mkdir, rename, remove), and crash_after_io_steps(k) makes
// the process exit at once (status kIoFaultExitStatus, as a kill would: nothing cleaned up) at
// the k-th step from then. Tests run it in a child process (a gtest death test) to stop a writer
// at every point of a save.
#pragma once

#include <cstdint>

namespace weft::io::internal {

inline constexpr int kIoFaultExitStatus = 86;

void io_step();
// File-system steps so far in this process.
uint64_t io_steps();
// 0 turns it off.
void crash_after_io_steps(uint64_t k);

}  // namespace weft::io::internal
