// How the coordination service words a task's failure, which every task hears the same.
#pragma once

#include <string>

namespace weft::distribute::coordination::internal {

// The cluster's failure as every task hears it: "task worker:1 failed: <why>".
inline std::string failure_of(const std::string& task, const std::string& why) {
  return "task " + task + " failed: " + why;
}
// The task a failure_of() names ("worker:1"); empty for any other text.
inline std::string task_of_failure(const std::string& failure) {
  const std::string head = "task ";
  auto end = failure.find(" failed: ");
  if (failure.rfind(head, 0) != 0 || end == std::string::npos) return "";
  return failure.substr(head.size(), end - head.size());
}

}  // namespace weft::distribute::coordination::internal
