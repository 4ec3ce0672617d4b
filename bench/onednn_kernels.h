// Reference kernels for the training benchmarks: the GEMM-like primitives of one training step
// on raw oneDNN, each made once with its arguments allocated, run back to back.
//
//   weft::bench::Kernels k;
//   weft::bench::add_mlp_gemms(k, 128);
//   k.run();
#pragma once

#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>
#include <utility>
#include <vector>

#include "weft/core/config.h"

namespace weft::bench {

// A list of oneDNN primitives with their (self-allocated) arguments, run in order.
using dnnl::memory;

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

  // c(batch, m, n) = a(batch, m, k) @ b(batch, k, n), transposed operands stored as their
  // transposes.
  void batched_matmul(int64_t batch, int64_t m, int64_t k, int64_t n, bool transpose_a = false,
                      bool transpose_b = false) {
    memory::desc a({batch, m, k}, f32_,
                   transpose_a ? memory::dims{m * k, 1, m} : memory::dims{m * k, k, 1});
    memory::desc b({batch, k, n}, f32_,
                   transpose_b ? memory::dims{k * n, 1, k} : memory::dims{k * n, n, 1});
    memory::desc c({batch, m, n}, f32_, memory::dims{m * n, n, 1});
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), eng_);
    add(dnnl::matmul(pd), {{DNNL_ARG_SRC, pd.src_desc()},
                           {DNNL_ARG_WEIGHTS, pd.weights_desc()},
                           {DNNL_ARG_DST, pd.dst_desc()}});
  }

  // A 3x3 "same" convolution of (batch, c, hw, hw) into oc channels: forward, and the data and
  // filter gradients when asked.
  void conv3x3(int64_t batch, int64_t c, int64_t hw, int64_t oc, bool data_gradient) {
    memory::desc src({batch, c, hw, hw}, f32_, memory::format_tag::any);
    memory::desc wei({oc, c, 3, 3}, f32_, memory::format_tag::any);
    memory::desc dst({batch, oc, hw, hw}, f32_, memory::format_tag::any);
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

  // A training step's LSTM layer over (steps, batch, features) into `units`: the forward pass and
  // the backward pass, weights in the layouts the primitives chose, sharing the workspace.
  void lstm(int64_t steps, int64_t batch, int64_t features, int64_t units) {
    using tag = memory::format_tag;
    memory::desc x({steps, batch, features}, f32_, tag::tnc),
        y({steps, batch, units}, f32_, tag::tnc);
    memory::desc h({1, 1, batch, units}, f32_, tag::ldnc), b({1, 1, 4, units}, f32_, tag::ldgo);
    memory::desc wl({1, 1, features, 4, units}, f32_, tag::any),
        wi({1, 1, units, 4, units}, f32_, tag::any);
    constexpr auto kDirection = dnnl::rnn_direction::unidirectional_left2right;
    dnnl::lstm_forward::primitive_desc fpd(
        dnnl::lstm_forward::desc(dnnl::prop_kind::forward_training, kDirection, x, h, h, wl, wi, b,
                                 y, h, h),
        eng_);
    dnnl::lstm_backward::primitive_desc bpd(
        dnnl::lstm_backward::desc(dnnl::prop_kind::backward, kDirection, x, h, h, wl, wi, b, y, h,
                                  h, x, h, h, wl, wi, b, y, h, h),
        eng_, fpd);
    memory workspace(fpd.workspace_desc(), eng_);
    std::vector<std::pair<int, memory::desc>> layer{
        {DNNL_ARG_SRC_LAYER, x}, {DNNL_ARG_SRC_ITER, h},  {DNNL_ARG_SRC_ITER_C, h},
        {DNNL_ARG_BIAS, b},      {DNNL_ARG_DST_LAYER, y}, {DNNL_ARG_DST_ITER, h},
        {DNNL_ARG_DST_ITER_C, h}};
    auto forward = layer;
    forward.push_back({DNNL_ARG_WEIGHTS_LAYER, fpd.weights_layer_desc()});
    forward.push_back({DNNL_ARG_WEIGHTS_ITER, fpd.weights_iter_desc()});
    add(dnnl::lstm_forward(fpd), forward, {{DNNL_ARG_WORKSPACE, workspace}});
    auto backward = layer;
    for (int arg : {DNNL_ARG_DIFF_SRC_LAYER, DNNL_ARG_DIFF_SRC_ITER, DNNL_ARG_DIFF_SRC_ITER_C,
                    DNNL_ARG_DIFF_BIAS, DNNL_ARG_DIFF_DST_LAYER, DNNL_ARG_DIFF_DST_ITER,
                    DNNL_ARG_DIFF_DST_ITER_C}) {
      backward.push_back({arg, bpd.query_md(dnnl::query::exec_arg_md, arg)});
    }
    backward.push_back({DNNL_ARG_WEIGHTS_LAYER, bpd.weights_layer_desc()});
    backward.push_back({DNNL_ARG_WEIGHTS_ITER, bpd.weights_iter_desc()});
    backward.push_back({DNNL_ARG_DIFF_WEIGHTS_LAYER, bpd.diff_weights_layer_desc()});
    backward.push_back({DNNL_ARG_DIFF_WEIGHTS_ITER, bpd.diff_weights_iter_desc()});
    add(dnnl::lstm_backward(bpd), backward, {{DNNL_ARG_WORKSPACE, workspace}});
  }

  void run() {
    for (auto& [prim, args] : kernels_) prim.execute(stream_, args);
    stream_.wait();
  }

 private:
  // `descs` are allocated here; `shared` memory is another kernel's too.
  void add(dnnl::primitive prim, const std::vector<std::pair<int, memory::desc>>& descs,
           std::unordered_map<int, memory> shared = {}) {
    std::unordered_map<int, memory> args = std::move(shared);
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

// The MLP 784-700-500-10 at `batch`: three forward products, three weight gradients and two input
// gradients (none for the data).
inline void add_mlp_gemms(Kernels& k, int64_t batch) {
  k.matmul(batch, 784, 700);
  k.matmul(batch, 700, 500);
  k.matmul(batch, 500, 10);
  k.matmul(500, batch, 10, true);
  k.matmul(batch, 10, 500, false, true);
  k.matmul(700, batch, 500, true);
  k.matmul(batch, 500, 700, false, true);
  k.matmul(784, batch, 700, true);
}

}  // namespace weft::bench
