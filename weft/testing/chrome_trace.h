// For tests: checks a trace against the Chrome trace event format (the "Trace Event Format"
// document that chrome://tracing, Perfetto and TensorBoard's trace viewer follow). Header-only.
//
//   EXPECT_THAT(weft::testing::chrome_trace_problems(doc), ::testing::IsEmpty());
//
// What it checks: the document is an object with a traceEvents array; every event has a string
// "ph" and an integer "pid"; `X` events have numeric "ts" and "dur" >= 0 and a "tid", and the `X`
// events of one thread nest (none overlaps another without enclosing or lying inside it); `B`/`E`
// pairs nest per thread and none is left open; `M` events name a process or thread; flow events
// (`s`, `t`, `f`) have an "id" and a "ts", each id has one `s` and one `f` (in that order of
// time), and each lies inside an `X` event of its thread (what it binds to).
#pragma once

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace weft::testing {

inline std::vector<std::string> chrome_trace_problems(const nlohmann::json& doc) {
  std::vector<std::string> problems;
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array()) {
    return {"not an object with a traceEvents array"};
  }
  using Thread = std::pair<int64_t, int64_t>;
  std::map<Thread, std::vector<std::pair<double, double>>> slices;  // X: (ts, end)
  std::map<Thread, std::vector<std::string>> open;                  // B names
  struct Flow {
    int starts = 0, ends = 0;
    double start_ts = 0, end_ts = 0;
  };
  std::map<std::string, Flow> flows;
  std::vector<std::tuple<Thread, double, std::string>> flow_points;
  int index = -1;
  for (const nlohmann::json& e : doc["traceEvents"]) {
    ++index;
    const std::string at = "event " + std::to_string(index);
    if (!e.is_object() || !e.contains("ph") || !e["ph"].is_string()) {
      problems.push_back(at + ": no \"ph\"");
      continue;
    }
    if (!e.contains("pid") || !e["pid"].is_number_integer()) {
      problems.push_back(at + ": no integer \"pid\"");
      continue;
    }
    const std::string ph = e["ph"];
    const Thread thread{e["pid"].get<int64_t>(), e.value("tid", int64_t{0})};
    const bool has_ts = e.contains("ts") && e["ts"].is_number();
    if (ph == "X") {
      if (!has_ts || !e.contains("dur") || !e["dur"].is_number() || e["dur"].get<double>() < 0 ||
          !e.contains("tid")) {
        problems.push_back(at + ": an X event needs ts, dur >= 0 and tid");
        continue;
      }
      const double ts = e["ts"];
      slices[thread].push_back({ts, ts + e["dur"].get<double>()});
    } else if (ph == "B") {
      open[thread].push_back(e.value("name", ""));
    } else if (ph == "E") {
      if (open[thread].empty()) {
        problems.push_back(at + ": an E event with no B open on its thread");
      } else {
        open[thread].pop_back();
      }
    } else if (ph == "M") {
      if (!e.contains("name") || !e.contains("args"))
        problems.push_back(at + ": M without name/args");
    } else if (ph == "s" || ph == "t" || ph == "f") {
      if (!has_ts || !e.contains("id")) {
        problems.push_back(at + ": a flow event needs id and ts");
        continue;
      }
      const std::string id = e["id"].dump() + "/" + e.value("cat", "");
      Flow& f = flows[id];
      if (ph == "s") {
        ++f.starts;
        f.start_ts = e["ts"];
      } else if (ph == "f") {
        ++f.ends;
        f.end_ts = e["ts"];
      }
      flow_points.emplace_back(thread, e["ts"].get<double>(), at);
    } else {
      problems.push_back(at + ": unknown ph \"" + ph + "\"");
    }
  }
  for (const auto& [thread, names] : open) {
    if (!names.empty()) problems.push_back("B event \"" + names.back() + "\" never ended");
  }
  for (auto& [thread, list] : slices) {
    std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second > b.second;
    });
    std::vector<double> ends;
    for (const auto& [ts, end] : list) {
      while (!ends.empty() && ends.back() <= ts) ends.pop_back();
      // 1 ns of slack: times are written in microseconds with three decimals.
      if (!ends.empty() && end > ends.back() + 1e-3) {
        problems.push_back("pid " + std::to_string(thread.first) + " tid " +
                           std::to_string(thread.second) +
                           ": X events overlap without nesting at " + std::to_string(ts));
        break;
      }
      ends.push_back(end);
    }
  }
  for (const auto& [id, f] : flows) {
    if (f.starts != 1 || f.ends != 1 || f.end_ts < f.start_ts) {
      problems.push_back("flow " + id + ": " + std::to_string(f.starts) + " starts and " +
                         std::to_string(f.ends) + " ends (one each, start first)");
    }
  }
  for (const auto& point : flow_points) {
    const auto& list = slices[std::get<0>(point)];
    const double ts = std::get<1>(point);  // (not a structured binding: Clang 14 captures none)
    bool inside = std::any_of(list.begin(), list.end(),
                              [ts](const auto& s) { return s.first <= ts && ts <= s.second; });
    if (!inside) {
      problems.push_back(std::get<2>(point) + ": a flow event outside every X event of its thread");
    }
  }
  return problems;
}

}  // namespace weft::testing
