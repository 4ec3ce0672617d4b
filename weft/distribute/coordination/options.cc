#include "weft/distribute/coordination/options.h"

#include "weft/core/errors.h"

namespace weft::distribute::coordination {

const char* to_string(TaskState state) {
  switch (state) {
    case TaskState::kUnregistered:
      return "unregistered";
    case TaskState::kConnected:
      return "connected";
    case TaskState::kLost:
      return "lost";
    case TaskState::kLeft:
      return "left";
  }
  return "unknown";
}

const TaskStatus& TaskStates::of(const std::string& task) const {
  for (const auto& t : tasks) {
    if (t.task == task) return t;
  }
  std::string names;
  for (const auto& t : tasks) names += (names.empty() ? "" : ", ") + t.task;
  throw InvalidArgument("unknown task '" + task + "'; the cluster's tasks are " + names);
}

}  // namespace weft::distribute::coordination
