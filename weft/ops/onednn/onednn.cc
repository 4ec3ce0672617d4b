#include "weft/ops/onednn/onednn.h"

#include <omp.h>
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>

#include "weft/core/config.h"
#include "weft/core/errors.h"
#include "weft/core/flush_denormals.h"
#include "weft/core/half.h"
#include "weft/core/parallel.h"
#include "weft/core/storage.h"
#include "weft/ops/onednn/primitives.h"

namespace weft::onednn {
namespace internal {

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

memory::data_type data_type(DType t) {
  switch (t) {
    case kFloat32:
      return memory::data_type::f32;
    case kBFloat16:
      return memory::data_type::bf16;
    case kFloat16:
      return memory::data_type::f16;
    default:
      break;
  }
  WEFT_FAIL(Internal) << "oneDNN does not compute in " << t;
  return memory::data_type::f32;
}

int use_threads(int n) {
  if (omp_get_max_threads() != n) omp_set_num_threads(n);
  return n;
}

int use_configured_threads() { return use_threads(config::num_threads()); }

dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

void run(const dnnl::primitive& prim, std::span<const Arg> args) {
  ScopedFlushDenormals flush;
  dnnl_status_t status = dnnl_primitive_execute(prim.get(), stream().get(),
                                                static_cast<int>(args.size()), args.data());
  if (status == dnnl_success) status = dnnl_stream_wait(stream().get());
  WEFT_CHECK(status == dnnl_success, Internal)
      << "oneDNN execution failed (status " << status << ")";
}

void run(const dnnl::primitive& prim, std::initializer_list<Arg> args) {
  run(prim, std::span<const Arg>(args.begin(), args.size()));
}

memory unbound(const memory::desc& md) { return memory(md, engine(), DNNL_MEMORY_NONE); }

Arg bind(int arg, const memory& m, const void* data) {
  // Given the stream, oneDNN skips making one of its own to zero the (absent) padding.
  m.set_data_handle(const_cast<void*>(data), stream());
  return {arg, m.get()};
}

LayoutArg layout_arg(int id, const memory::desc& user, const memory::desc& chosen, bool output) {
  LayoutArg a{id, unbound(user), memory(), 0, std::nullopt};
  if (user != chosen) {
    a.chosen = unbound(chosen);
    a.chosen_bytes = chosen.get_size();
    a.reorder =
        output ? dnnl::reorder(dnnl::reorder::primitive_desc(engine(), chosen, engine(), user))
               : dnnl::reorder(dnnl::reorder::primitive_desc(engine(), user, engine(), chosen));
  }
  return a;
}

Arg bind_input(const LayoutArg& a, const void* data, std::shared_ptr<Storage>& scratch) {
  if (!a.reorder) return bind(a.id, a.user, data);
  scratch = Storage::allocate(a.chosen_bytes);
  Arg arg = bind(a.id, a.chosen, scratch->data());
  run(*a.reorder, {bind(DNNL_ARG_FROM, a.user, data), {DNNL_ARG_TO, arg.memory}});
  return arg;
}

Arg bind_output(const LayoutArg& a, void* data, std::shared_ptr<Storage>& scratch) {
  if (!a.reorder) return bind(a.id, a.user, data);
  scratch = Storage::allocate(a.chosen_bytes);
  return bind(a.id, a.chosen, scratch->data());
}

void finish_output(const LayoutArg& a, const Arg& bound, void* data) {
  if (a.reorder) run(*a.reorder, {{DNNL_ARG_FROM, bound.memory}, bind(DNNL_ARG_TO, a.user, data)});
}

}  // namespace internal

using namespace internal;  // NOLINT(google-build-using-namespace): this folder's helpers

namespace {

// Whether this oneDNN build can compute in `dt` on this CPU at all (oneDNN 2.x has no float16 on
// CPU, and bfloat16 needs AVX-512): asked once, by building a 1x1 matmul.
bool can_compute(memory::data_type dt) {
  try {
    memory::desc md({1, 1}, dt, tag::ab);
    dnnl::matmul::primitive_desc(dnnl::matmul::desc(md, md, md), engine());
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

}  // namespace

bool supports(DType t) {
  static const bool bf16 = can_compute(memory::data_type::bf16);
  static const bool f16 = can_compute(memory::data_type::f16);
  return t == kFloat32 || (t == kBFloat16 && bf16) || (t == kFloat16 && f16);
}

std::string version() {
  const dnnl_version_t* v = dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

std::string cpu_isa() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41:
      return "sse41";
    case dnnl::cpu_isa::avx:
      return "avx";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case dnnl::cpu_isa::avx512_mic:
      return "avx512_mic";
    case dnnl::cpu_isa::avx512_mic_4ops:
      return "avx512_mic_4ops";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "unknown";
  }
}

bool has_amx() {
  static const bool amx = dnnl::get_effective_cpu_isa() == dnnl::cpu_isa::avx512_core_amx;
  return amx;
}

// ---- matmul ------------------------------------------------------------------------------------

namespace {

// Above this inner dimension oneDNN may split K across threads, and the partial sums then depend
// on the thread count (seen from K = 2048 with small outputs). Longer products are cut into
// fixed chunks accumulated in order, so a result never depends on how many threads ran it.
constexpr int64_t kMaxDeterministicK = 1024;

// An operand's memory object and the buffer it points at. Re-pointing it is skipped when the
// buffer is the one already bound (the weights from step to step, an output in a recycled block):
// each re-point is a call into oneDNN, whose only other work, zeroing a layout's padding, has
// nothing to do for the plain strided layouts of a matmul. Skipping it lifted the bf16 128x500x10
// product from 0.947 to 0.960 of raw oneDNN (median of six matmul_bench runs).
struct MatmulArg {
  memory mem;
  const void* at = nullptr;

  Arg bind(int arg, const void* data) {
    if (data == at) return {arg, mem.get()};
    at = data;
    return onednn::bind(arg, mem, data);
  }
};

// A tiny product can run faster on the calling thread alone than split across OpenMP threads,
// where waking a worker costs about as much as the product. Which is faster follows the kernel
// oneDNN picks, not the FLOP count (raw oneDNN, 1 thread vs 2: bf16 128x500x10 5.4 vs 6.0 us,
// bf16 64^3 1.3 vs 2.7 us, but bf16 128x10x500 15.3 vs 10.3 us and f32 128x500x10 12.1 vs 8.1
// us), so products up to kMaxTunedMacs are timed both ways on their first calls, alternately,
// and the faster is kept. The largest product 1 thread won was 2.1M multiply-adds (bf16 128^3,
// 5.1 vs 5.5 us); at 4.1M (bf16 128x500x64) 2 threads took 0.78 of the time. Not under op
// determinism, whose thread count is the configured one (the result is the same either way below
// kMaxDeterministicK, but a run's choice would be made by timing).
constexpr int64_t kMaxTunedMacs = 4'000'000;

class ThreadChoice {
 public:
  // After kWarmUp calls on the configured count, kBlocks blocks of kBlockCalls calls on each
  // side, alternately, are timed; the side with the shorter median block is kept. A product's
  // first calls run slow (8-10 us against a steady 5-6 at bf16 128x500x10), and single calls
  // alternated from the start kept the slower side in about half of 12 processes; blocks after
  // the warm-up chose one thread there in 12 of 12, and the same side in 5 of 5 at four other
  // shapes (at bf16 256x500x10, where both sides take 8.6-8.8 us, either). Each thread's cache
  // makes its own choice, so a new thread calling a small product pays these 136 calls again.
  static constexpr int kWarmUp = 64, kBlocks = 9, kBlockCalls = 4;

  // `tune`: whether to time both sides; if not, every call runs on the configured count.
  explicit ThreadChoice(bool tune) : decided_(!tune) {}

  // The thread count for the next call: 1 or `configured`.
  int next(int configured) const {
    bool one =
        decided_ ? one_thread_ : calls_ >= kWarmUp && (calls_ - kWarmUp) / kBlockCalls % 2 == 1;
    return one ? 1 : configured;
  }
  bool timing() const { return !decided_; }
  // The duration of the call next() described; after the last block, keeps the faster side.
  void record(int64_t ns) {
    int i = calls_++ - kWarmUp;
    if (i < 0) return;
    int block = i / kBlockCalls;
    ns_[block % 2][block / 2] += ns;
    if (calls_ < kWarmUp + 2 * kBlocks * kBlockCalls) return;
    for (auto& t : ns_) std::nth_element(t.begin(), t.begin() + kBlocks / 2, t.end());
    one_thread_ = ns_[1][kBlocks / 2] < ns_[0][kBlocks / 2];
    decided_ = true;
  }

 private:
  bool decided_, one_thread_ = false;
  int calls_ = 0;
  std::array<std::array<int64_t, kBlocks>, 2> ns_{};  // [0]: configured threads, [1]: one
};

// oneDNN's gemm kernels (its jit sgemm: every float32 product on an AVX2-only CPU, and shapes or
// strides its brgemm kernels refuse elsewhere) give bits that depend on how they cut the output
// between threads: the no-copy kernels treat the edges of a thread's part differently, and short
// outputs are also split along K. On a Zen 3 (oneDNN 2.6.3) a 128x784x700 product differs in
// 1 261 of 89 600 values between 1 and 3 threads, 64x768x32 in 113 of 2 048 between 1 and 2. Such
// a product is cut by weft instead, into blocks of the output fixed by its shape alone, each run
// on one thread: the thread count then decides only which thread computes a block, never its bits.
// (The brgemm kernels of AVX-512 and AMX CPUs cut only M and N below kMaxDeterministicK, which
// leaves every output element's sum as it was; they keep oneDNN's own threading. So do oneDNN's
// copy-based gemm kernels, which it takes for a large unbatched output, see gemm_copy_path.)
struct MatmulBlocks {
  size_t axis = 0;     // the output axis cut: a batch axis, the rows or the columns
  int64_t length = 0;  // of a block along it (the last may be shorter)
  int64_t count = 1;
};

// Blocks of at least kMinBlockMacs multiply-adds (a call costs 1-2 us, a 256K block 10-20 us on
// one core) and at least kMinBlockLength rows or columns (thinner ones leave oneDNN's copy-based
// kernels for slower no-copy ones), at most kMaxBlocks of them, rows and columns in multiples of
// 16 (the kernels' unroll). Of the axes, the one that gives the most blocks is cut.
constexpr int64_t kMinBlockMacs = int64_t{1} << 18, kMinBlockLength = 64, kMaxBlocks = 64;

MatmulBlocks plan_blocks(const MatmulOperand& c, int64_t macs) {
  const size_t r = c.dims.size();
  const int64_t most = std::clamp<int64_t>(macs / kMinBlockMacs, 1, kMaxBlocks);
  MatmulBlocks best{r - 2, c.dims[r - 2], 1};
  auto consider = [&](size_t axis, int64_t granule, int64_t min_length) {
    int64_t len = c.dims[axis], n = std::min(most, len / min_length);
    if (n <= best.count) return;
    int64_t length = (len + n - 1) / n;
    length = (length + granule - 1) / granule * granule;
    int64_t count = (len + length - 1) / length;
    if (count > best.count) best = {axis, length, count};
  };
  for (size_t axis = 0; axis + 2 < r; ++axis) consider(axis, 1, 1);
  consider(r - 2, 16, kMinBlockLength);
  consider(r - 1, 16, kMinBlockLength);
  return best;
}

// Whether oneDNN 2.6 runs this gemm on its copy-based kernels whatever the thread count: one
// output matrix (no batch) with 1/M + 1/N below its threshold of 0.0038 (gemm_driver.cpp,
// nocopy_checker_avx2; taken with a margin) and an inner dimension no thread count up to 32 calls
// small. Those pack both operands and cut only M and N, and their bits then do not depend on the
// thread count (measured on a Zen 3 at 1-4 threads over 10 shapes from 600^3 to 3000x200x800),
// while weft's one-thread blocks of such a product ran 1.9 times as long as oneDNN's two threads
// (1024^3): it keeps oneDNN's threading.
bool gemm_copy_path(const MatmulOperand& a, const MatmulOperand& c) {
  const size_t r = c.dims.size();
  int64_t batch = 1;
  for (size_t i = 0; i + 2 < r; ++i) batch *= c.dims[i];
  double m = static_cast<double>(c.dims[r - 2]), n = static_cast<double>(c.dims[r - 1]);
  return batch == 1 && 1.0 / m + 1.0 / n < 0.0035 && a.dims[r - 1] >= 64;
}

// `op` restricted to [start, start + len) along `axis`, unless it broadcasts there (size 1).
MatmulOperand block_of(const MatmulOperand& op, size_t axis, int64_t start, int64_t len,
                       int64_t elem) {
  MatmulOperand s = op;
  if (op.dims[axis] == 1) return s;
  s.dims[axis] = len;
  s.data = static_cast<char*>(op.data) + start * op.strides[axis] * elem;
  return s;
}

struct MatmulPrimitive {
  dnnl::matmul prim;
  MatmulArg a, b, c;    // kept: making descriptors on every call costs more than a small product
  ThreadChoice choice;  // tunes only a small product's entry for a configured count above 1
  MatmulPrimitive* single = nullptr;   // the one-thread entry, once made (map nodes do not move)
  std::optional<MatmulBlocks> blocks;  // where oneDNN runs it on its gemm kernels: weft's cut
};

// c (+)= a @ b for one chunk of K; `accumulate` adds to c (oneDNN's sum post-op). a and b have
// `dtype`, c has `c_dtype`.
// The operand's strides with each size-1 dim's (broadcast, weft gives 0) replaced by the dense
// one: it addresses nothing, but with 0 oneDNN 2.6 takes the operand for a non-plain layout and
// runs its reference kernel (a Dense on (batch, steps, features) took 680 ms instead of 0.1 ms).
memory::dims plain_strides(const MatmulOperand& op) {
  memory::dims strides = dims_of(op.strides);
  const size_t r = strides.size();
  int64_t dense = std::max(op.dims[r - 1] * strides[r - 1], op.dims[r - 2] * strides[r - 2]);
  for (size_t i = r - 2; i-- > 0;) {
    if (op.dims[i] == 1) strides[i] = dense;
    dense = std::max(dense, op.dims[i] * strides[i]);
  }
  return strides;
}

// This thread's matmul primitives. A function of its own, not a thread_local of matmul_chunk: the
// team's threads that run blocks use theirs from a lambda, and a function's thread_local is made
// only on a thread that passes its declaration.
Cache<MatmulPrimitive>& matmul_cache() {
  thread_local Cache<MatmulPrimitive> cache;
  return cache;
}

void matmul_chunk(DType dtype, DType c_dtype, const MatmulOperand& a, const MatmulOperand& b,
                  const MatmulOperand& c, bool accumulate) {
  // The entry for these operands' geometry under `threads` (made under that OpenMP thread count,
  // which must also be current when it runs).
  auto entry = [&](const MatmulOperand& a, const MatmulOperand& b, const MatmulOperand& c,
                   int threads) -> MatmulPrimitive& {
    Key key{static_cast<int64_t>(dtype), static_cast<int64_t>(c_dtype), threads, accumulate};
    for (const MatmulOperand* op : {&a, &b, &c}) {
      key.push_back(static_cast<int64_t>(op->dims.size()));
      key.append(op->dims.begin(), op->dims.end());
      key.append(op->strides.begin(), op->strides.end());
    }
    auto md = [&](const MatmulOperand& op) {
      return memory::desc(dims_of(op.dims), data_type(&op == &c ? c_dtype : dtype),
                          plain_strides(op));
    };
    return matmul_cache().get(key, [&] {
      use_threads(threads);
      int64_t macs = a.dims[a.dims.size() - 1];
      for (int64_t d : c.dims) macs *= d;
      dnnl::primitive_attr attr;
      if (accumulate) {
        dnnl::post_ops ops;
        ops.append_sum(1.0f);
        attr.set_post_ops(ops);
      }
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(md(a), md(b), md(c)), attr, engine());
      std::optional<MatmulBlocks> blocks;
      if (std::string_view(pd.impl_info_str()).starts_with("gemm") && !gemm_copy_path(a, c)) {
        blocks = plan_blocks(c, macs);
      }
      bool parallel = blocks ? blocks->count > 1 : true;
      return MatmulPrimitive{dnnl::matmul(pd),
                             {unbound(md(a))},
                             {unbound(md(b))},
                             {unbound(md(c))},
                             ThreadChoice(parallel && threads > 1 && macs <= kMaxTunedMacs),
                             nullptr,
                             blocks};
    });
  };
  auto execute = [&](MatmulPrimitive& m, const MatmulOperand& a, const MatmulOperand& b,
                     const MatmulOperand& c) {
    run(m.prim, {m.a.bind(DNNL_ARG_SRC, a.data), m.b.bind(DNNL_ARG_WEIGHTS, b.data),
                 m.c.bind(DNNL_ARG_DST, c.data)});
  };
  int configured = config::num_threads();
  MatmulPrimitive& m = entry(a, b, c, configured);
  bool tune = !config::op_determinism_enabled();
  int threads = tune ? m.choice.next(configured) : configured;
  bool timing = tune && m.choice.timing();
  auto start = timing ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
  if (m.blocks) {
    // Each block on one thread (its own cache entry), in parallel where there are several.
    const MatmulBlocks p = *m.blocks;
    const int64_t elem = dtype_size(dtype), c_elem = dtype_size(c_dtype);
    auto run_blocks = [&](int64_t begin, int64_t end) {
      use_threads(1);
      for (int64_t i = begin; i < end; ++i) {
        int64_t from = i * p.length, len = std::min(p.length, c.dims[p.axis] - from);
        // Rows cut a and c, columns b and c, a batch axis all three.
        const size_t r = c.dims.size();
        MatmulOperand ab = p.axis == r - 1 ? a : block_of(a, p.axis, from, len, elem);
        MatmulOperand bb = p.axis == r - 2 ? b : block_of(b, p.axis, from, len, elem);
        MatmulOperand cb = block_of(c, p.axis, from, len, c_elem);
        execute(entry(ab, bb, cb, 1), ab, bb, cb);
      }
    };
    if (threads > 1 && p.count > 1) {
      parallel_for(p.count, 1, run_blocks);
    } else {
      run_blocks(0, p.count);
    }
  } else {
    if (threads != configured && m.single == nullptr) m.single = &entry(a, b, c, 1);
    use_threads(threads);
    execute(threads != configured ? *m.single : m, a, b, c);
  }
  if (timing) {
    m.choice.record(std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now() - start)
                        .count());
  }
}

// dst (a half dtype) = src (float32, dst's dims and strides), rounded to nearest even.
void round_to_half(DType dtype, const std::vector<float>& src, const MatmulOperand& dst) {
  auto round = [&]<typename T>() {
    T* out = static_cast<T*>(dst.data);
    for (size_t i = 0; i < src.size(); ++i) out[i] = T(src[i]);
  };
  if (dtype == kBFloat16) {
    round.operator()<bfloat16>();
  } else {
    round.operator()<float16>();
  }
}

}  // namespace

void matmul(DType dtype, const MatmulOperand& a, const MatmulOperand& b, const MatmulOperand& c) {
  size_t r = a.dims.size();
  int64_t k = a.dims[r - 1];
  if (k <= kMaxDeterministicK) {
    matmul_chunk(dtype, dtype, a, b, c, false);
    return;
  }
  // Half-type chunks accumulate in a float32 buffer, rounded once at the end: a half destination
  // would round after every chunk, and oneDNN 2.6 runs a half sum post-op on a slow generic GEMM.
  bool half = dtype == kBFloat16 || dtype == kFloat16;
  int64_t numel = 1;
  for (int64_t d : c.dims) numel *= d;
  std::vector<float> acc_buffer(half ? numel : 0);
  MatmulOperand acc = c;
  if (half) {
    // weft's matmul writes a fresh contiguous tensor; the buffer takes its strides.
    int64_t stride = 1;
    for (size_t i = r; i-- > 0;) {
      WEFT_ASSERT(c.dims[i] == 1 || c.strides[i] == stride) << "matmul output is not contiguous";
      stride *= c.dims[i];
    }
    acc.data = acc_buffer.data();
  }
  int64_t elem = dtype_size(dtype);
  for (int64_t start = 0; start < k; start += kMaxDeterministicK) {
    int64_t len = std::min(kMaxDeterministicK, k - start);
    MatmulOperand ac = a, bc = b;
    ac.dims[r - 1] = len;
    bc.dims[r - 2] = len;
    ac.data = static_cast<char*>(a.data) + start * a.strides[r - 1] * elem;
    bc.data = static_cast<char*>(b.data) + start * b.strides[r - 2] * elem;
    matmul_chunk(dtype, half ? kFloat32 : dtype, ac, bc, acc, start > 0);
  }
  if (half) round_to_half(dtype, acc_buffer, c);
}

// ---- convolution -------------------------------------------------------------------------------

namespace {

// Padding after the input that makes the output size come out. VALID windows may leave input
// rows unused; that is no padding (0), and oneDNN's floor division gives the same output size.
int64_t pad_after(int64_t in, int64_t out, int64_t stride, int64_t window, int64_t before) {
  return std::max<int64_t>(0, (out - 1) * stride + window - in - before);
}

// weft's layouts (NHWC activations, HWIO filters) and the primitive's geometry. Filters are given
// to oneDNN as format_tag::any: with plain HWIO filters oneDNN 2.6 falls back to im2col + GEMM,
// while with filters in its own blocked layout it runs its direct JIT kernels on NHWC activations.
// Activations stay NHWC: a layout of oneDNN's choosing costs reorders that use up what the kernels
// gain (figures in docs/benchmarks.md).
struct ConvGeometry {
  memory::desc src, weights, dst;  // weft's layouts
  memory::desc any_weights;
  memory::dims strides, dilates, pad_l, pad_r;
};

// The spatial sizes {d, h, w} of a 3-D problem, {h, w} of a 2-D one.
memory::dims spatial(int spatial_dims, int64_t d, int64_t h, int64_t w) {
  return spatial_dims == 3 ? memory::dims{d, h, w} : memory::dims{h, w};
}

ConvGeometry conv_geometry(DType dtype, const ops::internal::ConvParams& p) {
  auto dt = data_type(dtype);
  const int sd = p.spatial_dims;
  auto join = [](memory::dims head, const memory::dims& tail) {
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
  };
  ConvGeometry g;
  memory::dims src = join({p.n, p.c}, spatial(sd, p.d, p.h, p.w));
  memory::dims weights = join({p.oc, p.c}, spatial(sd, p.kd, p.kh, p.kw));
  memory::dims dst = join({p.n, p.oc}, spatial(sd, p.od, p.oh, p.ow));
  g.src = memory::desc(src, dt, sd == 3 ? tag::ndhwc : tag::nhwc);
  g.weights = memory::desc(weights, dt, sd == 3 ? tag::dhwio : tag::hwio);
  if (p.groups > 1) {  // weft's (kh, kw, c / groups, oc) is oneDNN's hwigo (dhwigo in 3-D)
    weights = join({p.groups, p.oc / p.groups, p.c / p.groups}, spatial(sd, p.kd, p.kh, p.kw));
    g.weights = memory::desc(weights, dt, sd == 3 ? tag::dhwigo : tag::hwigo);
  }
  g.dst = memory::desc(dst, dt, sd == 3 ? tag::ndhwc : tag::nhwc);
  g.any_weights = memory::desc(weights, dt, tag::any);
  g.strides = spatial(sd, p.stride_d, p.stride_h, p.stride_w);
  // oneDNN counts the gaps
  g.dilates = spatial(sd, p.dilation_d - 1, p.dilation_h - 1, p.dilation_w - 1);
  g.pad_l = spatial(sd, p.pad_front, p.pad_top, p.pad_left);
  g.pad_r =
      spatial(sd, pad_after(p.d, p.od, p.stride_d, (p.kd - 1) * p.dilation_d + 1, p.pad_front),
              pad_after(p.h, p.oh, p.stride_h, (p.kh - 1) * p.dilation_h + 1, p.pad_top),
              pad_after(p.w, p.ow, p.stride_w, (p.kw - 1) * p.dilation_w + 1, p.pad_left));
  return g;
}

Key conv_key(int kind, DType dtype, const ops::internal::ConvParams& p, int threads) {
  return {kind,         static_cast<int64_t>(dtype),
          threads,      p.n,
          p.h,          p.w,
          p.c,          p.kh,
          p.kw,         p.oc,
          p.oh,         p.ow,
          p.stride_h,   p.stride_w,
          p.dilation_h, p.dilation_w,
          p.pad_top,    p.pad_left,
          p.groups,     p.spatial_dims,
          p.d,          p.kd,
          p.od,         p.stride_d,
          p.dilation_d, p.pad_front};
}

dnnl::convolution_forward::primitive_desc conv_forward_pd(const ConvGeometry& g) {
  dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_training,
                                       dnnl::algorithm::convolution_direct, g.src, g.any_weights,
                                       g.dst, g.strides, g.dilates, g.pad_l, g.pad_r);
  return dnnl::convolution_forward::primitive_desc(desc, engine());
}

// A convolution primitive and its two inputs and output, all made once per shape.
struct ConvPrimitive {
  dnnl::primitive prim;
  std::array<LayoutArg, 3> args;  // inputs, then the output
};

ConvPrimitive conv_primitive(dnnl::primitive prim, int in0, const memory::desc& user0,
                             const memory::desc& chosen0, int in1, const memory::desc& user1,
                             const memory::desc& chosen1, int out, const memory::desc& user_out,
                             const memory::desc& chosen_out) {
  return {std::move(prim),
          {layout_arg(in0, user0, chosen0, false), layout_arg(in1, user1, chosen1, false),
           layout_arg(out, user_out, chosen_out, true)}};
}

// Runs a convolution on weft's buffers (two inputs, then the output): inputs are reordered into
// the primitive's layouts, the output is computed in its layout and reordered back.
void run_conv(const ConvPrimitive& c, const void* in0, const void* in1, void* out) {
  std::array<std::shared_ptr<Storage>, 3> scratch;
  std::array<Arg, 3> args{bind_input(c.args[0], in0, scratch[0]),
                          bind_input(c.args[1], in1, scratch[1]),
                          bind_output(c.args[2], out, scratch[2])};
  run(c.prim, args);
  finish_output(c.args[2], args[2], out);
}

}  // namespace

void conv_forward(DType dtype, const ops::internal::ConvParams& p, const void* x, const void* w,
                  void* y) {
  thread_local Cache<ConvPrimitive> cache;
  const auto& c = cache.get(conv_key(0, dtype, p, use_configured_threads()), [&] {
    ConvGeometry g = conv_geometry(dtype, p);
    auto pd = conv_forward_pd(g);
    return conv_primitive(dnnl::convolution_forward(pd), DNNL_ARG_SRC, g.src, pd.src_desc(),
                          DNNL_ARG_WEIGHTS, g.weights, pd.weights_desc(), DNNL_ARG_DST, g.dst,
                          pd.dst_desc());
  });
  run_conv(c, x, w, y);
}

void conv_backward_input(DType dtype, const ops::internal::ConvParams& p, const void* dy,
                         const void* w, void* dx) {
  thread_local Cache<ConvPrimitive> cache;
  const auto& c = cache.get(conv_key(1, dtype, p, use_configured_threads()), [&] {
    ConvGeometry g = conv_geometry(dtype, p);
    dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct, g.src,
                                               g.any_weights, g.dst, g.strides, g.dilates, g.pad_l,
                                               g.pad_r);
    dnnl::convolution_backward_data::primitive_desc pd(desc, engine(), conv_forward_pd(g));
    return conv_primitive(dnnl::convolution_backward_data(pd), DNNL_ARG_DIFF_DST, g.dst,
                          pd.diff_dst_desc(), DNNL_ARG_WEIGHTS, g.weights, pd.weights_desc(),
                          DNNL_ARG_DIFF_SRC, g.src, pd.diff_src_desc());
  });
  run_conv(c, dy, w, dx);
}

void conv_backward_filter(DType dtype, const ops::internal::ConvParams& p, const void* x,
                          const void* dy, void* dw) {
  thread_local Cache<ConvPrimitive> cache;
  // The filter gradient sums over the batch, which oneDNN splits across threads and adds back in
  // an order that follows the thread count; under op determinism it runs on one thread.
  int threads = config::op_determinism_enabled() ? use_threads(1) : use_configured_threads();
  const auto& c = cache.get(conv_key(2, dtype, p, threads), [&] {
    ConvGeometry g = conv_geometry(dtype, p);
    dnnl::convolution_backward_weights::desc desc(dnnl::algorithm::convolution_direct, g.src,
                                                  g.any_weights, g.dst, g.strides, g.dilates,
                                                  g.pad_l, g.pad_r);
    dnnl::convolution_backward_weights::primitive_desc pd(desc, engine(), conv_forward_pd(g));
    return conv_primitive(dnnl::convolution_backward_weights(pd), DNNL_ARG_SRC, g.src,
                          pd.src_desc(), DNNL_ARG_DIFF_DST, g.dst, pd.diff_dst_desc(),
                          DNNL_ARG_DIFF_WEIGHTS, g.weights, pd.diff_weights_desc());
  });
  run_conv(c, x, dy, dw);
}

// ---- pooling -----------------------------------------------------------------------------------

namespace {

struct PoolEntry {
  dnnl::pooling_forward forward;
  dnnl::pooling_backward backward;
  memory src, dst;
};

const PoolEntry& pool_entry(DType dtype, const ops::internal::PoolParams& p, dnnl::algorithm alg) {
  thread_local Cache<PoolEntry> cache;
  int threads = use_configured_threads();
  Key key = {static_cast<int64_t>(alg),
             static_cast<int64_t>(dtype),
             threads,
             p.n,
             p.h,
             p.w,
             p.c,
             p.kh,
             p.kw,
             p.oh,
             p.ow,
             p.stride_h,
             p.stride_w,
             p.pad_top,
             p.pad_left,
             p.spatial_dims,
             p.d,
             p.kd,
             p.od,
             p.stride_d,
             p.pad_front};
  return cache.get(key, [&] {
    auto dt = data_type(dtype);
    const int sd = p.spatial_dims;
    memory::dims src_dims = spatial(sd, p.d, p.h, p.w), dst_dims = spatial(sd, p.od, p.oh, p.ow);
    src_dims.insert(src_dims.begin(), {p.n, p.c});
    dst_dims.insert(dst_dims.begin(), {p.n, p.c});
    memory::desc src(src_dims, dt, sd == 3 ? tag::ndhwc : tag::nhwc);
    memory::desc dst(dst_dims, dt, sd == 3 ? tag::ndhwc : tag::nhwc);
    memory::dims strides = spatial(sd, p.stride_d, p.stride_h, p.stride_w);
    memory::dims kernel = spatial(sd, p.kd, p.kh, p.kw);
    memory::dims pad_l = spatial(sd, p.pad_front, p.pad_top, p.pad_left);
    memory::dims pad_r = spatial(sd, pad_after(p.d, p.od, p.stride_d, p.kd, p.pad_front),
                                 pad_after(p.h, p.oh, p.stride_h, p.kh, p.pad_top),
                                 pad_after(p.w, p.ow, p.stride_w, p.kw, p.pad_left));
    dnnl::pooling_forward::desc fdesc(dnnl::prop_kind::forward_training, alg, src, dst, strides,
                                      kernel, pad_l, pad_r);
    dnnl::pooling_forward::primitive_desc fpd(fdesc, engine());
    dnnl::pooling_backward::desc bdesc(alg, src, dst, strides, kernel, pad_l, pad_r);
    dnnl::pooling_backward::primitive_desc bpd(bdesc, engine(), fpd);
    return PoolEntry{dnnl::pooling_forward(fpd), dnnl::pooling_backward(bpd), unbound(src),
                     unbound(dst)};
  });
}

}  // namespace

void avg_pool_forward(DType dtype, const ops::internal::PoolParams& p, const void* x, void* y) {
  const PoolEntry& e = pool_entry(dtype, p, dnnl::algorithm::pooling_avg_exclude_padding);
  run(e.forward, {bind(DNNL_ARG_SRC, e.src, x), bind(DNNL_ARG_DST, e.dst, y)});
}

void avg_pool_backward(DType dtype, const ops::internal::PoolParams& p, const void* dy, void* dx) {
  const PoolEntry& e = pool_entry(dtype, p, dnnl::algorithm::pooling_avg_exclude_padding);
  run(e.backward, {bind(DNNL_ARG_DIFF_DST, e.dst, dy), bind(DNNL_ARG_DIFF_SRC, e.src, dx)});
}

// ---- softmax -----------------------------------------------------------------------------------

namespace {

struct SoftmaxEntry {
  dnnl::softmax_forward forward;
  dnnl::softmax_backward backward;
  memory x, y, dy, dx;
};

const SoftmaxEntry& softmax_entry(DType dtype, int64_t rows, int64_t cols) {
  thread_local Cache<SoftmaxEntry> cache;
  int threads = use_configured_threads();
  return cache.get({static_cast<int64_t>(dtype), threads, rows, cols}, [&] {
    memory::desc md({rows, cols}, data_type(dtype), tag::ab);
    dnnl::softmax_forward::primitive_desc fpd(
        dnnl::softmax_forward::desc(dnnl::prop_kind::forward_training, md, 1), engine());
    dnnl::softmax_backward::primitive_desc bpd(dnnl::softmax_backward::desc(md, md, 1), engine(),
                                               fpd);
    return SoftmaxEntry{dnnl::softmax_forward(fpd),
                        dnnl::softmax_backward(bpd),
                        unbound(md),
                        unbound(md),
                        unbound(md),
                        unbound(md)};
  });
}

}  // namespace

void softmax_forward(DType dtype, int64_t rows, int64_t cols, const void* x, void* y) {
  const SoftmaxEntry& e = softmax_entry(dtype, rows, cols);
  run(e.forward, {bind(DNNL_ARG_SRC, e.x, x), bind(DNNL_ARG_DST, e.y, y)});
}

void softmax_backward(DType dtype, int64_t rows, int64_t cols, const void* y, const void* dy,
                      void* dx) {
  const SoftmaxEntry& e = softmax_entry(dtype, rows, cols);
  run(e.backward, {bind(DNNL_ARG_DST, e.y, y), bind(DNNL_ARG_DIFF_DST, e.dy, dy),
                   bind(DNNL_ARG_DIFF_SRC, e.dx, dx)});
}

}  // namespace weft::onednn
