// `weft evaluate DIR` and `weft predict DIR`: what a saved model (weft/nn/saving.h, written by
// `weft train --save-model DIR` or Model::save) does without a line of C++. evaluate prints the
// loss and metrics of the saved compile settings on a dataset's test split, in the words `weft
// train` prints them; predict runs the model on an .npy array and writes its outputs as one.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "tools/weft/commands.h"
#include "tools/weft/flags.h"
#include "weft/checkpoint/checkpoint_io.h"
#include "weft/core/config.h"
#include "weft/core/errors.h"
#include "weft/nn/saving.h"
#include "weft/np/np.h"
#include "weft/ops/cast.h"
#include "weft/train/checkpoint.h"

namespace weft::cli {
namespace {

struct ModelFlags {
  std::string dir, dataset = "fashion_mnist", input, output, weights;
  int64_t batch_size = 0;  // each command sets its default
  int threads = 0;
};

void evaluate(const ModelFlags& f) {
  apply_threads_flag(f.threads);
  nn::Model model = nn::load_model(f.dir);
  WEFT_CHECK(model.compiled(), FailedPrecondition)
      << f.dir << " was saved without compile settings (include_optimizer = false), so it has no "
      << "loss or metrics to evaluate; use `weft predict` for its outputs";
  data::Dataset test = load_dataset(f.dataset).test.batch(f.batch_size);
  if (!f.weights.empty()) {
    // Keras's load_weights: a training checkpoint's "model" object (weft train --checkpoint-dir
    // or --backup-dir, on one process or a cluster), a directory's newest or the one named.
    const std::filesystem::path path(f.weights);
    const bool one = std::filesystem::exists(path / checkpoint::kIndexFileName);
    train::Checkpoint checkpoint({{"model", &model}}, one ? path.parent_path().string() : f.weights,
                                 /*max_to_keep=*/0);
    std::optional<std::string> chosen = one ? std::optional(f.weights) : checkpoint.latest();
    WEFT_CHECK(chosen.has_value(), InvalidArgument)
        << "--weights: " << f.weights << " holds no checkpoint";
    checkpoint.restore(*chosen);
  }
  std::map<std::string, double> result = model.evaluate(test);
  std::printf("test loss %.4f", result.at("loss"));
  for (const auto& [name, value] : result) {
    if (name != "loss") std::printf(", test %s %.4f", name.c_str(), value);
  }
  std::printf("\nweights %s\n", model.weights_fingerprint().c_str());
}

// The shape (batch dimension dropped) and dtype the model's single input takes.
std::pair<Shape, DType> input_spec(const nn::Model& model) {
  std::vector<nn::KerasTensor> inputs = model.inputs();
  if (!inputs.empty()) {
    WEFT_CHECK(inputs.size() == 1, InvalidArgument)
        << "weft predict: the model takes " << inputs.size()
        << " inputs; weft predict feeds one (use Model::predict from C++)";
    Shape s = inputs[0].shape();
    return {Shape(s.begin() + 1, s.end()), inputs[0].dtype()};
  }
  std::vector<Shape> built = model.impl().built_input_shapes();
  WEFT_ASSERT(built.size() == 1) << "a loaded Sequential model is built for one input";
  return {built[0], kFloat32};
}

void predict(const ModelFlags& f) {
  apply_threads_flag(f.threads);
  nn::Model model = nn::load_model(f.dir, {.compile = false});
  auto [shape, dtype] = input_spec(model);
  Tensor x = np::load(f.input);
  Shape got = x.shape();
  WEFT_CHECK(x.rank() >= 1 && Shape(got.begin() + 1, got.end()) == shape, InvalidArgument)
      << "weft predict: " << f.input << " holds an array of shape " << shape_str(got)
      << "; the model takes (N, " << shape_str(shape).substr(1);
  if (x.dtype() != dtype) x = cast(x, dtype);
  Tensor y = model.predict(x, f.batch_size);
  np::save(f.output, y);
  std::printf("wrote %s: %s %s\n", f.output.c_str(), shape_str(y.shape()).c_str(),
              std::string(dtype_name(y.dtype())).c_str());
}

}  // namespace

void add_evaluate(CLI::App& app) {
  auto f = std::make_shared<ModelFlags>();
  f->batch_size = 512;  // as weft train evaluates
  auto* cmd =
      app.add_subcommand("evaluate", "Loss and metrics of a saved model on a dataset's test split");
  cmd->add_option("DIR", f->dir, "A saved model (weft train --save-model DIR)")->required();
  cmd->add_option("--dataset", f->dataset, "fashion_mnist, cifar10, or a directory of IDX files");
  cmd->add_option("--batch-size", f->batch_size, "examples per batch")->check(at_least(1));
  cmd->add_option("--weights", f->weights,
                  "restore the weights from a training checkpoint first (weft train "
                  "--checkpoint-dir or --backup-dir: a directory's newest, or one checkpoint)");
  cmd->add_option("--threads", f->threads, "threads for the kernels (default: every core)")
      ->check(at_least(1))
      ->default_str("");
  cmd->callback([f] { evaluate(*f); });
}

void add_predict(CLI::App& app) {
  auto f = std::make_shared<ModelFlags>();
  f->batch_size = 32;  // Keras's predict
  auto* cmd = app.add_subcommand("predict", "Run a saved model on an .npy array");
  cmd->add_option("DIR", f->dir, "A saved model (weft train --save-model DIR)")->required();
  cmd->add_option("--input", f->input, "an .npy array of shape (N, the model's input shape)")
      ->required();
  cmd->add_option("--output", f->output, "where to write the outputs (.npy)")->required();
  cmd->add_option("--batch-size", f->batch_size, "examples per batch")->check(at_least(1));
  cmd->add_option("--threads", f->threads, "threads for the kernels (default: every core)")
      ->check(at_least(1))
      ->default_str("");
  cmd->callback([f] { predict(*f); });
}

}  // namespace weft::cli
