// Saved models across processes: a model saved by one program loads in a fresh one and predicts
// the same bits (saved_model_tool, whose custom layer both halves register; `weft predict` for the
// built-in models), `weft train --save-model` then `weft evaluate` and `weft predict` agree with
// training, and a model trained by two workers loads in one process.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/cli_helpers.h"

namespace weft_cli_test {
namespace {

std::string tool() { return std::string(WEFT_BINARY_DIR) + "/tests/saved_model_tool "; }

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// "test accuracy 0.8616" -> "0.8616". (Not std::regex: GCC 12 warns falsely inside <regex> in
// the sanitizer build.)
std::string accuracy_in(const std::string& output) {
  size_t at = output.find("test accuracy ");
  if (at == std::string::npos) return "";
  at += 14;
  return output.substr(at, output.find_first_not_of("0123456789.", at) - at);
}

class SavedModelCli : public testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        fs::temp_directory_path() / ("weft_saved_model_cli_" + std::to_string(getpid()) + "_" +
                                     testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(SavedModelCli, ModelsLoadInAFreshProcessAndPredictTheSameBits) {
  for (const char* kind : {"mlp", "cnn", "functional"}) {
    fs::path d = dir_ / kind;
    Result saved = shell("timeout 300 " + tool() + "save " + kind + " " + d.string());
    ASSERT_EQ(saved.status, 0) << kind << ": " << saved.output;
    std::string x = (d / "x.npy").string(), got = (d / "got.npy").string();
    // The built-in models through the weft command; the one with a custom layer through a
    // program that registers it.
    Result loaded =
        std::string(kind) == "functional"
            ? shell("timeout 300 " + tool() + "load " + (d / "model").string() + " " + x + " " +
                    got)
            : run("predict " + (d / "model").string() + " --input " + x + " --output " + got);
    ASSERT_EQ(loaded.status, 0) << kind << ": " << loaded.output;
    std::string expected = read_bytes(d / "expected.npy");
    EXPECT_GT(expected.size(), 45u * 10 * 4);
    EXPECT_EQ(read_bytes(got), expected) << kind << ": predictions differ after loading";
  }
  // weft inspect describes a saved model: its layers, their output shapes and parameters, the
  // compile settings, then the variables; one with a custom layer, from its config.
  Result inspect = run("inspect " + (dir_ / "mlp/model").string());
  ASSERT_EQ(inspect.status, 0) << inspect.output;
  EXPECT_THAT(inspect.output, testing::HasSubstr("dense (Dense)"));
  EXPECT_THAT(inspect.output, testing::HasSubstr("(None, 700)"));
  EXPECT_THAT(inspect.output, testing::HasSubstr("Total params: 905010"));
  EXPECT_THAT(inspect.output, testing::HasSubstr("compiled with optimizer Adam"));
  EXPECT_THAT(inspect.output, testing::HasSubstr("model/dense/kernel"));
  inspect = run("inspect --verify " + (dir_ / "functional/model").string());
  ASSERT_EQ(inspect.status, 0) << inspect.output;
  EXPECT_THAT(inspect.output, testing::HasSubstr("unknown layer class \"Scale\""));
  EXPECT_THAT(inspect.output, testing::ContainsRegex("scale +Scale +32\n"));
  EXPECT_THAT(inspect.output, testing::HasSubstr("verified: every checksum matches"));

  // Without the custom layer registered, the model is refused naming the file and the class.
  Result r = run("predict " + (dir_ / "functional/model").string() + " --input " +
                 (dir_ / "functional/x.npy").string() + " --output " + (dir_ / "y.npy").string());
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.output, testing::HasSubstr((dir_ / "functional/model/model.json").string()));
  EXPECT_THAT(r.output, testing::HasSubstr("unknown layer class \"Scale\""));
  EXPECT_THAT(r.output, testing::HasSubstr("register_layer"));
}

TEST_F(SavedModelCli, TrainSaveModelThenEvaluateAndPredictAgreeWithTraining) {
  write_dataset(dir_ / "data", 1000, 300);
  std::string data = " --dataset " + (dir_ / "data").string();
  for (const char* model : {"mlp", "cnn"}) {
    fs::path saved = dir_ / (std::string(model) + "_model");
    Result train = run(std::string("train --model ") + model + " --epochs 1 --batch-size 64" +
                       data + " --save-model " + saved.string());
    ASSERT_EQ(train.status, 0) << train.output;
    EXPECT_THAT(train.output, testing::HasSubstr("saved the model to " + saved.string()));
    std::string trained = accuracy_in(train.output);
    ASSERT_FALSE(trained.empty()) << train.output;

    Result eval = run("evaluate " + saved.string() + data);
    ASSERT_EQ(eval.status, 0) << eval.output;
    EXPECT_EQ(accuracy_in(eval.output), trained) << model << ": " << eval.output;
    // The loss too: the same line training printed, up to its weights fingerprint.
    std::string line = train.output.substr(train.output.find("test loss"));
    EXPECT_EQ(eval.output.substr(0, eval.output.find('\n')),
              line.substr(0, line.find(", weights")));

    // weft predict on the test images (as fashion_mnist() scales them), argmax against labels in
    // NumPy: the accuracy evaluate printed.
    std::string x = (dir_ / "x.npy").string(), y = (dir_ / "y.npy").string();
    std::string images = (dir_ / "data/t10k-images-idx3-ubyte.gz").string();
    std::string labels = (dir_ / "data/t10k-labels-idx1-ubyte.gz").string();
    Result make_x = shell(std::string(WEFT_PYTHON) +
                          " -c \"import gzip, numpy as np; "
                          "d = gzip.open('" +
                          images +
                          "').read(); "
                          "np.save('" +
                          x +
                          "', (np.frombuffer(d, np.uint8, offset=16)"
                          ".reshape(-1, 28, 28, 1) / np.float32(255)).astype(np.float32))\"");
    ASSERT_EQ(make_x.status, 0) << make_x.output;
    Result pred =
        run("predict " + saved.string() + " --input " + x + " --output " + y + " --batch-size 100");
    ASSERT_EQ(pred.status, 0) << pred.output;
    EXPECT_THAT(pred.output, testing::HasSubstr("(300, 10) float32"));
    Result acc = shell(std::string(WEFT_PYTHON) +
                       " -c \"import gzip, numpy as np; "
                       "y = np.load('" +
                       y +
                       "'); "
                       "l = np.frombuffer(gzip.open('" +
                       labels +
                       "').read(), np.uint8, offset=8); "
                       "print('%.4f' % (y.argmax(1) == l).mean())\"");
    ASSERT_EQ(acc.status, 0) << acc.output;
    EXPECT_EQ(acc.output, trained + "\n") << model;
  }
}

TEST_F(SavedModelCli, AModelTrainedByTwoWorkersLoadsInOneProcess) {
  write_dataset(dir_ / "data", 1000, 300);
  std::string data = " --dataset " + (dir_ / "data").string();
  fs::path saved = dir_ / "model", json = dir_ / "metrics.json";
  Result train =
      shell("timeout 300 " + std::string(WEFT_BINARY_DIR) +
            "/weft launch -n 2 -- weft train --strategy multi_worker --epochs 1 "
            "--batch-size 64 --quiet" +
            data + " --metrics-json " + json.string() + " --save-model " + saved.string());
  ASSERT_EQ(train.status, 0) << train.output;
  nlohmann::json metrics = read_json(json);
  EXPECT_EQ(metrics["workers"], 2);
  Result eval = run("evaluate " + saved.string() + data);
  ASSERT_EQ(eval.status, 0) << eval.output;
  char expected[32];
  std::snprintf(expected, sizeof(expected), "%.4f", metrics["test_accuracy"].get<double>());
  EXPECT_EQ(accuracy_in(eval.output), expected) << eval.output;
  // Only the chief wrote: no other worker's temporary directory is left beside it.
  int entries = 0;
  for (const auto& e : fs::directory_iterator(dir_)) entries += e.path().filename() != "data";
  EXPECT_EQ(entries, 2);  // the model and the metrics
}

}  // namespace
}  // namespace weft_cli_test
