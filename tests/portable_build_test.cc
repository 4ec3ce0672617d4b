// A default build runs on a CPU without AVX-512: the `weft` command, under QEMU's emulation of a
// Haswell (AVX2, no AVX-512), trains the MLP in float16 mixed precision (the loops whose AVX-512
// copies matter most), saves it and predicts with it; the model it saved evaluates natively to the
// same accuracy. tests/CMakeLists.txt builds this only for the default WEFT_MARCH.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>

#include "tests/cli_helpers.h"

namespace weft_cli_test {
namespace {

Result under_haswell(const std::string& args) {
  Result r = shell("timeout 600 " + std::string(WEFT_QEMU) + " -cpu Haswell " + WEFT_BINARY_DIR +
                   "/weft " + args);
  // QEMU warns about CPU features its emulator leaves out; only the command's lines are kept.
  std::istringstream lines(r.output);
  std::string kept;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("qemu-x86_64: warning", 0) != 0) kept += line + "\n";
  }
  return {r.status, kept};
}

double accuracy_in(const std::string& output) {
  std::smatch m;
  return std::regex_search(output, m, std::regex("test accuracy ([0-9.]+)")) ? std::stod(m[1]) : -1;
}

TEST(PortableBuild, TheWeftCommandRunsOnACpuWithoutAvx512) {
  fs::path dir = fs::temp_directory_path() / ("weft_portable_" + std::to_string(getpid()));
  fs::remove_all(dir);
  write_dataset(dir / "data", 256, 100);
  std::string data = " --dataset " + (dir / "data").string();

  Result info = under_haswell("info");
  ASSERT_EQ(info.status, 0) << info.output;
  EXPECT_THAT(info.output, testing::HasSubstr("cpu isa: avx2\n"));

  Result train = under_haswell("train --epochs 1 --batch-size 64 --mixed-precision f16" + data +
                               " --save-model " + (dir / "model").string());
  ASSERT_EQ(train.status, 0) << train.output;
  double trained = accuracy_in(train.output);
  EXPECT_GT(trained, 0.5) << train.output;

  std::string x = (dir / "x.npy").string(), y = (dir / "y.npy").string();
  Result make_x =
      shell(std::string(WEFT_PYTHON) + " -c \"import gzip, numpy as np; d = gzip.open('" +
            (dir / "data/t10k-images-idx3-ubyte.gz").string() + "').read(); np.save('" + x +
            "', (np.frombuffer(d, np.uint8, offset=16)"
            ".reshape(-1, 28, 28, 1) / np.float32(255)).astype(np.float32))\"");
  ASSERT_EQ(make_x.status, 0) << make_x.output;
  Result predict =
      under_haswell("predict " + (dir / "model").string() + " --input " + x + " --output " + y);
  ASSERT_EQ(predict.status, 0) << predict.output;
  EXPECT_EQ(predict.output, "wrote " + y + ": (100, 10) float32\n");

  // The model saved on the AVX2 machine, evaluated on this one: the same accuracy, up to an
  // example whose logits the two machines' GEMMs round apart.
  Result eval = run("evaluate " + (dir / "model").string() + data);
  ASSERT_EQ(eval.status, 0) << eval.output;
  EXPECT_NEAR(accuracy_in(eval.output), trained, 1.0 / 100 + 1e-9) << eval.output;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace weft_cli_test
