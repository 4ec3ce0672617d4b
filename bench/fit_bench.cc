// Model::fit throughput for the two models `weft train` trains (weft/nn/models.h, batch 128, Adam,
// sparse cross-entropy, accuracy), against the bound their GEMM-like kernels set: the same
// matmuls and convolutions of one training step run back to back on raw oneDNN, in the layouts
// oneDNN prefers and with nothing else in between. ratio = GEMM time per step / fit time per step
// (1.0 would mean everything but the GEMMs is free; the goal is >= 0.6). Each benchmark also
// reports examples/s and the peak bytes weft's allocator held (Storage::peak_bytes_in_use).
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>

#include "ratio.h"
#include "weft/core/config.h"
#include "weft/core/storage.h"
#include "weft/data/dataset.h"
#include "weft/nn/losses.h"
#include "weft/nn/models.h"
#include "weft/ops/random.h"
#include "weft/optim/adam.h"

namespace {

using dnnl::memory;
constexpr int64_t kBatch = 128;
constexpr int64_t kSteps = 20;  // batches per fit() call

// fit() over kSteps in-memory batches of random 28x28x1 images and labels, one epoch per
// iteration.
void fit_model(benchmark::State& state, weft::nn::Model model) {
  model.compile(weft::optim::Adam({.learning_rate = 1e-3}),
                weft::nn::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                {"accuracy"});
  weft::Tensor x = weft::stateless_random_uniform({kSteps * kBatch, 28, 28, 1}, {1, 2});
  weft::Tensor y = weft::stateless_random_uniform({kSteps * kBatch}, {3, 4}, 0, 10, weft::kInt64);
  weft::data::Dataset ds = weft::data::Dataset::from_tensor_slices({x, y}).batch(kBatch);
  model.fit(ds, {.epochs = 1, .verbose = 0});  // builds, warms the primitive caches
  for (auto _ : state) model.fit(ds, {.epochs = 1, .verbose = 0});
  state.counters["examples/s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kSteps * kBatch), benchmark::Counter::kIsRate);
  state.counters["peak_MiB"] =
      static_cast<double>(weft::Storage::peak_bytes_in_use()) / (1024.0 * 1024.0);
}

void fit_mlp(benchmark::State& state) { fit_model(state, weft::nn::models::mlp()); }
void fit_cnn(benchmark::State& state) { fit_model(state, weft::nn::models::cnn()); }

// A list of oneDNN primitives with their (self-allocated) arguments, run in order.
class Kernels {
 public:
  Kernels() : eng_(dnnl::engine::kind::cpu, 0), stream_(eng_) { weft::config::num_threads(); }

  // c(m, n) = a(m, k) @ b(k, n); a transposed operand is stored as its transpose.
  void matmul(int64_t m, int64_t k, int64_t n, bool transpose_a = false, bool transpose_b = false) {
    memory::desc a({m, k}, f32_, transpose_a ? memory::dims{1, m} : memory::dims{k, 1});
    memory::desc b({k, n}, f32_, transpose_b ? memory::dims{1, k} : memory::dims{n, 1});
    memory::desc c({m, n}, f32_, memory::dims{n, 1});
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), eng_);
    add(dnnl::matmul(pd), {{DNNL_ARG_SRC, pd.src_desc()},
                           {DNNL_ARG_WEIGHTS, pd.weights_desc()},
                           {DNNL_ARG_DST, pd.dst_desc()}});
  }

  // A 3x3 "same" convolution of (batch, c, hw, hw) into oc channels: forward, and the data and
  // filter gradients when asked.
  void conv3x3(int64_t c, int64_t hw, int64_t oc, bool data_gradient) {
    memory::desc src({kBatch, c, hw, hw}, f32_, memory::format_tag::any);
    memory::desc wei({oc, c, 3, 3}, f32_, memory::format_tag::any);
    memory::desc dst({kBatch, oc, hw, hw}, f32_, memory::format_tag::any);
    memory::dims one{1, 1};
    dnnl::convolution_forward::primitive_desc fpd(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                        dnnl::algorithm::convolution_direct, src, wei, dst, one,
                                        one, one),
        eng_);
    add(dnnl::convolution_forward(fpd), {{DNNL_ARG_SRC, fpd.src_desc()},
                                         {DNNL_ARG_WEIGHTS, fpd.weights_desc()},
                                         {DNNL_ARG_DST, fpd.dst_desc()}});
    if (data_gradient) {
      dnnl::convolution_backward_data::primitive_desc pd(
          dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, src, wei, dst,
                                                one, one, one),
          eng_, fpd);
      add(dnnl::convolution_backward_data(pd), {{DNNL_ARG_DIFF_DST, pd.diff_dst_desc()},
                                                {DNNL_ARG_WEIGHTS, pd.weights_desc()},
                                                {DNNL_ARG_DIFF_SRC, pd.diff_src_desc()}});
    }
    dnnl::convolution_backward_weights::primitive_desc pd(
        dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, src, wei, dst,
                                                 one, one, one),
        eng_, fpd);
    add(dnnl::convolution_backward_weights(pd), {{DNNL_ARG_SRC, pd.src_desc()},
                                                 {DNNL_ARG_DIFF_DST, pd.diff_dst_desc()},
                                                 {DNNL_ARG_DIFF_WEIGHTS, pd.diff_weights_desc()}});
  }

  void run() {
    for (auto& [prim, args] : kernels_) prim.execute(stream_, args);
    stream_.wait();
  }

 private:
  void add(dnnl::primitive prim, const std::vector<std::pair<int, memory::desc>>& descs) {
    std::unordered_map<int, memory> args;
    for (const auto& [id, md] : descs) {
      memory m(md, eng_);  // oneDNN allocates; fill so no denormal or NaN slows anything down
      auto* p = static_cast<float*>(m.get_data_handle());
      for (size_t i = 0; i < md.get_size() / sizeof(float); ++i) p[i] = 0.01f * (i % 7);
      args.emplace(id, m);
    }
    kernels_.emplace_back(std::move(prim), std::move(args));
  }

  dnnl::engine eng_;
  dnnl::stream stream_;
  memory::data_type f32_ = memory::data_type::f32;
  std::vector<std::pair<dnnl::primitive, std::unordered_map<int, memory>>> kernels_;
};

// MLP 784-700-500-10: three forward products, three weight gradients, two input gradients.
void mlp_gemms(benchmark::State& state) {
  Kernels k;
  k.matmul(kBatch, 784, 700);
  k.matmul(kBatch, 700, 500);
  k.matmul(kBatch, 500, 10);
  k.matmul(500, kBatch, 10, true);
  k.matmul(kBatch, 10, 500, false, true);
  k.matmul(700, kBatch, 500, true);
  k.matmul(kBatch, 500, 700, false, true);
  k.matmul(784, kBatch, 700, true);
  k.run();
  for (auto _ : state) k.run();
}

// The CNN: conv 1->32 at 28x28 (forward, filter gradient), conv 32->64 at 14x14 (forward, data
// and filter gradients), Dense 3136->128 and 128->10 (forward, weight and input gradients).
void cnn_gemms(benchmark::State& state) {
  Kernels k;
  k.conv3x3(1, 28, 32, false);
  k.conv3x3(32, 14, 64, true);
  k.matmul(kBatch, 3136, 128);
  k.matmul(kBatch, 128, 10);
  k.matmul(128, kBatch, 10, true);
  k.matmul(kBatch, 10, 128, false, true);
  k.matmul(3136, kBatch, 128, true);
  k.matmul(kBatch, 128, 3136, false, true);
  k.run();
  for (auto _ : state) k.run();
}

BENCHMARK(fit_mlp)->UseRealTime()->MinTime(1.0);
BENCHMARK(mlp_gemms)->UseRealTime()->MinTime(0.5);
BENCHMARK(fit_cnn)->UseRealTime()->MinTime(2.0);
BENCHMARK(cnn_gemms)->UseRealTime()->MinTime(0.5);

}  // namespace

int main(int argc, char** argv) {
  // ratio = (kSteps / fit time) / (1 / GEMM time) = GEMM time per step / fit time per step.
  return weft::bench::run(
      argc, argv,
      {{"MLP fit (batch 128) vs its GEMMs alone", "fit_mlp/min_time:1.000/real_time",
        "mlp_gemms/min_time:0.500/real_time", kSteps, 1, ">= 0.6"},
       {"CNN fit (batch 128) vs its GEMMs alone", "fit_cnn/min_time:2.000/real_time",
        "cnn_gemms/min_time:0.500/real_time", kSteps, 1, ">= 0.6"}});
}
