// Elementwise throughput and eager dispatch cost.
//  - float32 add of 16 MiB operands vs memcpy of 16 MiB, as bytes moved per second (add reads two
//    operands and writes one: 48 MiB; memcpy reads and writes 16 MiB each: 32 MiB). Goal >= 0.8.
//  - a one-element add, the whole eager path (checks, allocation, dispatch). Goal <= 1 us per op.
//  - OpScope, the entry every op passes (weft/core/op_scope.h), on the add's two operands, as a
//    share of the one-element add (issue 44: within 5%).
#include <cstring>

#include "ratio.h"
#include "weft/weft.h"

namespace {

constexpr int64_t kElements = (16 << 20) / 4;

void weft_add_16mib(benchmark::State& state) {
  weft::Tensor a = weft::stateless_random_uniform({kElements}, {1, 2});
  weft::Tensor b = weft::stateless_random_uniform({kElements}, {3, 4});
  for (auto _ : state) benchmark::DoNotOptimize(weft::add(a, b));
  state.SetBytesProcessed(state.iterations() * kElements * 4 * 3);
}

void memcpy_16mib(benchmark::State& state) {
  std::vector<float> src(kElements, 1.0f), dst(kElements);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), kElements * 4);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kElements * 4 * 2);
}

void weft_add_one_element(benchmark::State& state) {
  weft::Tensor a = weft::ones({1}), b = weft::ones({1});
  for (auto _ : state) benchmark::DoNotOptimize(weft::add(a, b));
}

// What OpScope adds to every op that takes no DTensor: a test of each operand.
void op_scope_two_operands(benchmark::State& state) {
  weft::Tensor a = weft::ones({1}), b = weft::ones({1});
  for (auto _ : state) {
    benchmark::DoNotOptimize(a);
    benchmark::DoNotOptimize(b);
    weft::OpScope op("add", a, b);
    benchmark::DoNotOptimize(op.spmd());
  }
}

void cpp_add_one_element(benchmark::State& state) {
  float a = 1, b = 1;
  for (auto _ : state) {
    benchmark::DoNotOptimize(a);
    benchmark::DoNotOptimize(a + b);
  }
}

BENCHMARK(weft_add_16mib)->UseRealTime()->MinTime(0.2);
BENCHMARK(memcpy_16mib)->UseRealTime()->MinTime(0.2);
BENCHMARK(weft_add_one_element)->UseRealTime()->MinTime(0.2);
BENCHMARK(cpp_add_one_element)->UseRealTime()->MinTime(0.2);
BENCHMARK(op_scope_two_operands)->UseRealTime()->MinTime(0.2);

}  // namespace

int main(int argc, char** argv) {
  return weft::bench::run(
      argc, argv,
      {{"add f32 16 MiB vs memcpy 16 MiB (bytes moved/s)",
        "weft_add_16mib/min_time:0.200/real_time", "memcpy_16mib/min_time:0.200/real_time", 48, 32,
        ">= 0.8"},
       {"eager one-element add vs a C++ float add", "weft_add_one_element/min_time:0.200/real_time",
        "cpp_add_one_element/min_time:0.200/real_time", 1, 1,
        "report: subject time is the dispatch cost, goal <= 1 us"},
       {"OpScope's share of the eager one-element add (time ratio)",
        "weft_add_one_element/min_time:0.200/real_time",
        "op_scope_two_operands/min_time:0.200/real_time", 1, 1, "<= 0.05"}});
}
