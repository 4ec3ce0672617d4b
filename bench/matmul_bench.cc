// weft::matmul against raw oneDNN matmul (primitive made once, buffers preallocated) at the
// tutorial MLP's shapes and two square ones in float32, and at the MLP's shapes (batch 128 and
// 256) in bfloat16 (AMX / AVX512-BF16 with float32 accumulation), and at bf16 128x500x10, which
// weft runs on one thread, also against raw oneDNN on one thread. Goal: ratio >= 0.95.
#include <omp.h>

#include <cstdio>
#include <oneapi/dnnl/dnnl.hpp>

#include "ratio.h"
#include "weft/weft.h"

namespace {

// Args: m, k, n, and 0 for float32 or 1 for bfloat16.
weft::DType dtype_arg(const benchmark::State& state) {
  return state.range(3) == 0 ? weft::kFloat32 : weft::kBFloat16;
}

void weft_matmul(benchmark::State& state) {
  int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  weft::Tensor a = weft::cast(weft::stateless_random_uniform({m, k}, {1, 2}), dtype_arg(state));
  weft::Tensor b = weft::cast(weft::stateless_random_uniform({k, n}, {3, 4}), dtype_arg(state));
  for (auto _ : state) benchmark::DoNotOptimize(weft::matmul(a, b));
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * m * n * k * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}

// Raw oneDNN on `threads` OpenMP threads (weft's configured count unless told).
void onednn_matmul_on(benchmark::State& state, int threads) {
  int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  omp_set_num_threads(threads);
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(eng);
  using tag = dnnl::memory::format_tag;
  auto dt = state.range(3) == 0 ? dnnl::memory::data_type::f32 : dnnl::memory::data_type::bf16;
  dnnl::memory::desc a_md({m, k}, dt, tag::ab), b_md({k, n}, dt, tag::ab),
      c_md({m, n}, dt, tag::ab);
  dnnl::matmul prim(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_md, c_md), eng));
  weft::Tensor a = weft::cast(weft::stateless_random_uniform({m, k}, {1, 2}), dtype_arg(state));
  weft::Tensor b = weft::cast(weft::stateless_random_uniform({k, n}, {3, 4}), dtype_arg(state));
  weft::Tensor c = weft::zeros({m, n}, dtype_arg(state));
  dnnl::memory am(a_md, eng, a.raw_data()), bm(b_md, eng, b.raw_data()),
      cm(c_md, eng, c.raw_data());
  for (auto _ : state) {
    prim.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
    stream.wait();
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * m * n * k * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}

void onednn_matmul(benchmark::State& state) {
  onednn_matmul_on(state, weft::config::num_threads());
}

// weft runs a product this small on one thread when that is faster (onednn.cc, ThreadChoice):
// against raw oneDNN on one thread too, the ratio is what weft's own dispatch costs.
void onednn_matmul_one_thread(benchmark::State& state) { onednn_matmul_on(state, 1); }

const char* const kFloat32Shapes[] = {"128/784/700", "128/700/500", "512/512/512",
                                      "1024/1024/1024"};
const char* const kBfloat16Shapes[] = {"128/784/700", "128/700/500", "128/500/10",
                                       "256/784/700", "256/700/500", "256/500/10"};

void shapes(benchmark::internal::Benchmark* b) {
  auto add = [&](const char* shape, int64_t dtype) {
    int64_t m, k, n;
    std::sscanf(shape, "%ld/%ld/%ld", &m, &k, &n);
    b->Args({m, k, n, dtype});
  };
  for (const char* s : kFloat32Shapes) add(s, 0);
  for (const char* s : kBfloat16Shapes) add(s, 1);
  // Many short repetitions (see main) rather than 10 of 0.2 s: a product takes 5-170 us and the
  // machine's speed drifts over seconds, so short interleaved blocks of both sides meet the same
  // drift. At bf16 128x500x10, five runs each: 10 x 0.2 s gave 0.926-0.968, 40 x 0.05 s gave
  // 0.945-0.973.
  b->UseRealTime()->MinTime(0.05);
}
BENCHMARK(weft_matmul)->Apply(shapes);
BENCHMARK(onednn_matmul)->Apply(shapes);
BENCHMARK(onednn_matmul_one_thread)->Args({128, 500, 10, 1})->UseRealTime()->MinTime(0.05);

}  // namespace

int main(int argc, char** argv) {
  std::vector<weft::bench::Ratio> ratios;
  // weft against `reference` (a benchmark above) at one shape; `versus` ends the title.
  auto add = [&](const char* shape, const char* dtype, int code,
                 const std::string& reference = "onednn_matmul",
                 const std::string& versus = "oneDNN") {
    std::string args = std::string(shape) + "/" + std::to_string(code);
    ratios.push_back({std::string("matmul ") + dtype + " " + shape + " weft vs " + versus,
                      "weft_matmul/" + args + "/min_time:0.050/real_time",
                      reference + "/" + args + "/min_time:0.050/real_time", 1, 1, ">= 0.95"});
  };
  for (const char* s : kFloat32Shapes) add(s, "f32", 0);
  for (const char* s : kBfloat16Shapes) add(s, "bf16", 1);
  add("128/500/10", "bf16", 1, "onednn_matmul_one_thread", "oneDNN on 1 thread");
  // Five processes of 20 repetitions: at bf16 128x500x10 on two threads one process's ratio fell in
  // 0.938-0.997 (12 runs, median 0.969); so did weft's own dispatch into a preallocated output
  // against raw oneDNN, the same work, so the spread is the process's state, not weft.
  return weft::bench::run(argc, argv, ratios, /*repetitions=*/20, /*processes=*/5);
}
