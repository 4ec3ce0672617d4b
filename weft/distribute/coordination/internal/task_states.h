// TaskStates from the service's answer (service.cc and client.cc).
#pragma once

#include "weft/distribute/coordination/coordination.pb.h"
#include "weft/distribute/coordination/options.h"

namespace weft::distribute::coordination::internal {

inline TaskStates task_states_of(const ::weft::coordination::GetTaskStatesResponse& r) {
  TaskStates states;
  states.generation = r.generation();
  for (const auto& t : r.tasks()) {
    states.tasks.push_back(
        {t.task(), static_cast<TaskState>(t.state()), t.incarnation(), t.error()});
  }
  return states;
}

}  // namespace weft::distribute::coordination::internal
