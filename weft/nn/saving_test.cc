#include "weft/nn/saving.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "weft/core/config.h"
#include "weft/core/crc32c.h"
#include "weft/core/file_io.h"
#include "weft/distribute/mirrored_strategy.h"
#include "weft/nn/conv.h"
#include "weft/nn/core_layers.h"
#include "weft/nn/dense.h"
#include "weft/nn/merging.h"
#include "weft/nn/models.h"
#include "weft/nn/normalization.h"
#include "weft/nn/pooling.h"
#include "weft/ops/cast.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/random.h"
#include "weft/optim/adam.h"
#include "weft/optim/loss_scale_optimizer.h"
#include "weft/optim/schedules.h"
#include "weft/optim/sgd.h"

namespace weft::nn {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class SavedModel : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("weft_saving_test_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // A small trained model: Dense, Dropout, BatchNormalization; SGD with momentum, a decaying
  // rate and clipping.
  static Model trained_model() {
    random::set_seed(4);
    Sequential model(
        {Flatten(), Dense(16, "relu"), Dropout(0.2, {.seed = 3}), BatchNormalization(), Dense(3)},
        "small");
    model.compile(optim::SGD({.learning_rate = optim::schedules::ExponentialDecay(0.1, 10, 0.5),
                              .momentum = 0.9,
                              .clipnorm = 5.0}),
                  losses::SparseCategoricalCrossentropy({.from_logits = true}), {"accuracy"});
    model.fit(data::Dataset::from_tensor_slices({inputs(), labels()}).batch(8),
              {.epochs = 2, .verbose = 0});
    return model;
  }
  static Tensor inputs() { return stateless_random_uniform({24, 4, 2}, {1, 2}); }
  static Tensor labels() { return cast(mul(stateless_random_uniform({24}, {3, 4}), 3.0), kInt64); }
  // The values' bits, for exact comparison.
  static std::vector<uint32_t> bytes(const Tensor& t) {
    std::vector<float> v = t.to_vector<float>();
    std::vector<uint32_t> bits(v.size());
    std::memcpy(bits.data(), v.data(), v.size() * sizeof(float));
    return bits;
  }
  // Rewrites model.json with `edit` applied and a checksum that matches again.
  void rewrite(const std::string& dir, const std::function<void(ConfigDict&)>& edit) {
    std::string file = dir + "/" + kSavedModelFileName;
    ConfigDict c = ConfigDict::from_json(io::read_whole_file(file));
    c.erase("crc32c");
    edit(c);
    std::string body = c.to_json();
    c.set("crc32c", static_cast<int64_t>(crc32c(body.data(), body.size())));
    std::ofstream(file) << c.to_json(1);
  }

  fs::path dir_;
};

TEST_F(SavedModel, EveryBuiltInLayerConfigRoundTrips) {
  std::vector<Layer> layers{
      Dense(7, "tanh", {.use_bias = false, .kernel_initializer = "he_normal", .name = "d"}),
      Conv2D(4, {3, 2}, {.strides = {2, 1}, .padding = "same", .activation = "relu"}),
      MaxPooling2D({3, 3}, {.strides = {1, 2}, .padding = "same"}),
      AveragePooling2D(),
      GlobalAveragePooling2D(),
      BatchNormalization({.axis = 1, .momentum = 0.9, .epsilon = 0.01, .center = false}),
      SyncBatchNormalization({.activation = "relu"}),
      LayerNormalization({.epsilon = 1e-5, .scale = false}),
      Flatten(),
      Reshape({-1, 4}),
      Activation("softmax", {.dtype = "float32"}),
      Dropout(0.3, {.seed = 17}),
      Dropout(0.1),
      Embedding(100, 8, {.embeddings_initializer = "zeros"}),
      Concatenate(1),
      Add(),
  };
  for (const Layer& layer : layers) {
    ConfigDict saved = serialize(layer);
    Layer again = deserialize(ConfigDict::from_json(saved.to_json()));
    EXPECT_EQ(again.impl().class_name(), layer.impl().class_name());
    EXPECT_EQ(again.name(), layer.name());
    EXPECT_EQ(serialize(again), saved) << saved.to_json();
  }
  EXPECT_EQ(serialize(layers[0]).get_dict("config").get_int("units"), 7);
  EXPECT_EQ(serialize(layers[11]).get_dict("config").get_int("seed"), 17);
  EXPECT_TRUE(serialize(layers[12]).get_dict("config").is_null("seed"));
  EXPECT_EQ(serialize(layers[10]).get_dict("config").get_string("dtype"), "float32");
}

TEST_F(SavedModel, PredictGivesTheSameBitsAndCompileStateIsRestored) {
  Model model = trained_model();
  model.save(path("m"));
  Model loaded = load_model(path("m"));
  EXPECT_EQ(loaded.name(), "small");
  EXPECT_EQ(bytes(loaded.predict(inputs(), 5)), bytes(model.predict(inputs(), 5)));
  EXPECT_EQ(loaded.weights_fingerprint(), model.weights_fingerprint());
  ASSERT_TRUE(loaded.compiled());
  EXPECT_EQ(loaded.optimizer().get_config(), model.optimizer().get_config());
  EXPECT_EQ(loaded.optimizer().iterations().value().item<int64_t>(), 6);
  EXPECT_DOUBLE_EQ(loaded.optimizer().current_learning_rate(),
                   model.optimizer().current_learning_rate());
  // Momentum slots came back too: one more step from each ends at the same weights.
  data::Dataset more = data::Dataset::from_tensor_slices({inputs(), labels()}).batch(8).take(1);
  model.fit(more, {.epochs = 1, .verbose = 0});
  loaded.fit(more, {.epochs = 1, .verbose = 0});
  EXPECT_EQ(loaded.weights_fingerprint(), model.weights_fingerprint());
  EXPECT_EQ(loaded.evaluate(more), model.evaluate(more));
}

TEST_F(SavedModel, NestedAndSharedLayersInAFunctionalModel) {
  random::set_seed(9);
  KerasTensor a = Input({6}, kFloat32, "a"), b = Input({6});
  Dense shared(5, "relu");
  Sequential tower({Dense(4), Activation("tanh")});
  KerasTensor merged = Add()({shared(a), shared(b)})[0];
  KerasTensor out = Concatenate()({tower(merged), merged})[0];
  Model model({a, b}, {out}, "graph");
  Tensor xa = stateless_random_uniform({3, 6}, {1, 1}),
         xb = stateless_random_uniform({3, 6}, {2, 2});
  model.save(path("g"));
  Model loaded = load_model(path("g"));
  EXPECT_FALSE(loaded.compiled());
  ASSERT_EQ(loaded.inputs().size(), 2u);
  EXPECT_EQ(loaded.inputs()[0].node()->name, "a");
  EXPECT_EQ(bytes(loaded({xa, xb})[0]), bytes(model({xa, xb})[0]));
  EXPECT_EQ(loaded.layers().size(), model.layers().size());
}

TEST_F(SavedModel, AModelTrainedUnderMirroredStrategyLoadsAloneAndUnderAnother) {
  config::set_logical_cpu_devices(2);
  Tensor x = inputs();
  std::vector<uint32_t> expected;
  std::string fingerprint;
  {
    distribute::MirroredStrategy strategy;
    Model model;
    {
      auto scope = strategy.scope();
      model = trained_model();
    }
    EXPECT_EQ(model.distribute_strategy().num_replicas_in_sync(), 2);
    model.save(path("mirrored"));
    expected = bytes(model.predict(x, 6));
    fingerprint = model.weights_fingerprint();
  }
  Model alone = load_model(path("mirrored"));
  EXPECT_EQ(alone.distribute_strategy().num_replicas_in_sync(), 1);
  EXPECT_EQ(alone.weights_fingerprint(), fingerprint);
  // Alone, each product has all 6 rows rather than each replica's 3: a GEMM may round a row
  // differently by the rows beside it (oneDNN's AVX2 kernels do), so values agree to rounding.
  std::vector<float> got = alone.predict(x, 6).to_vector<float>();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    float want;
    std::memcpy(&want, &expected[i], sizeof(float));
    EXPECT_NEAR(got[i], want, 1e-5f * (1 + std::fabs(want))) << i;
  }
  distribute::MirroredStrategy other;
  Model under;
  {
    auto scope = other.scope();
    under = load_model(path("mirrored"));
  }
  EXPECT_EQ(under.distribute_strategy().num_replicas_in_sync(), 2);
  EXPECT_EQ(under.weights_fingerprint(), fingerprint);
  EXPECT_EQ(bytes(under.predict(x, 6)), expected);  // the same cut among 2 replicas: same bits
  config::set_logical_cpu_devices(1);
}

TEST_F(SavedModel, DamagedNewerAndUnknownSavedModelsAreRefusedNamingTheFile) {
  Model model = trained_model();
  std::string dir = path("m"), json = dir + "/" + kSavedModelFileName;
  auto expect_refused = [&](const char* what, auto check) {
    model.save(dir);
    check();
    try {
      load_model(dir);
      ADD_FAILURE() << what << ": loaded";
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // A changed digit keeps the JSON valid: the checksum finds it.
  std::string msg = expect_refused("digit", [&] {
    std::string text = io::read_whole_file(json);
    size_t at = text.find("\"units\": 16");
    ASSERT_NE(at, std::string::npos);
    text[at + 10] = '7';
    std::ofstream(json) << text;
  });
  EXPECT_THAT(msg, HasSubstr("DataLoss"));
  EXPECT_THAT(msg, HasSubstr(json + " is damaged"));
  msg = expect_refused("truncated", [&] {
    std::string text = io::read_whole_file(json);
    std::ofstream(json) << text.substr(0, text.size() / 2);
  });
  EXPECT_THAT(msg, HasSubstr(json + " is damaged: not valid JSON at byte"));
  msg = expect_refused("newer",
                       [&] { rewrite(dir, [](ConfigDict& c) { c.set("format_version", 2); }); });
  EXPECT_THAT(msg, HasSubstr("FailedPrecondition"));
  EXPECT_THAT(msg, HasSubstr(json + " has saved-model format version 2, newer than the 1"));
  msg = expect_refused("unknown", [&] {
    rewrite(dir, [](ConfigDict& c) {
      std::string text = c.to_json();
      text.replace(text.find("\"Dense\""), 7, "\"Densest\"");
      c = ConfigDict::from_json(text);
    });
  });
  EXPECT_THAT(msg, HasSubstr("InvalidArgument"));
  EXPECT_THAT(msg, HasSubstr(json + ": unknown layer class \"Densest\" (layer \"dense\")"));
  msg = expect_refused("bad field", [&] {
    rewrite(dir, [](ConfigDict& c) {
      std::string text = c.to_json();
      text.replace(text.find("\"units\":16"), 10, "\"units\":\"16\"");
      c = ConfigDict::from_json(text);
    });
  });
  EXPECT_THAT(msg, HasSubstr(json + ": config field \"units\": expected an integer, got a string"));
  std::string data = dir + "/variables/data-00000-of-00001";
  msg = expect_refused("weights", [&] {
    std::fstream f(data, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x55');
  });
  EXPECT_THAT(msg, HasSubstr("DataLoss"));
  EXPECT_THAT(msg, HasSubstr(data));
  msg = expect_refused("no model.json", [&] { fs::remove(json); });
  EXPECT_THAT(msg, HasSubstr(dir + " is not a saved model: it has no model.json"));
}

TEST_F(SavedModel, WhatCannotBeSavedIsNamed) {
  Sequential unbuilt({Dense(3)});
  try {
    unbuilt.save(path("u"));
    ADD_FAILURE() << "saved an unbuilt model";
  } catch (const FailedPrecondition& e) {
    EXPECT_THAT(e.message(), HasSubstr("is not built yet"));
  }
  Model model = trained_model();
  model.compile(optim::Adam(optim::schedules::LearningRateSchedule([](int64_t) { return 0.1; })),
                losses::Loss("mine", [](const Tensor& y, const Tensor& p) { return p; }),
                std::vector<std::string>{});
  try {
    model.save(path("c"));
    ADD_FAILURE() << "saved a loss function";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.message(), HasSubstr("loss \"mine\" is a function"));
  }
  EXPECT_FALSE(fs::exists(path("c")));
  model.save(path("c"), {.include_optimizer = false});
  Model loaded = load_model(path("c"));
  EXPECT_FALSE(loaded.compiled());
  EXPECT_EQ(loaded.weights_fingerprint(), model.weights_fingerprint());
  // A schedule that is a function cannot be described either.
  model.compile(optim::Adam(optim::schedules::LearningRateSchedule([](int64_t) { return 0.1; })),
                losses::MeanSquaredError(), std::vector<std::string>{});
  EXPECT_THROW(model.save(path("d")), InvalidArgument);
}

TEST_F(SavedModel, LossScalingIsSavedWithTheOptimizer) {
  Model model = trained_model();
  model.compile(mixed_precision::LossScaleOptimizer(optim::Adam(1e-3), {.initial_scale = 64}),
                losses::SparseCategoricalCrossentropy({.from_logits = true}), {"accuracy"});
  model.save(path("ls"));
  Model loaded = load_model(path("ls"));
  ASSERT_TRUE(loaded.optimizer().has_loss_scale());
  EXPECT_EQ(loaded.optimizer().get_config().get_dict("loss_scale").get_double("initial_scale"),
            64.0);
}

TEST(ConfigDict, GettersNameTheFieldAndWhatTheyExpected) {
  ConfigDict c;
  c.set("units", 3).set("rate", 0.5).set("name", "d").set("shape", std::vector<int64_t>{2, 3});
  EXPECT_EQ(c.get_int("units"), 3);
  EXPECT_EQ(c.get_double("units"), 3.0);
  EXPECT_EQ(c.get_ints("shape"), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(c.get_int("missing", 7), 7);
  auto message = [&](auto f) {
    try {
      f();
    } catch (const InvalidArgument& e) {
      return e.message();
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([&] { c.get_int("rate"); }),
            "config field \"rate\": expected an integer, got a number 0.5");
  EXPECT_EQ(message([&] { c.get_string("units"); }),
            "config field \"units\": expected a string, got an integer 3");
  EXPECT_EQ(message([&] { c.get_bool("nope"); }), "config field \"nope\" is missing");
  EXPECT_THAT(message([] { ConfigDict::from_json("{\"a\": }"); }),
              HasSubstr("not valid JSON at byte 7"));
  EXPECT_EQ(message([] { ConfigDict::from_json("[1]"); }), "expected a JSON object, got a list");
  EXPECT_EQ(ConfigDict::from_json(c.to_json()), c);
}

}  // namespace
}  // namespace weft::nn
