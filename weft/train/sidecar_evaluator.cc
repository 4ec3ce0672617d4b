#include "weft/train/sidecar_evaluator.h"

#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>

#include "weft/core/errors.h"
#include "weft/train/checkpoint.h"
#include "weft/train/tensorboard_events.h"

namespace weft::train {
namespace {

// The step of checkpoint directory `dir` (`<name>-<step>`).
int64_t step_of(const std::string& dir) {
  const std::string name = std::filesystem::path(dir).filename().string();
  return std::stoll(name.substr(name.rfind('-') + 1));
}

}  // namespace

SidecarEvaluator::SidecarEvaluator(nn::Model model, data::Dataset data,
                                   SidecarEvaluatorOptions options)
    : model_(std::move(model)), data_(std::move(data)), options_(std::move(options)) {
  WEFT_CHECK(model_.compiled(), FailedPrecondition)
      << "SidecarEvaluator: the model must be compiled (its loss and metrics are what "
         "evaluation reports): call compile()";
  WEFT_CHECK(!options_.checkpoint_dir.empty(), InvalidArgument)
      << "SidecarEvaluator: checkpoint_dir is empty; give the directory the chief's "
         "checkpoints appear in";
  WEFT_CHECK(!options_.max_evaluations || *options_.max_evaluations > 0, InvalidArgument)
      << "SidecarEvaluator: max_evaluations must be positive, got " << *options_.max_evaluations;
}

std::vector<SidecarEvaluation> SidecarEvaluator::start() {
  // The variables exist before a checkpoint is restored into them.
  if (!model_.model().built()) {
    for (const data::Element& element : data_) {
      model_.model().build_on(element);
      break;
    }
  }
  Checkpoint checkpoint({{"model", &model_}}, options_.checkpoint_dir, /*max_to_keep=*/0);
  std::unique_ptr<EventFileWriter> events;
  if (!options_.log_dir.empty()) {
    events = std::make_unique<EventFileWriter>(options_.log_dir + "/evaluation");
  }
  std::vector<SidecarEvaluation> done;
  int64_t newest = -1;  // the step of the newest checkpoint looked at
  auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  auto finished = [&] {
    return (options_.final_step && newest >= *options_.final_step) ||
           (options_.max_evaluations &&
            static_cast<int64_t>(done.size()) >= *options_.max_evaluations);
  };
  while (!finished()) {
    std::optional<std::string> latest = checkpoint.latest();
    if (!latest || step_of(*latest) <= newest) {
      if (std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        continue;
      }
      WEFT_CHECK(!options_.final_step && !options_.max_evaluations, DeadlineExceeded)
          << "SidecarEvaluator: no checkpoint newer than "
          << (newest < 0 ? std::string("none") : "step " + std::to_string(newest))
          << " appeared in " << options_.checkpoint_dir << " within "
          << options_.timeout.count() / 1000.0 << " s"
          << (options_.final_step
                  ? " (waiting for step " + std::to_string(*options_.final_step) + ")"
                  : "");
      break;
    }
    newest = step_of(*latest);
    deadline = std::chrono::steady_clock::now() + options_.timeout;
    try {
      checkpoint.restore(*latest);
    } catch (const Error& e) {
      // Damaged, or deleted by the chief's max_to_keep while it was read: the next one will do.
      std::fprintf(stderr, "weft: evaluator: skipped %s: %s\n", latest->c_str(), e.what());
      continue;
    }
    SidecarEvaluation e{*latest, newest, model_.evaluate(data_)};
    if (options_.verbose > 0) {
      std::printf(
          "evaluator: %s (step %lld):", std::filesystem::path(*latest).filename().string().c_str(),
          static_cast<long long>(newest));
      for (const auto& [k, v] : e.logs) std::printf("  %s: %.4f", k.c_str(), v);
      std::printf("\n");
      std::fflush(stdout);
    }
    if (events) {
      for (const auto& [k, v] : e.logs) events->add_scalar("evaluation_" + k, v, newest);
      events->flush();
    }
    done.push_back(std::move(e));
  }
  return done;
}

}  // namespace weft::train
