// DTensor training steps at the tutorial's shapes (seed 002: batch 128, 784 -> 700 -> 500 -> 10,
// ReLU, sparse softmax cross-entropy, Keras Adam on DVariables), one process:
//   1-2. tensor-parallel (Megatron's cut: the first kernel's columns and the second's rows over
//        {"model": n}) against data-parallel ({"batch": n}, replicated weights) on n = 2 and 4
//        logical devices, in examples/s (issue 44: reported);
//   3.   data-parallel on 4 logical devices against the same step without DTensors: what cutting
//        the step into components costs on one machine, whose cores the components share
//        (they run one after another on the calling thread, each with the whole thread budget).
//   4-5. where a DTensor op's components run: on per-device threads (one thread per device, each
//        with its share of the thread budget, as MirroredStrategy's replicas; one dispatch per
//        op, as an eager SPMD op would make) against one after another on the calling thread
//        (each with the whole budget), for the tutorial MLP's forward pass data-parallel on
//        {"batch": 8} and tensor-parallel on {"model": 4}: the components' own kernels, at
//        their shapes, without the tape (issue 44: "whichever measures faster"); and with one
//        dispatch for the whole pass, a bound eager ops cannot reach.
// Then, for each run, the bytes its moves carry per step (dtensor's traffic count: ring
// collectives on separate devices) against the analytic count: data-parallel 2(n - 1) x the
// parameters' bytes (the gradients' all-reduce), tensor-parallel 2(n - 1) x the [128, 500]
// activations (Megatron's one all-reduce per pair of layers, forward).
#include <cstdio>
#include <optional>

#include "ratio.h"
#include "weft/distribute/internal/replica_group.h"
#include "weft/dtensor/internal/parts.h"
#include "weft/weft.h"

namespace {

namespace dtensor = weft::dtensor;
constexpr int64_t kBatch = 128;
const std::vector<weft::Shape> kShapes{{784, 700}, {700}, {700, 500}, {500}, {500, 10}, {10}};

struct Step {
  std::vector<weft::Variable> vars;
  weft::Tensor x, y;
  std::optional<weft::optim::Adam> adam;

  // data-parallel on {"batch": n}, tensor-parallel on {"model": n}, or n = 0: no DTensors.
  Step(bool tensor_parallel, int n) {
    weft::config::set_logical_cpu_devices(std::max(n, 1));
    weft::Tensor images = weft::stateless_random_uniform({kBatch, 784}, {1, 2});
    weft::Tensor labels =
        weft::cast(weft::mul(weft::stateless_random_uniform({kBatch}, {3, 4}), 9.99), weft::kInt64);
    const std::string u = dtensor::kUnsharded;
    std::optional<dtensor::Mesh> mesh;
    if (n > 0) mesh = dtensor::create_mesh({{tensor_parallel ? "model" : "batch", n}});
    const std::vector<std::vector<std::string>> specs =
        tensor_parallel
            ? std::vector<std::vector<std::string>>{{u, "model"}, {"model"}, {"model", u},
                                                    {u},          {u, u},    {u}}
            : std::vector<std::vector<std::string>>{{u, u}, {u}, {u, u}, {u}, {u, u}, {u}};
    for (size_t i = 0; i < kShapes.size(); ++i) {
      weft::Tensor init =
          weft::stateless_random_uniform(kShapes[i], {5, static_cast<int64_t>(i)}, -0.05, 0.05);
      if (mesh) {
        vars.push_back(
            dtensor::DVariable(dtensor::copy_to_mesh(init, dtensor::Layout(specs[i], *mesh))));
      } else {
        vars.emplace_back(init);
      }
    }
    const std::string batch = tensor_parallel ? u : "batch";
    x = mesh ? dtensor::copy_to_mesh(images, dtensor::Layout({batch, u}, *mesh)) : images;
    y = mesh ? dtensor::copy_to_mesh(labels, dtensor::Layout({batch}, *mesh)) : labels;
    adam.emplace(weft::optim::AdamOptions{.learning_rate = 0.001});
  }

  void run() {
    weft::GradientTape tape;
    weft::Tensor h = weft::relu(weft::add(weft::matmul(x, vars[0]), vars[1]));
    h = weft::relu(weft::add(weft::matmul(h, vars[2]), vars[3]));
    weft::Tensor logits = weft::add(weft::matmul(h, vars[4]), vars[5]);
    weft::Tensor loss = weft::mean(weft::sparse_softmax_cross_entropy_with_logits(y, logits));
    std::vector<weft::Tensor> grads = tape.gradient(loss, vars);
    weft::optim::GradsAndVars gv;
    for (size_t i = 0; i < vars.size(); ++i) gv.emplace_back(grads[i], vars[i]);
    adam->apply_gradients(gv);
  }
};

void train_step(benchmark::State& state, bool tensor_parallel, int n) {
  const int previous = weft::config::logical_cpu_devices();
  Step step(tensor_parallel, n);
  step.run();  // slots made
  for (auto _ : state) step.run();
  weft::config::set_logical_cpu_devices(previous);
}

void dp_2(benchmark::State& s) { train_step(s, false, 2); }
void tp_2(benchmark::State& s) { train_step(s, true, 2); }
void dp_4(benchmark::State& s) { train_step(s, false, 4); }
void tp_4(benchmark::State& s) { train_step(s, true, 4); }
void no_mesh(benchmark::State& s) { train_step(s, false, 0); }
BENCHMARK(dp_2)->UseRealTime()->MinTime(0.5);
BENCHMARK(tp_2)->UseRealTime()->MinTime(0.5);
BENCHMARK(dp_4)->UseRealTime()->MinTime(0.5);
BENCHMARK(tp_4)->UseRealTime()->MinTime(0.5);
BENCHMARK(no_mesh)->UseRealTime()->MinTime(0.5);

// The forward pass of one component per device: device d's rows of x (data-parallel) or its
// columns of the first kernel and rows of the second (tensor-parallel, whose partial logits a
// move would then sum).
struct Components {
  std::vector<weft::Tensor> x;
  std::vector<std::vector<weft::Tensor>> w;  // [device][variable]
  std::vector<weft::Tensor> h;               // each device's activations between ops

  Components(bool tensor_parallel, int n) {
    const int64_t rows = tensor_parallel ? kBatch : kBatch / n;
    for (int d = 0; d < n; ++d) {
      x.push_back(weft::stateless_random_uniform({rows, 784}, {1, d}));
      std::vector<weft::Shape> shapes = kShapes;
      if (tensor_parallel) shapes = {{784, 700 / n}, {700 / n}, {700 / n, 500}, {500}};
      std::vector<weft::Tensor> vars;
      for (size_t i = 0; i < shapes.size(); ++i) {
        vars.push_back(weft::stateless_random_uniform(shapes[i], {5, static_cast<int64_t>(i)}));
      }
      w.push_back(std::move(vars));
    }
    h.resize(static_cast<size_t>(n));
  }
  int size() const { return static_cast<int>(x.size()); }
  // The forward pass as a list of ops, each run on every device before the next.
  std::vector<std::function<void(int)>> ops() {
    std::vector<std::function<void(int)>> list;
    list.push_back([this](int d) { h[d] = weft::matmul(x[d], w[d][0]); });
    for (size_t layer = 0; layer < w[0].size() / 2; ++layer) {
      if (layer > 0) {
        list.push_back([this, layer](int d) { h[d] = weft::matmul(h[d], w[d][2 * layer]); });
      }
      list.push_back([this, layer](int d) { h[d] = weft::add(h[d], w[d][2 * layer + 1]); });
      if (2 * layer + 2 < w[0].size()) list.push_back([this](int d) { h[d] = weft::relu(h[d]); });
    }
    return list;
  }
};

void components_calling_thread(benchmark::State& state, bool tensor_parallel, int n) {
  weft::autodiff::NoRecordScope no_tape;
  Components c(tensor_parallel, n);
  const auto ops = c.ops();
  for (auto _ : state) {
    for (const auto& op : ops) {
      for (int d = 0; d < c.size(); ++d) op(d);
    }
  }
}

// `whole_pass`: one dispatch for the whole forward pass, which eager ops cannot make (a bound).
void components_device_threads(benchmark::State& state, bool tensor_parallel, int n,
                               bool whole_pass) {
  Components c(tensor_parallel, n);
  const auto ops = c.ops();
  weft::distribute::internal::ReplicaGroup devices(n, weft::config::hardware_threads());
  for (auto _ : state) {
    if (whole_pass) {
      devices.run([&](int d) {
        weft::autodiff::NoRecordScope no_tape;
        for (const auto& op : ops) op(d);
      });
      continue;
    }
    for (const auto& op : ops) {
      devices.run([&](int d) {
        weft::autodiff::NoRecordScope no_tape;
        op(d);
      });
    }
  }
}

void dp_8_calling(benchmark::State& s) { components_calling_thread(s, false, 8); }
void dp_8_threads(benchmark::State& s) { components_device_threads(s, false, 8, false); }
void dp_8_threads_pass(benchmark::State& s) { components_device_threads(s, false, 8, true); }
void tp_4_calling(benchmark::State& s) { components_calling_thread(s, true, 4); }
void tp_4_threads(benchmark::State& s) { components_device_threads(s, true, 4, false); }
void tp_4_threads_pass(benchmark::State& s) { components_device_threads(s, true, 4, true); }
BENCHMARK(dp_8_calling)->UseRealTime()->MinTime(0.5);
BENCHMARK(dp_8_threads)->UseRealTime()->MinTime(0.5);
BENCHMARK(tp_4_calling)->UseRealTime()->MinTime(0.5);
BENCHMARK(tp_4_threads)->UseRealTime()->MinTime(0.5);
BENCHMARK(dp_8_threads_pass)->UseRealTime()->MinTime(0.5);
BENCHMARK(tp_4_threads_pass)->UseRealTime()->MinTime(0.5);

// The bytes one step's moves carry, against the analytic count.
void print_traffic(bool tensor_parallel, int n) {
  Step step(tensor_parallel, n);
  step.run();
  const auto before = dtensor::internal::traffic();
  step.run();
  const auto after = dtensor::internal::traffic();
  double params = 0;
  for (const weft::Shape& s : kShapes) params += static_cast<double>(weft::num_elements(s));
  const double analytic = 2.0 * (n - 1) * 4 * (tensor_parallel ? kBatch * 500 : params);
  const double measured = static_cast<double>(after.bytes - before.bytes);
  std::printf(
      "%s on %d devices, bytes per step: measured %.0f in %lld collectives, analytic %.0f, ratio "
      "%.3f\n",
      tensor_parallel ? "tensor-parallel" : "data-parallel", n, measured,
      static_cast<long long>(after.collectives - before.collectives), analytic,
      measured / analytic);
}

}  // namespace

int main(int argc, char** argv) {
  const int previous = weft::config::logical_cpu_devices();
  for (int n : {2, 4}) {
    print_traffic(false, n);
    print_traffic(true, n);
  }
  weft::config::set_logical_cpu_devices(previous);
  const double batch = kBatch;
  return weft::bench::run(
      argc, argv,
      {{"DTensor MLP step, tensor- vs data-parallel on 2 devices (examples/s)",
        "tp_2/min_time:0.500/real_time", "dp_2/min_time:0.500/real_time", batch, batch, "report"},
       {"DTensor MLP step, tensor- vs data-parallel on 4 devices (examples/s)",
        "tp_4/min_time:0.500/real_time", "dp_4/min_time:0.500/real_time", batch, batch, "report"},
       {"DTensor MLP step, data-parallel on 4 devices vs no mesh (examples/s)",
        "dp_4/min_time:0.500/real_time", "no_mesh/min_time:0.500/real_time", batch, batch,
        "report"},
       {"DTensor components on per-device threads vs the calling thread, data-parallel on 8",
        "dp_8_threads/min_time:0.500/real_time", "dp_8_calling/min_time:0.500/real_time", batch,
        batch, "report"},
       {"DTensor components on per-device threads vs the calling thread, tensor-parallel on 4",
        "tp_4_threads/min_time:0.500/real_time", "tp_4_calling/min_time:0.500/real_time", batch,
        batch, "report"},
       {"the same, one dispatch per forward pass (a bound), data-parallel on 8",
        "dp_8_threads_pass/min_time:0.500/real_time", "dp_8_calling/min_time:0.500/real_time",
        batch, batch, "report"},
       {"the same, one dispatch per forward pass (a bound), tensor-parallel on 4",
        "tp_4_threads_pass/min_time:0.500/real_time", "tp_4_calling/min_time:0.500/real_time",
        batch, batch, "report"}},
      /*repetitions=*/5);
}
