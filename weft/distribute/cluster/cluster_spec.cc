#include "weft/distribute/cluster/cluster_spec.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <iterator>

#include "weft/core/errors.h"

namespace weft::distribute {
namespace {

bool known_task_type(const std::string& type) {
  return std::find_if(std::begin(kTaskTypes), std::end(kTaskTypes),
                      [&](const char* t) { return type == t; }) != std::end(kTaskTypes);
}

std::string task_types_list() { return "chief, worker, ps or evaluator"; }

// RFC 1123 host name: dot-separated labels of letters, digits and inner hyphens.
bool valid_host_name(const std::string& host) {
  if (host.empty() || host.size() > 253) return false;
  size_t start = 0;
  while (true) {
    size_t end = host.find('.', start);
    std::string label =
        host.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') {
      return false;
    }
    for (char c : label) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
    }
    if (end == std::string::npos) return true;
    start = end + 1;
  }
}

bool all_digits_and_dots(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
  });
}

}  // namespace

HostPort parse_host_port(const std::string& address, std::string* why) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos) {
    *why = "no \":port\"";
    return {};
  }
  std::string host = address.substr(0, colon);
  std::string port = address.substr(colon + 1);
  if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c));
      })) {
    *why = "port \"" + port + "\" is not a number";
    return {};
  }
  int number = std::stoi(port);
  if (number < 1 || number > 65535) {
    *why = "port " + port + " is not in 1-65535";
    return {};
  }
  bool valid = false;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    in6_addr v6;
    valid = inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(), &v6) == 1;
  } else if (!host.empty() && all_digits_and_dots(host)) {
    in_addr v4;
    valid = inet_pton(AF_INET, host.c_str(), &v4) == 1;
  } else {
    valid = valid_host_name(host);
  }
  if (!valid) {
    *why = host.empty() ? "no host" : "host \"" + host + "\" is not a host name or IP address";
    if (host.find(':') != std::string::npos && host.front() != '[') {
      *why += " (write IPv6 addresses in brackets: \"[::1]:2222\")";
    }
    return {};
  }
  return {host, number};
}

std::string listen_host(const std::string& address) {
  std::string why;
  std::string host = parse_host_port(address, &why).host;
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  return host;
}

ClusterSpec::ClusterSpec(std::map<std::string, std::vector<std::string>> jobs)
    : jobs_(std::move(jobs)) {
  std::map<std::string, std::string> seen;  // address -> "job[index]"
  for (const auto& [job, tasks] : jobs_) {
    WEFT_CHECK(known_task_type(job), InvalidArgument)
        << "cluster: unknown job \"" << job << "\"; expected " << task_types_list();
    WEFT_CHECK(!tasks.empty(), InvalidArgument)
        << "cluster." << job << " is empty; a job lists at least one \"host:port\"";
    WEFT_CHECK(job != "chief" || tasks.size() == 1, InvalidArgument)
        << "cluster.chief has " << tasks.size() << " tasks; a cluster has at most one chief";
    for (size_t i = 0; i < tasks.size(); ++i) {
      std::string where = job + "[" + std::to_string(i) + "]";
      std::string why;
      WEFT_CHECK(!parse_host_port(tasks[i], &why).host.empty(), InvalidArgument)
          << "cluster." << where << " \"" << tasks[i] << "\" is not \"host:port\": " << why;
      auto [it, fresh] = seen.emplace(tasks[i], where);
      WEFT_CHECK(fresh, InvalidArgument)
          << "cluster." << where << " \"" << tasks[i] << "\" is also cluster." << it->second
          << "; every task needs its own address";
    }
  }
}

std::vector<std::string> ClusterSpec::jobs() const {
  std::vector<std::string> names;
  for (const auto& [job, tasks] : jobs_) names.push_back(job);
  return names;
}

int ClusterSpec::num_tasks(const std::string& job) const {
  auto it = jobs_.find(job);
  return it == jobs_.end() ? 0 : static_cast<int>(it->second.size());
}

const std::vector<std::string>& ClusterSpec::job_tasks(const std::string& job) const {
  auto it = jobs_.find(job);
  WEFT_CHECK(it != jobs_.end(), InvalidArgument) << "ClusterSpec: no job \"" << job << "\"";
  return it->second;
}

const std::string& ClusterSpec::task_address(const std::string& job, int index) const {
  const std::vector<std::string>& tasks = job_tasks(job);
  WEFT_CHECK(index >= 0 && index < static_cast<int>(tasks.size()), InvalidArgument)
      << "ClusterSpec: task " << index << " of job \"" << job << "\" does not exist (it has "
      << tasks.size() << ")";
  return tasks[static_cast<size_t>(index)];
}

}  // namespace weft::distribute
