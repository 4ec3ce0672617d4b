// Keras's recurrent layers on oneDNN 2.6's RNN primitives: one layer, one direction, left to
// right (go_backwards reverses the input before, as the plain path does). What the layouts are
// and why: docs/dev/onednn-rnn-notes.md.
#include <array>
#include <cstring>
#include <memory>
#include <vector>

#include "weft/core/config.h"
#include "weft/ops/onednn/onednn.h"
#include "weft/ops/onednn/primitives.h"

namespace weft::onednn {
namespace {

using namespace internal;  // NOLINT(google-build-using-namespace): this folder's helpers

constexpr auto kF32 = memory::data_type::f32;
constexpr auto kLeftToRight = dnnl::rnn_direction::unidirectional_left2right;

// weft's layouts of one layer's tensors. Activations stay batch-major (ntc: oneDNN reaches the
// steps through strides, dims are always (steps, batch, channels)); Keras's kernels (features,
// gates * units) are oneDNN's ldigo with one layer and one direction. The primitives choose their
// own weight layouts (`any`): given ldigo the forward pass falls back to a slower kernel, and the
// backward pass refuses it.
struct RnnDescs {
  memory::desc x, y, h, c, kernel, recurrent, bias;
  memory::desc any_kernel, any_recurrent;
};

RnnDescs rnn_descs(memory::data_type dt, const RnnParams& p) {
  const int64_t g = rnn_gates(p.cell), u = p.units;
  RnnDescs d;
  d.x = memory::desc({p.steps, p.batch, p.features}, dt, tag::ntc);
  d.y = memory::desc({p.steps, p.batch, u}, dt, tag::ntc);
  d.h = memory::desc({1, 1, p.batch, u}, dt, tag::ldnc);
  if (p.cell == RnnCell::kLSTM) d.c = memory::desc({1, 1, p.batch, u}, kF32, tag::ldnc);
  d.kernel = memory::desc({1, 1, p.features, g, u}, dt, tag::ldigo);
  d.recurrent = memory::desc({1, 1, u, g, u}, dt, tag::ldigo);
  d.any_kernel = memory::desc({1, 1, p.features, g, u}, dt, tag::any);
  d.any_recurrent = memory::desc({1, 1, u, g, u}, dt, tag::any);
  d.bias = memory::desc({1, 1, rnn_bias_gates(p.cell), u}, kF32, tag::ldgo);
  return d;
}

dnnl_rnn_desc_t forward_desc(const RnnParams& p, const RnnDescs& d, dnnl::prop_kind prop) {
  switch (p.cell) {
    case RnnCell::kSimple:
      return dnnl::vanilla_rnn_forward::desc(prop, dnnl::algorithm::eltwise_tanh, kLeftToRight, d.x,
                                             d.h, d.any_kernel, d.any_recurrent, d.bias, d.y, d.h)
          .data;
    case RnnCell::kLSTM:
      return dnnl::lstm_forward::desc(prop, kLeftToRight, d.x, d.h, d.c, d.any_kernel,
                                      d.any_recurrent, d.bias, d.y, d.h, d.c)
          .data;
    case RnnCell::kGRU:
      return dnnl::lbr_gru_forward::desc(prop, kLeftToRight, d.x, d.h, d.any_kernel,
                                         d.any_recurrent, d.bias, d.y, d.h)
          .data;
  }
  WEFT_FAIL(Internal) << "rnn: unknown cell";
  return {};
}

// `d` the layer's tensors, `g` their gradients (float32).
dnnl_rnn_desc_t backward_desc(const RnnParams& p, const RnnDescs& d, const RnnDescs& g) {
  constexpr auto kBackward = dnnl::prop_kind::backward;
  switch (p.cell) {
    case RnnCell::kSimple:
      return dnnl::vanilla_rnn_backward::desc(kBackward, dnnl::algorithm::eltwise_tanh,
                                              kLeftToRight, d.x, d.h, d.any_kernel, d.any_recurrent,
                                              d.bias, d.y, d.h, g.x, g.h, g.any_kernel,
                                              g.any_recurrent, g.bias, g.y, g.h)
          .data;
    case RnnCell::kLSTM:
      return dnnl::lstm_backward::desc(kBackward, kLeftToRight, d.x, d.h, d.c, d.any_kernel,
                                       d.any_recurrent, d.bias, d.y, d.h, d.c, g.x, g.h, g.c,
                                       g.any_kernel, g.any_recurrent, g.bias, g.y, g.h, g.c)
          .data;
    case RnnCell::kGRU:
      return dnnl::lbr_gru_backward::desc(kBackward, kLeftToRight, d.x, d.h, d.any_kernel,
                                          d.any_recurrent, d.bias, d.y, d.h, g.x, g.h, g.any_kernel,
                                          g.any_recurrent, g.bias, g.y, g.h)
          .data;
  }
  WEFT_FAIL(Internal) << "rnn: unknown cell";
  return {};
}

dnnl::primitive_desc make_pd(const dnnl_rnn_desc_t& desc, const dnnl::primitive_desc* hint) {
  return dnnl::primitive_desc(&desc, nullptr, engine(), hint ? hint->get() : nullptr);
}

memory::desc arg_md(const dnnl::primitive_desc& pd, int arg) {
  return pd.query_md(dnnl::query::exec_arg_md, arg);
}

// The weight gradients sum over batch and steps in an order that follows the thread count:
// under op determinism the layer runs on one thread.
int rnn_threads() {
  return config::op_determinism_enabled() ? use_threads(1) : use_configured_threads();
}

Key rnn_key(int kind, DType dtype, const RnnParams& p, int threads) {
  return {kind,       static_cast<int64_t>(dtype),
          threads,    static_cast<int64_t>(p.cell),
          p.steps,    p.batch,
          p.features, p.units};
}

// What every pass of a layer binds: its weights, reordered into the pass's layouts, its inputs
// and outputs (the LSTM's cell states too) and the workspace.
struct LayerMemories {
  LayoutArg kernel, recurrent;
  memory x, h0, c0, bias, y, h, c, workspace;
};

LayerMemories layer_memories(const RnnDescs& d, const dnnl::primitive_desc& pd) {
  return {layout_arg(DNNL_ARG_WEIGHTS_LAYER, d.kernel, arg_md(pd, DNNL_ARG_WEIGHTS_LAYER), false),
          layout_arg(DNNL_ARG_WEIGHTS_ITER, d.recurrent, arg_md(pd, DNNL_ARG_WEIGHTS_ITER), false),
          unbound(d.x),
          unbound(d.h),
          unbound(d.c),
          unbound(d.bias),
          unbound(d.y),
          unbound(d.h),
          unbound(d.c),
          unbound(pd.workspace_desc())};
}

// Binds them to `f`'s buffers (weights reordered into `scratch` where the layouts differ).
std::vector<Arg> layer_args(const RnnParams& p, const LayerMemories& m, const RnnForwardBuffers& f,
                            std::array<std::shared_ptr<Storage>, 2>& scratch) {
  std::vector<Arg> args{bind(DNNL_ARG_SRC_LAYER, m.x, f.x),
                        bind(DNNL_ARG_SRC_ITER, m.h0, f.h0),
                        bind(DNNL_ARG_BIAS, m.bias, f.bias),
                        bind(DNNL_ARG_DST_LAYER, m.y, f.y),
                        bind(DNNL_ARG_DST_ITER, m.h, f.h),
                        bind_input(m.kernel, f.kernel, scratch[0]),
                        bind_input(m.recurrent, f.recurrent, scratch[1])};
  if (p.cell == RnnCell::kLSTM) {
    args.push_back(bind(DNNL_ARG_SRC_ITER_C, m.c0, f.c0));
    args.push_back(bind(DNNL_ARG_DST_ITER_C, m.c, f.c));
  }
  return args;
}

struct ForwardEntry {
  dnnl::primitive prim;
  LayerMemories layer;
};

struct BackwardEntry {
  dnnl::primitive prim;
  LayerMemories layer;
  LayoutArg dkernel, drecurrent;
  memory dx, dh0, dc0, dbias, dy, dh, dc;
};

// Zeroes what an output argument is bound to: oneDNN adds the weight gradients to it.
void zero(const Arg& a) {
  void* data = nullptr;
  const dnnl_memory_desc_t* md = nullptr;
  dnnl_memory_get_data_handle(a.memory, &data);
  dnnl_memory_get_memory_desc(a.memory, &md);
  std::memset(data, 0, dnnl_memory_desc_get_size(md));
}

}  // namespace

std::shared_ptr<Storage> rnn_forward(DType dtype, const RnnParams& p, const RnnForwardBuffers& f,
                                     bool training) {
  thread_local Cache<ForwardEntry> cache;
  const auto& e = cache.get(rnn_key(training ? 1 : 0, dtype, p, rnn_threads()), [&] {
    RnnDescs d = rnn_descs(data_type(dtype), p);
    auto prop = training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
    dnnl::primitive_desc pd = make_pd(forward_desc(p, d, prop), nullptr);
    return ForwardEntry{dnnl::primitive(pd), layer_memories(d, pd)};
  });
  std::array<std::shared_ptr<Storage>, 2> scratch;
  std::shared_ptr<Storage> workspace;
  std::vector<Arg> args = layer_args(p, e.layer, f, scratch);
  if (training) {
    workspace = Storage::allocate(e.layer.workspace.get_desc().get_size());
    args.push_back(bind(DNNL_ARG_WORKSPACE, e.layer.workspace, workspace->data()));
  }
  run(e.prim, args);
  return workspace;
}

void rnn_backward(DType dtype, const RnnParams& p, const RnnForwardBuffers& f,
                  const RnnBackwardBuffers& b, const Storage& workspace) {
  thread_local Cache<BackwardEntry> cache;
  const auto& e = cache.get(rnn_key(2, dtype, p, rnn_threads()), [&] {
    RnnDescs d = rnn_descs(data_type(dtype), p), g = rnn_descs(kF32, p);
    dnnl::primitive_desc fpd =
        make_pd(forward_desc(p, d, dnnl::prop_kind::forward_training), nullptr);
    dnnl::primitive_desc pd = make_pd(backward_desc(p, d, g), &fpd);
    return BackwardEntry{dnnl::primitive(pd),
                         layer_memories(d, pd),
                         layout_arg(DNNL_ARG_DIFF_WEIGHTS_LAYER, g.kernel,
                                    arg_md(pd, DNNL_ARG_DIFF_WEIGHTS_LAYER), true),
                         layout_arg(DNNL_ARG_DIFF_WEIGHTS_ITER, g.recurrent,
                                    arg_md(pd, DNNL_ARG_DIFF_WEIGHTS_ITER), true),
                         unbound(g.x),
                         unbound(g.h),
                         unbound(g.c),
                         unbound(g.bias),
                         unbound(g.y),
                         unbound(g.h),
                         unbound(g.c)};
  });
  std::array<std::shared_ptr<Storage>, 2> scratch, sums;
  std::vector<Arg> args = layer_args(p, e.layer, f, scratch);
  args.push_back(bind(DNNL_ARG_WORKSPACE, e.layer.workspace, workspace.data()));
  args.push_back(bind(DNNL_ARG_DIFF_SRC_LAYER, e.dx, b.dx));
  args.push_back(bind(DNNL_ARG_DIFF_SRC_ITER, e.dh0, b.dh0));
  args.push_back(bind(DNNL_ARG_DIFF_DST_LAYER, e.dy, b.dy));
  args.push_back(bind(DNNL_ARG_DIFF_DST_ITER, e.dh, b.dh));
  if (p.cell == RnnCell::kLSTM) {
    args.push_back(bind(DNNL_ARG_DIFF_SRC_ITER_C, e.dc0, b.dc0));
    args.push_back(bind(DNNL_ARG_DIFF_DST_ITER_C, e.dc, b.dc));
  }
  const size_t first_sum = args.size();
  args.push_back(bind_output(e.dkernel, b.dkernel, sums[0]));
  args.push_back(bind_output(e.drecurrent, b.drecurrent, sums[1]));
  args.push_back(bind(DNNL_ARG_DIFF_BIAS, e.dbias, b.dbias));
  for (size_t i = first_sum; i < args.size(); ++i) zero(args[i]);
  run(e.prim, args);
  finish_output(e.dkernel, args[first_sum], b.dkernel);
  finish_output(e.drecurrent, args[first_sum + 1], b.drecurrent);
}

}  // namespace weft::onednn
