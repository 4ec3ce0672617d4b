#include "weft/distribute/cluster/slurm.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>

#include "weft/core/errors.h"

extern char** environ;

namespace weft::distribute::cluster_resolver {
namespace {

bool all_digits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

// Splits at the commas outside brackets.
std::vector<std::string> split_top_level(const std::string& s) {
  std::vector<std::string> parts(1);
  int depth = 0;
  for (char c : s) {
    depth += c == '[' ? 1 : c == ']' ? -1 : 0;
    if (c == ',' && depth == 0) {
      parts.emplace_back();
    } else {
      parts.back() += c;
    }
  }
  return parts;
}

// One item of a host list: "rack[1-2]-n[01,03]" -> rack1-n01, rack1-n03, rack2-n01, rack2-n03.
std::vector<std::string> expand_item(const std::string& item, const std::string& variable,
                                     const std::string& list) {
  auto open = item.find('[');
  if (open == std::string::npos) {
    WEFT_CHECK(item.find(']') == std::string::npos, InvalidArgument)
        << variable << " '" << list << "': a ']' without its '['";
    return {item};
  }
  auto close = item.find(']', open);
  WEFT_CHECK(close != std::string::npos, InvalidArgument)
      << variable << " '" << list << "': a '[' without its ']'";
  std::vector<std::string> tails = expand_item(item.substr(close + 1), variable, list);
  std::vector<std::string> out;
  for (const std::string& range : split_top_level(item.substr(open + 1, close - open - 1))) {
    auto dash = range.find('-');
    std::string lo = range.substr(0, dash);
    std::string hi = dash == std::string::npos ? lo : range.substr(dash + 1);
    WEFT_CHECK(all_digits(lo) && all_digits(hi) && std::stoll(lo) <= std::stoll(hi),
               InvalidArgument)
        << variable << " '" << list << "': '" << range << "' is not a number or a range lo-hi";
    for (long long n = std::stoll(lo); n <= std::stoll(hi); ++n) {
      std::string number = std::to_string(n);
      if (number.size() < lo.size()) number.insert(0, lo.size() - number.size(), '0');
      for (const std::string& tail : tails) out.push_back(item.substr(0, open) + number + tail);
    }
  }
  return out;
}

std::map<std::string, std::string> this_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string v = *e;
    auto eq = v.find('=');
    if (v.rfind("SLURM_", 0) == 0 && eq != std::string::npos) {
      env[v.substr(0, eq)] = v.substr(eq + 1);
    }
  }
  return env;
}

// The step's variable, else the job's (an sbatch script outside srun).
std::string read(const std::map<std::string, std::string>& env, const std::string& step,
                 const std::string& job, std::string* name) {
  for (const std::string& n : {step, job}) {
    auto it = env.find(n);
    if (it != env.end() && !it->second.empty()) {
      *name = n;
      return it->second;
    }
  }
  throw InvalidArgument("SlurmClusterResolver: " + step +
                        (job == step ? "" : " (or " + job + ")") +
                        " is not set; run the command under srun");
}

int read_count(const std::map<std::string, std::string>& env, const std::string& step,
               const std::string& job) {
  std::string name;
  std::string text = read(env, step, job, &name);
  WEFT_CHECK(all_digits(text) && text.size() < 9, InvalidArgument)
      << "SlurmClusterResolver: " << name << " is '" << text << "', not a count";
  return std::stoi(text);
}

}  // namespace

std::vector<std::string> expand_hostlist(const std::string& list, const std::string& variable) {
  std::vector<std::string> hosts;
  for (const std::string& item : split_top_level(list)) {
    WEFT_CHECK(!item.empty(), InvalidArgument) << variable << " '" << list << "': an empty host";
    for (std::string& h : expand_item(item, variable, list)) hosts.push_back(std::move(h));
  }
  return hosts;
}

std::vector<int> expand_tasks_per_node(const std::string& counts, const std::string& variable) {
  std::vector<int> out;
  for (const std::string& item : split_top_level(counts)) {
    auto paren = item.find("(x");
    std::string count = item.substr(0, paren), times = "1";
    if (paren != std::string::npos) {
      WEFT_CHECK(item.back() == ')', InvalidArgument)
          << variable << " '" << counts << "': '" << item << "' is not N or N(xM)";
      times = item.substr(paren + 2, item.size() - paren - 3);
    }
    WEFT_CHECK(all_digits(count) && all_digits(times) && count.size() < 9 && times.size() < 9,
               InvalidArgument)
        << variable << " '" << counts << "': '" << item << "' is not N or N(xM)";
    out.insert(out.end(), static_cast<size_t>(std::stoi(times)), std::stoi(count));
  }
  return out;
}

SlurmClusterResolver::SlurmClusterResolver(SlurmOptions options)
    : SlurmClusterResolver(this_environment(), [&] {
        if (const char* base = std::getenv("WEFT_SLURM_PORT_BASE")) {
          std::string text = base;
          WEFT_CHECK(all_digits(text) && text.size() < 6 && std::stoi(text) >= 1 &&
                         std::stoi(text) <= 65535,
                     InvalidArgument)
              << "WEFT_SLURM_PORT_BASE is '" << text << "', not a port (1-65535)";
          options.port_base = std::stoi(text);
        }
        return options;
      }()) {}

SlurmClusterResolver::SlurmClusterResolver(const std::map<std::string, std::string>& env,
                                           SlurmOptions options) {
  const int tasks = read_count(env, "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS");
  const int rank = read_count(env, "SLURM_PROCID", "SLURM_PROCID");
  std::string nodes_var, counts_var;
  const std::string node_list = read(env, "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", &nodes_var);
  std::vector<std::string> nodes = expand_hostlist(node_list, nodes_var);
  std::vector<int> per_node = expand_tasks_per_node(
      read(env, "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE", &counts_var), counts_var);
  WEFT_CHECK(per_node.size() == nodes.size(), InvalidArgument)
      << "SlurmClusterResolver: " << nodes_var << " names " << nodes.size() << " nodes, "
      << counts_var << " counts tasks on " << per_node.size();
  const int counted = std::accumulate(per_node.begin(), per_node.end(), 0);
  WEFT_CHECK(counted == tasks, InvalidArgument)
      << "SlurmClusterResolver: " << counts_var << " counts " << counted << " tasks, the step has "
      << tasks;
  WEFT_CHECK(rank < tasks, InvalidArgument)
      << "SlurmClusterResolver: SLURM_PROCID " << rank << " is not one of the " << tasks
      << " tasks";
  WEFT_CHECK(options.port_base >= 1 && options.port_base + *std::max_element(per_node.begin(),
                                                                             per_node.end()) -
                                                   1 <= 65535,
             InvalidArgument)
      << "SlurmClusterResolver: port_base " << options.port_base << " leaves no port for every "
      << "task of a node";
  if (options.jobs.empty()) options.jobs = {{"worker", tasks}};
  int assigned = 0;
  for (const auto& [job, count] : options.jobs) assigned += count;
  WEFT_CHECK(assigned == tasks, InvalidArgument)
      << "SlurmClusterResolver: the jobs have " << assigned << " tasks, the step " << tasks;
  std::vector<std::string> addresses;
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (int i = 0; i < per_node[n]; ++i) {
      addresses.push_back(nodes[n] + ":" + std::to_string(options.port_base + i));
    }
  }
  std::map<std::string, std::vector<std::string>> jobs;
  int next = 0;
  for (const auto& [job, count] : options.jobs) {
    if (rank >= next && rank < next + count) {
      task_type_ = job;
      task_id_ = rank - next;
    }
    auto& list = jobs[job];
    list.insert(list.end(), addresses.begin() + next, addresses.begin() + next + count);
    next += count;
  }
  cluster_ = ClusterSpec(std::move(jobs));
}

bool SlurmClusterResolver::in_multi_task_step() {
  for (const char* name : {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') return std::atoi(v) > 1 && std::getenv("SLURM_PROCID");
  }
  return false;
}

}  // namespace weft::distribute::cluster_resolver
