#include "weft/core/config.h"

#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <mutex>
#include <string>

#include "weft/core/errors.h"

namespace weft::config {
namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  long n = std::strtol(v, &end, 10);
  WEFT_CHECK(*end == '\0' && n >= 0, InvalidArgument)
      << "environment variable " << name << "=\"" << v << "\" is not a non-negative integer";
  return static_cast<int>(n);
}

// As TensorFlow reads TF_DETERMINISTIC_OPS: "1"/"true" or "0"/"false" (any case); unset or empty
// is `fallback`.
bool env_bool(const char* name, bool fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  std::string s(v);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  WEFT_CHECK(s == "1" || s == "true" || s == "0" || s == "false", InvalidArgument)
      << "environment variable " << name << "=\"" << v << "\" is not 1, true, 0 or false";
  return s == "1" || s == "true";
}

struct Settings {
  std::atomic<int> threads;
  std::atomic<int> logical_cpus{1};
  std::atomic<int> micro_batches{kDefaultMicroBatches};
  std::atomic<bool> deterministic;
  std::mutex policy_mu;
  std::string policy = "float32";
  Settings() {
    int n = env_int("WEFT_NUM_THREADS", 0);
    threads = n > 0 ? n : hardware_threads();
    deterministic =
        env_bool("WEFT_DETERMINISTIC", false) || env_bool("TF_DETERMINISTIC_OPS", false);
  }
};

Settings& settings() {
  static Settings s;
  return s;
}

}  // namespace

int hardware_threads() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  return omp_get_num_procs();
}

namespace {
thread_local int thread_budget = 0;  // 0: none
}  // namespace

void set_num_threads(int n) {
  WEFT_CHECK(n >= 1, InvalidArgument) << "set_num_threads: expected n >= 1, got " << n;
  settings().threads = n;
}
int num_threads() { return thread_budget > 0 ? thread_budget : settings().threads.load(); }

ThreadBudget::ThreadBudget(int n) : previous_(thread_budget) {
  WEFT_CHECK(n >= 1, InvalidArgument) << "ThreadBudget: expected n >= 1, got " << n;
  thread_budget = n;
}
ThreadBudget::~ThreadBudget() { thread_budget = previous_; }

void set_logical_cpu_devices(int n) {
  WEFT_CHECK(n >= 1, InvalidArgument) << "set_logical_cpu_devices: expected n >= 1, got " << n;
  settings().logical_cpus = n;
}
int logical_cpu_devices() { return settings().logical_cpus; }
std::vector<std::string> list_logical_devices() {
  std::vector<std::string> out;
  for (int i = 0; i < logical_cpu_devices(); ++i) {
    out.push_back("/job:localhost/replica:0/task:0/device:CPU:" + std::to_string(i));
  }
  return out;
}

namespace {

// The index of a logical CPU device named in any of TensorFlow's spellings (any case):
// "[/job:localhost/replica:0/task:0][/device:|/]cpu:N".
int device_index(const std::string& name, const std::string& who) {
  std::string n;
  for (char c : name) n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto strip = [&](const std::string& prefix) {
    if (n.rfind(prefix, 0) != 0) return false;
    n.erase(0, prefix.size());
    return true;
  };
  strip("/job:localhost/replica:0/task:0");
  if (!strip("/device:")) strip("/");
  bool ok = strip("cpu:") && !n.empty() && n.size() < 7 &&
            std::all_of(n.begin(), n.end(), [](char c) { return c >= '0' && c <= '9'; });
  WEFT_CHECK(ok, InvalidArgument) << who << ": \"" << name
                                  << "\" is not a CPU device name (expected \"/cpu:N\" or "
                                  << "\"/job:localhost/replica:0/task:0/device:CPU:N\")";
  int index = std::stoi(n);
  int count = logical_cpu_devices();
  WEFT_CHECK(index < count, InvalidArgument)
      << who << ": device \"" << name << "\" does not exist: there are " << count
      << " logical CPU devices (weft::config::set_logical_cpu_devices)";
  return index;
}

}  // namespace

std::vector<std::string> resolve_logical_devices(const std::vector<std::string>& names,
                                                 const std::string& who) {
  std::vector<std::string> all = list_logical_devices();
  if (names.empty()) return all;
  std::vector<int> seen;
  std::vector<std::string> out;
  for (const std::string& name : names) {
    int i = device_index(name, who);
    WEFT_CHECK(std::find(seen.begin(), seen.end(), i) == seen.end(), InvalidArgument)
        << who << ": device \"" << name << "\" is given twice";
    seen.push_back(i);
    out.push_back(all[static_cast<size_t>(i)]);
  }
  return out;
}

std::string data_dir() {
  static const std::string dir = [] {
    const char* v = std::getenv("WEFT_DATA_DIR");
    return std::string(v != nullptr && *v != '\0' ? v : "/usr/share/datasets");
  }();
  return dir;
}

std::string openmp_wait_policy() {
  std::string out;
  for (const char* name : {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT"}) {
    const char* v = std::getenv(name);
    if (v == nullptr) continue;
    out += (out.empty() ? "" : " ") + std::string(name) + "=" + v;
  }
  return out.empty() ? "libgomp's default" : out;
}

void set_micro_batches(int n) {
  WEFT_CHECK(n >= 1, InvalidArgument) << "set_micro_batches: expected n >= 1, got " << n;
  settings().micro_batches = n;
}
int micro_batches() { return settings().micro_batches; }

void enable_op_determinism() { settings().deterministic = true; }
void disable_op_determinism() { settings().deterministic = false; }
bool op_determinism_enabled() { return settings().deterministic; }

void set_default_policy(const std::string& name) {
  std::lock_guard lock(settings().policy_mu);
  settings().policy = name;
}
std::string default_policy() {
  std::lock_guard lock(settings().policy_mu);
  return settings().policy;
}

}  // namespace weft::config
