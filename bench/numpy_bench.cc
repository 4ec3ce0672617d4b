// weft::np against its references:
//  - einsum("ij,jk->ik") and einsum("bij,bjk->bik") vs matmul on the same operands (float32), as
//    multiply-adds per second. Goal >= 0.9 (einsum is one matmul plus its bookkeeping).
//  - np::sort of 1M float32 vs NumPy's np.sort of the same values (loaded from the .npy weft
//    wrote), timed inside a python3 process this benchmark starts and asks for one sort per
//    iteration, interleaved with weft's. Report; goal >= 1.0.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "ratio.h"
#include "weft/weft.h"

namespace np = weft::np;

namespace {

constexpr int64_t kN = 512, kBatch = 32, kSide = 128, kSortSize = 1 << 20;

void weft_matmul_512(benchmark::State& state) {
  weft::Tensor a = weft::stateless_random_uniform({kN, kN}, {1, 2});
  weft::Tensor b = weft::stateless_random_uniform({kN, kN}, {3, 4});
  for (auto _ : state) benchmark::DoNotOptimize(weft::matmul(a, b));
}
void weft_einsum_512(benchmark::State& state) {
  weft::Tensor a = weft::stateless_random_uniform({kN, kN}, {1, 2});
  weft::Tensor b = weft::stateless_random_uniform({kN, kN}, {3, 4});
  for (auto _ : state) benchmark::DoNotOptimize(np::einsum("ij,jk->ik", {a, b}));
}
void weft_batch_matmul(benchmark::State& state) {
  weft::Tensor a = weft::stateless_random_uniform({kBatch, kSide, kSide}, {1, 2});
  weft::Tensor b = weft::stateless_random_uniform({kBatch, kSide, kSide}, {3, 4});
  for (auto _ : state) benchmark::DoNotOptimize(weft::matmul(a, b));
}
void weft_batch_einsum(benchmark::State& state) {
  weft::Tensor a = weft::stateless_random_uniform({kBatch, kSide, kSide}, {1, 2});
  weft::Tensor b = weft::stateless_random_uniform({kBatch, kSide, kSide}, {3, 4});
  for (auto _ : state) benchmark::DoNotOptimize(np::einsum("bij,bjk->bik", {a, b}));
}

weft::Tensor sort_input() {
  static const weft::Tensor x = weft::stateless_random_uniform({kSortSize}, {5, 6}, -1e3, 1e3);
  return x;
}

void weft_sort_1m(benchmark::State& state) {
  weft::Tensor x = sort_input();
  for (auto _ : state) benchmark::DoNotOptimize(np::sort(x));
}

// A python3 process that loads the values and, for each line it reads, sorts them with np.sort and
// writes the seconds that took.
class NumpySorter {
 public:
  NumpySorter() {
    path_ = (std::filesystem::temp_directory_path() /
             ("weft_sort_" + std::to_string(getpid()) + ".npy"))
                .string();
    np::save(path_, sort_input());
    int to_child[2], from_child[2];
    if (pipe(to_child) != 0 || pipe(from_child) != 0) std::abort();
    pid_ = fork();
    if (pid_ == 0) {
      dup2(to_child[0], 0);
      dup2(from_child[1], 1);
      close(to_child[1]);
      close(from_child[0]);
      const char* script =
          "import sys, time, numpy as np\n"
          "x = np.load(sys.argv[1])\n"
          "for line in sys.stdin:\n"
          "    t = time.perf_counter(); y = np.sort(x); t = time.perf_counter() - t\n"
          "    print(repr(t), flush=True)\n";
      execl(WEFT_PYTHON, WEFT_PYTHON, "-c", script, path_.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    to_ = fdopen(to_child[1], "w");
    from_ = fdopen(from_child[0], "r");
  }
  ~NumpySorter() {
    std::fclose(to_);
    std::fclose(from_);
    waitpid(pid_, nullptr, 0);
    std::filesystem::remove(path_);
  }
  double sort_seconds() {
    std::fputs("sort\n", to_);
    std::fflush(to_);
    double t = -1;
    if (std::fscanf(from_, "%lf", &t) != 1) std::abort();
    return t;
  }

 private:
  std::string path_;
  pid_t pid_ = -1;
  FILE* to_ = nullptr;
  FILE* from_ = nullptr;
};

void numpy_sort_1m(benchmark::State& state) {
  static NumpySorter sorter;
  for (auto _ : state) state.SetIterationTime(sorter.sort_seconds());
}

BENCHMARK(weft_matmul_512)->UseRealTime()->MinTime(0.2);
BENCHMARK(weft_einsum_512)->UseRealTime()->MinTime(0.2);
BENCHMARK(weft_batch_matmul)->UseRealTime()->MinTime(0.2);
BENCHMARK(weft_batch_einsum)->UseRealTime()->MinTime(0.2);
BENCHMARK(weft_sort_1m)->UseRealTime()->MinTime(0.2);
BENCHMARK(numpy_sort_1m)->UseManualTime()->MinTime(0.2);

}  // namespace

int main(int argc, char** argv) {
  return weft::bench::run(
      argc, argv,
      {{"einsum ij,jk->ik vs matmul, 512^3 f32", "weft_einsum_512/min_time:0.200/real_time",
        "weft_matmul_512/min_time:0.200/real_time", 1, 1, ">= 0.9"},
       {"einsum bij,bjk->bik vs matmul, 32x128^3 f32", "weft_batch_einsum/min_time:0.200/real_time",
        "weft_batch_matmul/min_time:0.200/real_time", 1, 1, ">= 0.9"},
       {"np::sort vs NumPy np.sort, 1M f32", "weft_sort_1m/min_time:0.200/real_time",
        "numpy_sort_1m/min_time:0.200/manual_time", 1, 1, "report, goal >= 1.0"}});
}
