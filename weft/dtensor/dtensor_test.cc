// DTensors in one process, and across 2 processes when CTest runs these under `weft launch -n 2`
// (DTensorValuesAcross2Clients; weft/testing/dtensor_clients.h): pack/unpack, relayout between
// every pair of layouts, each SPMD rule on every layout of its operands on 1-D and 2-D meshes
// against the one-device result, gradients through a tape, DVariables, and the errors that name the
// op and the layouts.
#include "weft/dtensor/dtensor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "weft/autodiff/tape.h"
#include "weft/core/config.h"
#include "weft/core/errors.h"
#include "weft/dtensor/dataset.h"
#include "weft/ops/batch_norm.h"
#include "weft/ops/cast.h"
#include "weft/ops/conv.h"
#include "weft/ops/creation.h"
#include "weft/ops/cumulative.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/linalg.h"
#include "weft/ops/math.h"
#include "weft/ops/nn.h"
#include "weft/ops/random.h"
#include "weft/ops/reduce.h"
#include "weft/ops/rnn.h"
#include "weft/ops/scatter.h"
#include "weft/ops/shape_ops.h"
#include "weft/ops/sort.h"
#include "weft/optim/adam.h"
#include "weft/testing/dtensor_clients.h"

namespace weft::dtensor {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using weft::testing::test_mesh;

class DTensorValues : public weft::testing::LogicalDevices {};

Tensor uniform(const Shape& shape, int64_t seed) {
  return stateless_random_uniform(shape, {seed, 7}, -1.0, 1.0);
}

// Every layout of a rank-`rank` tensor on `mesh` (each axis unsharded or one mesh dimension, each
// dimension once).
std::vector<Layout> all_layouts(const Mesh& mesh, int rank) {
  std::vector<std::vector<std::string>> specs{{}};
  for (int a = 0; a < rank; ++a) {
    std::vector<std::vector<std::string>> next;
    for (const auto& s : specs) {
      std::vector<std::string> options{kUnsharded};
      for (const std::string& d : mesh.dim_names()) options.push_back(d);
      for (const std::string& o : options) {
        if (o != kUnsharded && std::find(s.begin(), s.end(), o) != s.end()) continue;
        auto t = s;
        t.push_back(o);
        next.push_back(t);
      }
    }
    specs = next;
  }
  std::vector<Layout> out;
  for (const auto& s : specs) out.emplace_back(s, mesh);
  return out;
}

// The global value of a DTensor, gathered.
std::vector<float> global_values(const Tensor& t) {
  return relayout(t, Layout::replicated(fetch_layout(t).mesh(), static_cast<int>(t.rank())))
      .to_vector<float>();
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want, double rel,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], rel * std::max(1.0, std::abs(static_cast<double>(want[i]))))
        << what << " at " << i;
  }
}

std::vector<Mesh> meshes() {
  return {test_mesh({{"x", 8}}), test_mesh({{"x", 2}, {"y", 4}}), test_mesh({{"x", 4}, {"y", 2}})};
}

TEST_F(DTensorValues, PackUnpackAndTheLayoutOfADTensor) {
  Mesh mesh = test_mesh({{"batch", 2}, {"model", 4}});
  Layout layout({"batch", kUnsharded}, mesh);
  Tensor x = uniform({8, 3}, 1);
  std::vector<Tensor> blocks;
  for (int64_t id : mesh.local_device_ids()) {
    const int64_t at = layout.offsets(x.shape(), id)[0];
    blocks.push_back(slice(x, {Slice{at, at + 4}}));
  }
  Tensor d = pack(blocks, layout);
  EXPECT_TRUE(is_dtensor(d));
  EXPECT_FALSE(is_dtensor(x));
  EXPECT_EQ(fetch_layout(d), layout);
  EXPECT_EQ(d.shape(), (Shape{8, 3}));
  std::vector<Tensor> back = unpack(d);
  ASSERT_EQ(back.size(), blocks.size());
  EXPECT_EQ(back.back().to_vector<float>(), blocks.back().to_vector<float>());
  EXPECT_EQ(global_values(d), x.to_vector<float>());
  // A sharded DTensor's values are not one array here: reading them names its layout.
  EXPECT_THAT([&] { d.to_vector<float>(); },
              ThrowsMessage<InvalidArgument>(HasSubstr("sharding_specs:batch,unsharded")));
  EXPECT_THAT([&] { (void)d.data<float>(); }, ThrowsMessage<InvalidArgument>(HasSubstr("DTensor")));
  // A replicated one reads as its value.
  Tensor r = copy_to_mesh(x, Layout::replicated(mesh, 2));
  EXPECT_EQ(r.to_vector<float>(), x.to_vector<float>());
  EXPECT_THAT([&] { pack({x}, layout); },
              ThrowsMessage<InvalidArgument>(HasSubstr("1 components")));
  EXPECT_THAT([&] { fetch_layout(x); }, ThrowsMessage<InvalidArgument>(HasSubstr("not a DTensor")));
}

TEST_F(DTensorValues, RelayoutMovesBetweenEveryPairOfLayouts) {
  Tensor x = uniform({8, 16}, 2);
  for (const Mesh& mesh : meshes()) {
    std::vector<Layout> layouts = all_layouts(mesh, 2);
    for (const Layout& from : layouts) {
      Tensor d = copy_to_mesh(x, from);
      for (const Layout& to : layouts) {
        Tensor moved = relayout(d, to);
        ASSERT_EQ(fetch_layout(moved), to);
        // Each device's component is its block of x.
        std::vector<Tensor> components = unpack(moved);
        for (size_t i = 0; i < components.size(); ++i) {
          std::vector<int64_t> at = to.offsets(x.shape(), mesh.local_device_ids()[i]);
          Shape local = to.local_shape(x.shape());
          Tensor want = slice(x, {Slice{at[0], at[0] + local[0]}, Slice{at[1], at[1] + local[1]}});
          ASSERT_EQ(components[i].to_vector<float>(), want.to_vector<float>())
              << from.to_string() << " -> " << to.to_string() << " device " << i;
        }
      }
    }
  }
}

// A relayout's gradient relayouts back: through gathers, cuts and (across clients) the
// all-to-all that moves a mesh dimension from one axis to another.
TEST_F(DTensorValues, TheGradientOfARelayoutLiesAsItsSource) {
  Tensor x = uniform({8, 16}, 60), c = uniform({8, 16}, 61);
  for (const Mesh& mesh : meshes()) {
    const std::string d = mesh.dim_names()[0];
    for (const auto& [from, to] : std::vector<std::pair<Layout, Layout>>{
             {Layout({d, kUnsharded}, mesh), Layout({kUnsharded, d}, mesh)},
             {Layout({kUnsharded, d}, mesh), Layout({d, kUnsharded}, mesh)},
             {Layout({d, kUnsharded}, mesh), Layout::replicated(mesh, 2)}}) {
      Tensor dx = copy_to_mesh(x, from);
      GradientTape tape;
      tape.watch(dx);
      Tensor loss = sum(mul(relayout(dx, to), copy_to_mesh(c, to)));
      Tensor g = tape.gradient(loss, std::vector<Tensor>{dx})[0];
      EXPECT_EQ(fetch_layout(g), from);
      EXPECT_EQ(global_values(g), c.to_vector<float>())
          << from.to_string() << " -> " << to.to_string();
      // Given output gradients lie on the target's mesh, or are local (replicated onto it).
      GradientTape again;
      again.watch(dx);
      Tensor y = relayout(dx, to);
      EXPECT_EQ(global_values(again.gradient(y, std::vector<Tensor>{dx}, c)[0]),
                c.to_vector<float>());
    }
  }
}

TEST_F(DTensorValues, AnOutputGradientOnAnotherMeshIsRefusedNamingBoth) {
  Mesh mesh = test_mesh({{"x", 8}}), other = test_mesh({{"y", 8}});
  Tensor dx = copy_to_mesh(uniform({8, 16}, 62), Layout({"x", kUnsharded}, mesh));
  GradientTape tape;
  tape.watch(dx);
  Tensor y = mul(dx, 2.0);
  Tensor elsewhere = copy_to_mesh(uniform({8, 16}, 63), Layout::replicated(other, 2));
  EXPECT_THAT([&] { tape.gradient(y, std::vector<Tensor>{dx}, elsewhere); },
              ThrowsMessage<InvalidArgument>(AllOf(HasSubstr(fetch_layout(elsewhere).to_string()),
                                                   HasSubstr(fetch_layout(y).to_string()))));
}

TEST_F(DTensorValues, ElementwiseOpsOnEveryLayoutGiveTheOneDeviceResult) {
  Tensor a = uniform({8, 16}, 3), b = uniform({16}, 4);
  std::vector<float> want = relu(sub(mul(a, b), exp(a))).to_vector<float>();
  for (const Mesh& mesh : meshes()) {
    for (const Layout& la : all_layouts(mesh, 2)) {
      for (const Layout& lb : all_layouts(mesh, 1)) {
        Tensor da = copy_to_mesh(a, la), db = copy_to_mesh(b, lb);
        Tensor got = relu(sub(mul(da, db), exp(da)));
        ASSERT_TRUE(is_dtensor(got));
        // Elementwise results are bit-identical: each element is computed as on one device.
        ASSERT_EQ(global_values(got), want) << la.to_string() << " " << lb.to_string();
      }
    }
  }
}

TEST_F(DTensorValues, MatmulOnEveryLayoutGivesTheOneDeviceResult) {
  Tensor a = uniform({8, 16}, 5), b = uniform({16, 8}, 6);
  std::vector<float> want = matmul(a, b).to_vector<float>();
  std::vector<float> want_t = matmul(b, a, true, true).to_vector<float>();
  for (const Mesh& mesh : meshes()) {
    for (const Layout& la : all_layouts(mesh, 2)) {
      for (const Layout& lb : all_layouts(mesh, 2)) {
        Tensor da = copy_to_mesh(a, la), db = copy_to_mesh(b, lb);
        const std::string& ka = la.sharding_specs()[1];
        const std::string& kb = lb.sharding_specs()[0];
        if (ka != kUnsharded && kb != kUnsharded && ka != kb) {
          // Contracting axes on different mesh dimensions: named, with both layouts.
          EXPECT_THAT([&] { matmul(da, db); }, ThrowsMessage<InvalidArgument>(AllOf(
                                                   HasSubstr("matmul"), HasSubstr(la.to_string()),
                                                   HasSubstr(lb.to_string()))));
          continue;
        }
        expect_near(global_values(matmul(da, db)), want, 1e-6,
                    la.to_string() + " x " + lb.to_string());
        expect_near(global_values(matmul(db, da, true, true)), want_t, 1e-6,
                    "transposed " + la.to_string() + " x " + lb.to_string());
      }
    }
  }
}

TEST_F(DTensorValues, ReductionsSoftmaxReshapeAndTransposeOnEveryLayout) {
  Tensor x = uniform({8, 16}, 8);
  Tensor labels = cast(mul(add(uniform({8}, 9), 1.0), 7.9), kInt64);
  std::vector<float> sum0 = sum(x, {0}).to_vector<float>(), sum_all = sum(x).to_vector<float>();
  std::vector<float> max1 = max(x, {1}, true).to_vector<float>();
  std::vector<float> mean_all = mean(x).to_vector<float>();
  std::vector<float> soft = softmax(x).to_vector<float>(),
                     logsoft = log_softmax(x, 0).to_vector<float>();
  std::vector<float> xent = sparse_softmax_cross_entropy_with_logits(labels, x).to_vector<float>();
  std::vector<int64_t> arg = argmax(x, 1).to_vector<int64_t>();
  std::vector<float> reshaped = reshape(x, {8, 4, 4}).to_vector<float>();
  std::vector<float> transposed = transpose(x).to_vector<float>();
  std::vector<float> squeezed = squeeze(expand_dims(x, 1), {1}).to_vector<float>();
  std::vector<float> hyp = hypot(x, reciprocal(add(abs(x), 1.0))).to_vector<float>();
  for (const Mesh& mesh : meshes()) {
    for (const Layout& lx : all_layouts(mesh, 2)) {
      Tensor d = copy_to_mesh(x, lx);
      const std::string what = lx.to_string();
      expect_near(global_values(sum(d, {0})), sum0, 1e-6, "sum0 " + what);
      expect_near(sum(d).to_vector<float>(), sum_all, 1e-6, "sum " + what);
      expect_near(global_values(max(d, {1}, true)), max1, 0, "max " + what);
      expect_near(mean(d).to_vector<float>(), mean_all, 1e-6, "mean " + what);
      expect_near(global_values(softmax(d)), soft, 0, "softmax " + what);
      expect_near(global_values(log_softmax(d, 0)), logsoft, 0, "log_softmax " + what);
      for (const Layout& ll : all_layouts(mesh, 1)) {
        Tensor dl = copy_to_mesh(labels, ll);
        expect_near(global_values(sparse_softmax_cross_entropy_with_logits(dl, d)), xent, 0,
                    "xent " + what + " " + ll.to_string());
      }
      Tensor a = argmax(d, 1);
      EXPECT_EQ(relayout(a, Layout::replicated(mesh, 1)).to_vector<int64_t>(), arg) << what;
      Tensor r = reshape(d, {8, 4, 4});
      EXPECT_EQ(fetch_layout(r).sharding_specs()[0], lx.sharding_specs()[0]) << what;
      EXPECT_EQ(global_values(r), reshaped) << what;
      Tensor t = transpose(d);
      EXPECT_EQ(fetch_layout(t).sharding_specs()[0], lx.sharding_specs()[1]) << what;
      EXPECT_EQ(global_values(t), transposed) << what;
      EXPECT_EQ(global_values(squeeze(expand_dims(d, 1), {1})), squeezed) << what;
      EXPECT_EQ(fetch_layout(squeeze(expand_dims(d, 1), {1})), lx) << what;
      EXPECT_EQ(global_values(hypot(d, reciprocal(add(abs(d), 1.0)))), hyp) << what;
    }
  }
}

TEST_F(DTensorValues, ShapeOpsScansAndSortsOnEveryLayout) {
  Tensor x = uniform({8, 16}, 40), y = uniform({8, 16}, 41);
  Tensor idx = Tensor::from_vector(std::vector<int64_t>{5, 0, 15, 3}, {2, 2});
  Tensor labels = cast(mul(add(uniform({8}, 42), 1.0), 4.9), kInt64);
  auto values = [](const Tensor& t) { return t.to_vector<float>(); };
  const std::vector<float> sliced = values(slice(x, {Slice{2, 6}, Slice{1, 16, 3}}));
  const std::vector<float> rows = values(slice(x, {Slice{}, Slice{4, 12}}));
  const std::vector<float> joined0 = values(concat({x, y}, 0)), joined1 = values(concat({x, y}, 1));
  const std::vector<float> stacked = values(stack({x, y}, 1));
  const std::vector<float> gathered = values(gather(x, idx, 1));
  const std::vector<float> hot = values(one_hot(labels, 6));
  const std::vector<float> padded = values(pad(x, {{1, 0}, {0, 2}}, 0.5));
  const std::vector<float> summed = values(cumsum(x, 1)), product = values(cumprod(x, 0));
  const std::vector<float> sorted = values(sort(x, 0));
  const std::vector<int64_t> order = argsort(x, 1).to_vector<int64_t>();
  const std::vector<float> picked = values(select(x, 0, 3));
  const std::vector<float> angles = values(atan2(x, heaviside(y, round(x, 1))));
  const std::vector<float> best = values(top_k(x, 3).values);
  const std::vector<int64_t> best_at = top_k(x, 3).indices.to_vector<int64_t>();
  for (const Mesh& mesh : meshes()) {
    for (const Layout& lx : all_layouts(mesh, 2)) {
      Tensor d = copy_to_mesh(x, lx);
      Tensor e = copy_to_mesh(y, all_layouts(mesh, 2).back());
      const std::string what = lx.to_string();
      EXPECT_EQ(global_values(slice(d, {Slice{2, 6}, Slice{1, 16, 3}})), sliced) << what;
      // An axis taken whole keeps its sharding.
      Tensor r = slice(d, {Slice{}, Slice{4, 12}});
      EXPECT_EQ(fetch_layout(r).sharding_specs()[0], lx.sharding_specs()[0]) << what;
      EXPECT_EQ(global_values(r), rows) << what;
      EXPECT_EQ(global_values(concat({d, e}, 0)), joined0) << what;
      EXPECT_EQ(global_values(concat({d, y}, 1)), joined1) << what;
      EXPECT_EQ(global_values(stack({d, e}, 1)), stacked) << what;
      EXPECT_EQ(global_values(gather(d, idx, 1)), gathered) << what;
      EXPECT_EQ(global_values(pad(d, {{1, 0}, {0, 2}}, 0.5)), padded) << what;
      expect_near(global_values(cumsum(d, 1)), summed, 0, "cumsum " + what);
      expect_near(global_values(cumprod(d, 0)), product, 0, "cumprod " + what);
      EXPECT_EQ(global_values(sort(d, 0)), sorted) << what;
      EXPECT_EQ(relayout(argsort(d, 1), Layout::replicated(mesh, 2)).to_vector<int64_t>(), order)
          << what;
      EXPECT_EQ(global_values(select(d, 0, 3)), picked) << what;
      EXPECT_EQ(global_values(atan2(d, heaviside(e, round(d, 1)))), angles) << what;
      TopK top = top_k(d, 3);
      EXPECT_EQ(global_values(top.values), best) << what;
      EXPECT_EQ(relayout(top.indices, Layout::replicated(mesh, 2)).to_vector<int64_t>(), best_at)
          << what;
    }
    for (const Layout& ll : all_layouts(mesh, 1)) {
      Tensor dl = copy_to_mesh(labels, ll);
      Tensor h = one_hot(dl, 6);
      EXPECT_EQ(fetch_layout(h).sharding_specs()[0], ll.sharding_specs()[0]);
      EXPECT_EQ(global_values(h), hot) << ll.to_string();
    }
    // broadcast_to and the scatters take replicated operands; a sharded one is named.
    Tensor b = copy_to_mesh(slice(x, {Slice{0, 1}}), Layout::replicated(mesh, 2));
    EXPECT_EQ(global_values(broadcast_to(b, {8, 16})),
              values(broadcast_to(slice(x, {Slice{0, 1}}), {8, 16})));
    Tensor sharded = copy_to_mesh(x, Layout::batch_sharded(mesh, mesh.dim_names()[0], 2));
    EXPECT_THAT([&] { batch_norm_training(sharded, ones({16}), zeros({16}), 1, 1e-3); },
                ThrowsMessage<InvalidArgument>(HasSubstr("batch_norm_training")));
    EXPECT_THAT(
        [&] {
          scatter_flat_add(sharded, idx, ones({2, 2}));
        },
        ThrowsMessage<InvalidArgument>(
            AllOf(HasSubstr("scatter_flat_add"), HasSubstr(fetch_layout(sharded).to_string()))));
  }
}

TEST_F(DTensorValues, ConvolutionsPoolingAndRnnsPerExampleOnEveryLayout) {
  Tensor x = uniform({8, 6, 6, 8}, 50), f = uniform({3, 3, 8, 8}, 51),
         ft = uniform({3, 3, 5, 8}, 52);
  const std::vector<float> conv = conv2d(x, f, {1, 1}, "SAME").to_vector<float>();
  const std::vector<float> up = conv2d_transpose(x, ft, {2, 2}, "SAME").to_vector<float>();
  const std::vector<float> maxed = max_pool2d(x, {2, 2}, {2, 2}, "VALID").to_vector<float>();
  const std::vector<float> averaged = avg_pool2d(x, {3, 3}, {1, 1}, "SAME").to_vector<float>();
  // An LSTM over (batch 8, 3 steps, 4 features), 5 units.
  Tensor seq = uniform({8, 3, 4}, 53), h0 = uniform({8, 5}, 54), c0 = uniform({8, 5}, 55);
  Tensor kernel = uniform({4, 20}, 56), recurrent = uniform({5, 20}, 57), bias = uniform({20}, 58);
  std::vector<Tensor> lstm = rnn(RnnCell::kLSTM, seq, h0, c0, kernel, recurrent, bias);
  const std::string u = kUnsharded;
  for (const Mesh& mesh : meshes()) {
    for (const std::string& b : mesh.dim_names()) {
      Tensor ds = copy_to_mesh(seq, Layout({b, u, u}, mesh));
      std::vector<Tensor> got = rnn(RnnCell::kLSTM, ds, h0, c0, kernel, recurrent, bias);
      ASSERT_EQ(got.size(), lstm.size());
      for (size_t k = 0; k < got.size(); ++k) {
        EXPECT_EQ(fetch_layout(got[k]).sharding_specs()[0], b);
        expect_near(global_values(got[k]), lstm[k].to_vector<float>(), 1e-6,
                    "rnn result " + std::to_string(k) + " on " + mesh.to_string());
      }
    }
    for (const Layout& l2 : all_layouts(mesh, 2)) {
      // The batch and the channels laid out as l2's two axes.
      Layout lx({l2.sharding_specs()[0], u, u, l2.sharding_specs()[1]}, mesh);
      Tensor d = copy_to_mesh(x, lx);
      Tensor df = copy_to_mesh(f, Layout({u, u, u, l2.sharding_specs()[1]}, mesh));
      const std::string what = lx.to_string();
      Tensor y = conv2d(d, df, {1, 1}, "SAME");
      EXPECT_EQ(fetch_layout(y).sharding_specs()[0], lx.sharding_specs()[0]) << what;
      expect_near(global_values(y), conv, 1e-6, "conv2d " + what);
      expect_near(global_values(conv2d_transpose(d, ft, {2, 2}, "SAME")), up, 1e-6,
                  "conv2d_transpose " + what);
      EXPECT_EQ(global_values(max_pool2d(d, {2, 2}, {2, 2}, "VALID")), maxed) << what;
      expect_near(global_values(avg_pool2d(d, {3, 3}, {1, 1}, "SAME")), averaged, 1e-6,
                  "avg_pool2d " + what);
    }
  }
}

// The tutorial's model on a mesh: its loss and every gradient, data-parallel, tensor-parallel and
// 2-D, against one device.
struct Mlp {
  std::vector<Tensor> weights;  // w1, b1, w2, b2
  Tensor loss(const Tensor& x, const Tensor& y) const {
    Tensor h = relu(add(matmul(x, weights[0]), weights[1]));
    Tensor logits = add(matmul(h, weights[2]), weights[3]);
    return mean(sparse_softmax_cross_entropy_with_logits(y, logits));
  }
};

TEST_F(DTensorValues, GradientsOfATrainingStepMatchOneDevice) {
  Tensor x = uniform({16, 12}, 10);
  Tensor y = cast(mul(add(uniform({16}, 11), 1.0), 4.9), kInt64);
  std::vector<Tensor> w{uniform({12, 8}, 12), uniform({8}, 13), uniform({8, 10}, 14),
                        uniform({10}, 15)};
  GradientTape tape;
  tape.watch(w);
  Tensor loss = Mlp{w}.loss(x, y);
  std::vector<Tensor> want = tape.gradient(loss, w);

  struct Case {
    Mesh mesh;
    std::vector<std::vector<std::string>> specs;  // x, w1, b1, w2, b2
  };
  Mesh batch = test_mesh({{"batch", 8}}), model = test_mesh({{"model", 4}});
  Mesh grid = test_mesh({{"batch", 2}, {"model", 4}});
  const std::string u = kUnsharded;
  std::vector<Case> cases{
      {batch, {{"batch", u}, {u, u}, {u}, {u, u}, {u}}},
      {model, {{u, u}, {u, "model"}, {"model"}, {"model", u}, {u}}},
      {grid, {{"batch", u}, {u, "model"}, {"model"}, {"model", u}, {u}}},
  };
  for (const Case& c : cases) {
    std::vector<Tensor> dw;
    for (size_t i = 0; i < w.size(); ++i)
      dw.push_back(copy_to_mesh(w[i], Layout(c.specs[i + 1], c.mesh)));
    Tensor dx = copy_to_mesh(x, Layout(c.specs[0], c.mesh));
    Tensor dy = copy_to_mesh(y, Layout({c.specs[0][0]}, c.mesh));
    if (c.mesh == batch) {
      // Replicated weights packed from a copy per device, as pack makes them (and as each
      // process holds its own): each device computes a term of their gradients, which add up.
      for (size_t i = 0; i < w.size(); ++i) {
        std::vector<Tensor> copies;
        for (int k = 0; k < c.mesh.num_local_devices(); ++k) copies.push_back(copy(w[i]));
        dw[i] = pack(copies, fetch_layout(dw[i]));
      }
    }
    GradientTape dtape;
    dtape.watch(dw);
    Tensor dloss = Mlp{dw}.loss(dx, dy);
    const std::string what = c.mesh.to_string();
    EXPECT_NEAR(dloss.item<float>(), loss.item<float>(), 1e-6 * std::abs(loss.item<float>()))
        << what;
    std::vector<Tensor> got = dtape.gradient(dloss, dw);
    for (size_t i = 0; i < w.size(); ++i) {
      ASSERT_TRUE(is_dtensor(got[i])) << what;
      EXPECT_EQ(fetch_layout(got[i]), fetch_layout(dw[i])) << what;
      expect_near(global_values(got[i]), want[i].to_vector<float>(), 1e-5,
                  what + " gradient " + std::to_string(i));
    }
  }
}

TEST_F(DTensorValues, KerasOptimizersUpdateDVariablesAsOneDevice) {
  Tensor x = uniform({16, 12}, 20);
  Tensor y = cast(mul(add(uniform({16}, 21), 1.0), 4.9), kInt64);
  std::vector<Tensor> init{uniform({12, 8}, 22), uniform({8}, 23), uniform({8, 10}, 24),
                           uniform({10}, 25)};
  auto train = [&](std::vector<Variable> vars, const Tensor& xs, const Tensor& ys) {
    optim::Adam adam(optim::AdamOptions{.learning_rate = 0.01});
    for (int step = 0; step < 3; ++step) {
      GradientTape tape;
      Tensor loss = Mlp{{vars[0], vars[1], vars[2], vars[3]}}.loss(xs, ys);
      std::vector<Tensor> g = tape.gradient(loss, vars);
      optim::GradsAndVars gv;
      for (size_t i = 0; i < vars.size(); ++i) gv.emplace_back(g[i], vars[i]);
      adam.apply_gradients(gv);
    }
    return adam;
  };
  std::vector<Variable> local;
  for (const Tensor& t : init) local.emplace_back(t);
  train(local, x, y);
  Mesh grid = test_mesh({{"batch", 2}, {"model", 4}});
  const std::string u = kUnsharded;
  std::vector<std::vector<std::string>> specs{{u, "model"}, {"model"}, {"model", u}, {u}};
  std::vector<Variable> laid;
  for (size_t i = 0; i < init.size(); ++i) {
    laid.push_back(DVariable(copy_to_mesh(init[i], Layout(specs[i], grid))));
  }
  optim::Adam adam = train(laid, copy_to_mesh(x, Layout({"batch", u}, grid)),
                           copy_to_mesh(y, Layout({"batch"}, grid)));
  for (size_t i = 0; i < init.size(); ++i) {
    EXPECT_EQ(fetch_layout(laid[i].value()), Layout(specs[i], grid));
    EXPECT_EQ(fetch_layout(adam.get_slot(laid[i], "m").value()), Layout(specs[i], grid));
    expect_near(global_values(laid[i].value()), local[i].value().to_vector<float>(), 1e-5,
                "variable " + std::to_string(i));
  }
}

TEST_F(DTensorValues, ADVariableKeepsItsLayout) {
  Mesh mesh = test_mesh({{"model", 4}});
  Layout cols({kUnsharded, "model"}, mesh), rows({"model", kUnsharded}, mesh);
  Tensor init = uniform({4, 8}, 16);
  DVariable v(call_with_layout([&] { return init; }, cols), "w");
  EXPECT_EQ(v.layout(), cols);
  v.assign_sub(mul(copy_to_mesh(init, cols), 0.5));
  expect_near(global_values(v.value()), mul(init, 0.5).to_vector<float>(), 0, "assign_sub");
  v.assign(init);  // a local value is cut into the layout
  EXPECT_EQ(global_values(v.value()), init.to_vector<float>());
  EXPECT_THAT([&] { v.assign(copy_to_mesh(init, rows)); },
              ThrowsMessage<InvalidArgument>(
                  AllOf(HasSubstr(cols.to_string()), HasSubstr(rows.to_string()))));
  // Its gradient on a tape lies as it does.
  GradientTape tape;
  Tensor loss = sum(square(v));
  std::vector<Tensor> g = tape.gradient(loss, std::vector<Variable>{v});
  EXPECT_EQ(fetch_layout(g[0]), cols);
  EXPECT_EQ(global_values(g[0]), mul(init, 2.0).to_vector<float>());
  EXPECT_EQ(tape.watched_variables().size(), 1u);
}

TEST_F(DTensorValues, ADTensorDatasetYieldsGlobalBatchesLaidOut) {
  Mesh mesh = test_mesh({{"batch", 2}, {"model", 4}});
  Layout images({"batch", kUnsharded}, mesh), labels({"batch"}, mesh);
  Tensor x = uniform({40, 3}, 30);
  Tensor y = cast(mul(add(uniform({40}, 31), 1.0), 4.9), kInt64);
  DTensorDataset ds(data::Dataset::from_tensor_slices({x, y}), mesh, {images, labels}, 16);
  int batches = 0;
  for (const data::Element& batch : ds) {
    ASSERT_EQ(batch.size(), 2u);
    EXPECT_EQ(fetch_layout(batch[0]), images);
    EXPECT_EQ(fetch_layout(batch[1]), labels);
    // Global batch b is rows 16b.. of the dataset, whatever the mesh; the last 8 rows dropped.
    Slice rows{16 * batches, 16 * batches + 16};
    EXPECT_EQ(global_values(batch[0]), slice(x, {rows}).to_vector<float>()) << batches;
    EXPECT_EQ(relayout(batch[1], Layout::replicated(mesh, 1)).to_vector<int64_t>(),
              slice(y, {rows}).to_vector<int64_t>());
    // This client's devices hold their blocks: 8 rows each, by batch coordinate.
    std::vector<Tensor> local = unpack(batch[0]);
    ASSERT_EQ(local.size(), static_cast<size_t>(mesh.num_local_devices()));
    const int64_t at = images.offsets(batch[0].shape(), mesh.local_device_ids()[0])[0];
    EXPECT_EQ(local[0].to_vector<float>(),
              slice(x, {Slice{16 * batches + at, 16 * batches + at + 8}}).to_vector<float>());
    ++batches;
  }
  EXPECT_EQ(batches, 2);
  // Its iterators save and restore their position, as any dataset's.
  auto it = ds.begin();
  it.next();
  auto again = ds.begin();
  again.restore_state(it.save_state());
  EXPECT_EQ(global_values((*again.next())[0]), global_values((*it.next())[0]));
  // Already batched: each element must be one global batch.
  DTensorDataset batched(data::Dataset::from_tensor_slices({x, y}).batch(16, true), mesh,
                         {images, labels}, 16, /*dataset_already_batched=*/true);
  EXPECT_EQ(global_values((*batched.begin().next())[0]),
            slice(x, {Slice{0, 16}}).to_vector<float>());
  EXPECT_THAT(
      [&] {
        DTensorDataset(data::Dataset::from_tensor_slices({x, y}).batch(8), mesh, {images, labels},
                       16, true)
            .begin()
            .next();
      },
      ThrowsMessage<InvalidArgument>(HasSubstr("not a batch of global_batch_size 16")));
  EXPECT_THAT(
      [&] {
        DTensorDataset(data::Dataset::from_tensor_slices({x, y}), mesh, {images}, 16)
            .begin()
            .next();
      },
      ThrowsMessage<InvalidArgument>(HasSubstr("2 components, but 1 layouts")));
  EXPECT_THAT(
      [&] {
        DTensorDataset(data::Dataset::from_tensor_slices({x, y}), mesh, {images, labels}, 16, false,
                       "model");
      },
      ThrowsMessage<InvalidArgument>(
          AllOf(HasSubstr("not over batch_dim \"model\""), HasSubstr(images.to_string()))));
}

}  // namespace
}  // namespace weft::dtensor
