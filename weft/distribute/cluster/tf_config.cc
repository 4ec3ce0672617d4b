#include "weft/distribute/cluster/tf_config.h"

#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "weft/core/errors.h"

namespace weft::distribute::cluster_resolver {
namespace {

using nlohmann::json;

// "an object", "the string \"1\"", "1.5": what a field held instead, for messages.
std::string describe(const json& v) {
  if (v.is_string()) return "the string " + v.dump();
  if (v.is_object()) return "an object";
  if (v.is_array()) return "an array";
  if (v.is_null()) return "null";
  return v.dump();
}

}  // namespace

TFConfigClusterResolver::TFConfigClusterResolver() {
  const char* text = std::getenv("TF_CONFIG");
  if (text != nullptr && *text != '\0') *this = from_json(text);
}

TFConfigClusterResolver TFConfigClusterResolver::from_json(const std::string& tf_config,
                                                           const std::string& source) {
  json config;
  try {
    config = json::parse(tf_config);
  } catch (const json::parse_error& e) {
    WEFT_FAIL(InvalidArgument) << source << ": invalid JSON at byte " << e.byte << ": " << e.what();
  }
  WEFT_CHECK(config.is_object(), InvalidArgument)
      << source << ": expected a JSON object {\"cluster\": ..., \"task\": ...}, got "
      << describe(config);

  auto cluster = config.find("cluster");
  WEFT_CHECK(cluster != config.end(), InvalidArgument)
      << source << ": no \"cluster\" field; expected {\"cluster\": {\"worker\": [\"host:port\", "
      << "...]}, \"task\": {\"type\": \"worker\", \"index\": 0}}";
  WEFT_CHECK(cluster->is_object(), InvalidArgument)
      << source << ": cluster must be an object of jobs, got " << describe(*cluster);
  std::map<std::string, std::vector<std::string>> jobs;
  for (const auto& [job, tasks] : cluster->items()) {
    WEFT_CHECK(tasks.is_array(), InvalidArgument)
        << source << ": cluster." << job << " must be a list of \"host:port\", got "
        << describe(tasks);
    for (size_t i = 0; i < tasks.size(); ++i) {
      WEFT_CHECK(tasks[i].is_string(), InvalidArgument)
          << source << ": cluster." << job << "[" << i << "] must be a \"host:port\" string, got "
          << describe(tasks[i]);
      jobs[job].push_back(tasks[i].get<std::string>());
    }
    jobs.try_emplace(job);  // an empty job too, which ClusterSpec names
  }

  TFConfigClusterResolver r{Unread{}};
  try {
    r.cluster_ = ClusterSpec(std::move(jobs));
  } catch (const InvalidArgument& e) {
    WEFT_FAIL(InvalidArgument) << source << ": " << e.message();
  }

  auto task = config.find("task");
  WEFT_CHECK(task != config.end(), InvalidArgument)
      << source << ": no \"task\" field; expected \"task\": {\"type\": \"worker\", \"index\": 0}";
  WEFT_CHECK(task->is_object(), InvalidArgument)
      << source << ": task must be an object {\"type\": ..., \"index\": ...}, got "
      << describe(*task);
  auto type = task->find("type");
  WEFT_CHECK(type != task->end(), InvalidArgument) << source << ": task has no \"type\"";
  WEFT_CHECK(type->is_string(), InvalidArgument)
      << source << ": task.type must be a string, got " << describe(*type);
  r.task_type_ = type->get<std::string>();
  bool known = false;
  for (const char* t : kTaskTypes) known = known || r.task_type_ == t;
  WEFT_CHECK(known, InvalidArgument) << source << ": unknown task.type \"" << r.task_type_
                                     << "\"; expected chief, worker, ps or evaluator";

  auto index = task->find("index");
  if (index != task->end()) {
    WEFT_CHECK(index->is_number_integer(), InvalidArgument)
        << source << ": task.index must be an integer, got " << describe(*index);
    WEFT_CHECK(index->get<int64_t>() >= 0, InvalidArgument)
        << source << ": task.index " << index->get<int64_t>() << " is negative";
    WEFT_CHECK(index->get<int64_t>() < (int64_t{1} << 30), InvalidArgument)
        << source << ": task.index " << index->get<int64_t>() << " is out of range";
    r.task_id_ = static_cast<int>(index->get<int64_t>());
  }
  // The evaluator runs beside the cluster and need not be in it (as in TensorFlow).
  int tasks = r.cluster_.num_tasks(r.task_type_);
  if (r.task_type_ != "evaluator" || tasks > 0) {
    WEFT_CHECK(tasks > 0, InvalidArgument)
        << source << ": task.type \"" << r.task_type_ << "\" has no job in cluster";
    WEFT_CHECK(r.task_id_ < tasks, InvalidArgument)
        << source << ": task.index " << r.task_id_ << " is out of range: cluster." << r.task_type_
        << " has " << tasks << (tasks == 1 ? " task" : " tasks");
  }

  for (auto [field, out] :
       {std::pair{"rpc_layer", &r.rpc_layer_}, std::pair{"environment", &r.environment_}}) {
    auto it = config.find(field);
    if (it == config.end()) continue;
    WEFT_CHECK(it->is_string(), InvalidArgument)
        << source << ": " << field << " must be a string, got " << describe(*it);
    *out = it->get<std::string>();
  }
  return r;
}

bool TFConfigClusterResolver::is_chief() const {
  if (task_type_.empty()) return true;
  if (cluster_.num_tasks("chief") > 0) return task_type_ == "chief";
  return task_type_ == "worker" && task_id_ == 0;
}

int TFConfigClusterResolver::num_workers() const {
  if (cluster_.empty()) return 1;
  return cluster_.num_tasks("chief") + cluster_.num_tasks("worker");
}

}  // namespace weft::distribute::cluster_resolver
