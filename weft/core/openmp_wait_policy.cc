// libweft_openmp_policy.so: applies weft's OpenMP wait policy (config::kOpenMPSpinCount) before
// OpenMP's runtime initialises. libgomp reads GOMP_SPINCOUNT once, in its constructor, before
// main(). The dynamic loader runs the constructors of libraries that do not depend on each other
// in the reverse of their load order, so this library, with no dependency but libc and linked as
// libweft's last, is loaded after libgomp and initialised before it, in every program that uses
// weft. OMP_WAIT_POLICY or GOMP_SPINCOUNT in the environment win. tests/outside_project/run.cmake
// checks that libgomp starts with this policy.
#include <cstdio>
#include <cstdlib>

#include "weft/core/config.h"

namespace {

[[gnu::constructor]] void apply_openmp_wait_policy() {
  if (std::getenv("OMP_WAIT_POLICY") == nullptr && std::getenv("GOMP_SPINCOUNT") == nullptr) {
    char count[24];
    std::snprintf(count, sizeof(count), "%ld", weft::config::kOpenMPSpinCount);
    setenv("GOMP_SPINCOUNT", count, 1);
  }
}

}  // namespace
