#include "weft/profiler/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "weft/core/errors.h"
#include "weft/core/file_io.h"
#include "weft/profiler/trace_file.h"

namespace weft::profiler {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Event {
  double ts = 0, end = 0;
  int64_t tid = 0;
  std::string name, cat, id;
  int64_t step_num = -1;
};

// One task's events and threads.
struct Task {
  std::string name;
  std::vector<Event> events;
  std::map<int64_t, std::string> threads;
  std::vector<const Event*> steps;  // marked steps, by start
  int64_t thread_named(const std::string& name) const {
    for (const auto& [tid, n] : threads) {
      if (n == name) return tid;
    }
    return -1;
  }
};

const char* category_of(const std::string& cat) {
  if (cat == "op" || cat == "compute") return "compute";
  if (cat == "input") return "input";
  if (cat == "collective_wait" || cat == "coordination") return "collective wait";
  if (cat == "collective") return "collective transfer";
  if (cat == "checkpoint") return "checkpoint";
  if (cat == "step" || cat == "host") return "host";
  return "other";
}

// The innermost of `events` covering instant `at` (the latest to start; of two, the shorter).
const Event* innermost(const std::vector<const Event*>& events, double at) {
  const Event* best = nullptr;
  for (const Event* e : events) {
    if (e->ts > at || e->end <= at) continue;
    if (!best || e->ts > best->ts || (e->ts == best->ts && e->end < best->end)) best = e;
  }
  return best;
}

WorkerStep cut_step(const Task& task, const Event& step) {
  WorkerStep out;
  out.present = true;
  out.total_us = step.end - step.ts;
  for (const char* c : kStepCategories) out.category_us[c] = 0;
  const int64_t replica = task.thread_named("replica 0");
  const int64_t comm = task.thread_named("collectives");
  std::vector<const Event*> inside, comm_events;
  std::vector<double> bounds = {step.ts, step.end};
  for (const Event& e : task.events) {
    if (&e == &step || e.end <= step.ts || e.ts >= step.end) continue;
    if (e.tid == comm) {
      comm_events.push_back(&e);
    } else if (e.tid == step.tid || e.tid == replica) {
      inside.push_back(&e);
      bounds.push_back(std::clamp(e.ts, step.ts, step.end));
      bounds.push_back(std::clamp(e.end, step.ts, step.end));
    }
  }
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  std::sort(inside.begin(), inside.end(),
            [](const Event* a, const Event* b) { return a->ts < b->ts; });
  std::vector<const Event*> active;
  size_t next = 0;
  for (size_t k = 0; k + 1 < bounds.size(); ++k) {
    const double a = bounds[k], b = bounds[k + 1], mid = (a + b) / 2;
    while (next < inside.size() && inside[next]->ts <= mid) active.push_back(inside[next++]);
    std::erase_if(active, [mid](const Event* e) { return e->end <= mid; });
    const Event* e = innermost(active, mid);
    const char* category = e ? category_of(e->cat) : "host";
    if (e && e->name == "wait_for_collectives") {
      // The replica waits for the communication thread: what that thread does then.
      const Event* c = innermost(comm_events, mid);
      category = c && c->cat == "collective_wait" ? "collective wait" : "collective transfer";
    }
    out.category_us[category] += b - a;
  }
  return out;
}

std::vector<Task> parse(const std::string& trace_json) {
  json doc = json::parse(trace_json, nullptr, false);
  WEFT_CHECK(!doc.is_discarded() && doc.is_object() && doc.contains("traceEvents") &&
                 doc["traceEvents"].is_array(),
             InvalidArgument)
      << "weft report: the trace is not Chrome trace JSON with a traceEvents array";
  std::map<int64_t, Task> by_pid;
  for (const json& e : doc["traceEvents"]) {
    if (!e.is_object() || !e.contains("pid") || !e.contains("ph")) continue;
    Task& task = by_pid[e["pid"].get<int64_t>()];
    const std::string ph = e["ph"];
    const std::string name = e.value("name", "");
    if (ph == "M" && e.contains("args")) {
      if (name == "process_name") task.name = e["args"].value("name", "");
      if (name == "thread_name")
        task.threads[e.value("tid", int64_t{0})] = e["args"].value("name", "");
      continue;
    }
    if (ph != "X" || !e.contains("ts") || !e.contains("dur")) continue;
    Event ev;
    ev.ts = e["ts"].get<double>();
    ev.end = ev.ts + e["dur"].get<double>();
    ev.tid = e.value("tid", int64_t{0});
    ev.name = name;
    ev.cat = e.value("cat", "");
    if (e.contains("args") && e["args"].is_object()) {
      const json& args = e["args"];
      if (args.contains("id") && args["id"].is_string()) ev.id = args["id"];
      if (ev.cat == "step" && args.contains("step_num")) {
        const json& s = args["step_num"];
        ev.step_num = s.is_string() ? std::stoll(s.get<std::string>()) : s.get<int64_t>();
      }
    }
    task.events.push_back(std::move(ev));
  }
  std::vector<Task> tasks;
  for (auto& [pid, task] : by_pid) {
    if (task.name.empty()) task.name = "task " + std::to_string(pid);
    tasks.push_back(std::move(task));
  }
  for (Task& task : tasks) {  // (the events no longer move)
    for (const Event& e : task.events) {
      if (e.step_num >= 0) task.steps.push_back(&e);
    }
    std::sort(task.steps.begin(), task.steps.end(),
              [](const Event* a, const Event* b) { return a->ts < b->ts; });
  }
  return tasks;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

constexpr const char* kColors[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
                                   "#59a14f", "#edc948", "#bab0ac"};

}  // namespace

TraceReport analyze_trace(const std::string& trace_json) {
  const std::vector<Task> tasks = parse(trace_json);
  TraceReport r;
  std::set<int64_t> step_nums;
  for (const Task& t : tasks) {
    r.tasks.push_back(t.name);
    for (const Event* s : t.steps) step_nums.insert(s->step_num);
  }
  WEFT_CHECK(!step_nums.empty(), InvalidArgument)
      << "weft report: the trace marks no step (\"train\" events with a step_num: fit's, or "
         "profiler::Trace(\"train\", {.step_num = s}) in a custom loop)";
  const size_t n = tasks.size();
  std::map<int64_t, size_t> index;
  for (int64_t s : step_nums) {
    index[s] = r.steps.size();
    StepReport step;
    step.step_num = s;
    step.workers.resize(n);
    r.steps.push_back(std::move(step));
  }
  for (size_t t = 0; t < n; ++t) {
    for (const Event* s : tasks[t].steps) {
      WorkerStep& w = r.steps[index[s->step_num]].workers[t];
      if (!w.present) w = cut_step(tasks[t], *s);
    }
  }
  // Each collective call made by more than one task: who entered last, and how late.
  struct Entry {
    double ts;
    size_t task;
  };
  std::map<std::string, std::vector<Entry>> calls;
  for (size_t t = 0; t < n; ++t) {
    for (const Event& e : tasks[t].events) {
      if (e.cat == "collective" && !e.id.empty()) calls[e.id].push_back({e.ts, t});
    }
  }
  std::vector<std::vector<int>> last_count(r.steps.size(), std::vector<int>(n, 0));
  std::vector<std::vector<double>> lateness(r.steps.size(), std::vector<double>(n, 0));
  for (const auto& [id, entries] : calls) {
    if (entries.size() < 2) continue;
    auto [first, last] = std::minmax_element(
        entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.ts < b.ts; });
    // The step of the last task's that holds the call.
    const Task& late = tasks[last->task];
    for (const Event* s : late.steps) {
      if (s->ts <= last->ts && last->ts < s->end) {
        const size_t k = index[s->step_num];
        ++last_count[k][last->task];
        lateness[k][last->task] += last->ts - first->ts;
        break;
      }
    }
  }
  r.last_arrivals.assign(n, 0);
  for (size_t k = 0; k < r.steps.size(); ++k) {
    StepReport& step = r.steps[k];
    int best = -1;
    for (size_t t = 0; t < n; ++t) {
      if (last_count[k][t] == 0) continue;
      if (best < 0 || last_count[k][t] > last_count[k][static_cast<size_t>(best)] ||
          (last_count[k][t] == last_count[k][static_cast<size_t>(best)] &&
           lateness[k][t] > lateness[k][static_cast<size_t>(best)])) {
        best = static_cast<int>(t);
      }
    }
    step.straggler = best;
    if (best >= 0) {
      step.straggler_lateness_us = lateness[k][static_cast<size_t>(best)];
      ++r.last_arrivals[static_cast<size_t>(best)];
    }
    // The bottleneck: on the straggler (else the slowest worker), the largest category that is
    // not waiting for the others.
    int on = best;
    for (size_t t = 0; on < 0 && t < n; ++t) {
      if (step.workers[t].present) on = static_cast<int>(t);
    }
    for (size_t t = 0; best < 0 && t < n; ++t) {
      if (step.workers[t].present &&
          step.workers[t].total_us > step.workers[static_cast<size_t>(on)].total_us) {
        on = static_cast<int>(t);
      }
    }
    if (on >= 0 && step.workers[static_cast<size_t>(on)].present) {
      double most = -1;
      for (const auto& [c, us] : step.workers[static_cast<size_t>(on)].category_us) {
        if (std::string(c) != "collective wait" && us > most) {
          most = us;
          step.bottleneck = c;
        }
      }
    }
  }
  r.input_share.assign(n, 0);
  r.mean_step_us.assign(n, 0);
  for (size_t t = 0; t < n; ++t) {
    double total = 0, input = 0;
    int count = 0;
    for (const StepReport& step : r.steps) {
      if (!step.workers[t].present) continue;
      total += step.workers[t].total_us;
      input += step.workers[t].category_us.at("input");
      ++count;
    }
    r.input_share[t] = total > 0 ? input / total : 0;
    r.mean_step_us[t] = count > 0 ? total / count : 0;
  }
  return r;
}

std::string report_html(const TraceReport& report, const std::vector<Curve>& curves,
                        const std::string& title) {
  const size_t n = report.tasks.size();
  // The data, for tools (and the test that reads the rendered page).
  json data = {{"tasks", report.tasks},
               {"last_arrivals", report.last_arrivals},
               {"input_share", report.input_share},
               {"mean_step_us", report.mean_step_us},
               {"categories", kStepCategories},
               {"steps", json::array()},
               {"curves", json::array()}};
  for (const Curve& c : curves) data["curves"].push_back({{"name", c.name}, {"points", c.points}});
  for (const StepReport& s : report.steps) {
    json workers = json::array();
    for (const WorkerStep& w : s.workers) {
      workers.push_back(w.present ? json{{"total_us", w.total_us}, {"category_us", w.category_us}}
                                  : json());
    }
    data["steps"].push_back(
        {{"step_num", s.step_num},
         {"workers", workers},
         {"straggler",
          s.straggler >= 0 ? json(report.tasks[static_cast<size_t>(s.straggler)]) : json()},
         {"straggler_lateness_us", s.straggler_lateness_us},
         {"bottleneck", s.bottleneck}});
  }
  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>weft report: " +
       html_escape(title) +
       "</title>\n<style>\n"
       "body{font:14px system-ui,sans-serif;margin:24px;color:#222}"
       "h1{font-size:20px}h2{font-size:16px;margin-top:28px}"
       "table{border-collapse:collapse;margin:8px 0}"
       "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
       "th{background:#f4f4f4}td.l,th.l{text-align:left}"
       ".legend span{display:inline-block;margin-right:14px}"
       ".legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-1px}"
       ".verdict{background:#fff6e0;border:1px solid #f0d090;padding:8px 12px;margin:8px 0}"
       "svg text{font:11px system-ui,sans-serif}\n</style></head><body>\n";
  h += "<h1>weft report</h1>\n<p>" + html_escape(title) + "</p>\n";
  // The verdict, as TensorFlow's overview page words it.
  size_t most_input = 0;
  for (size_t t = 1; t < n; ++t) {
    if (report.input_share[t] > report.input_share[most_input]) most_input = t;
  }
  const double share = n ? report.input_share[most_input] * 100 : 0;
  const char* bound = share > 20  ? "HIGHLY input-bound"
                      : share > 5 ? "MODERATELY input-bound"
                                  : "NOT input-bound";
  h += "<div class=\"verdict\" id=\"verdict\">Your program is " + std::string(bound) + ": " +
       fixed(share, 1) + "% of the step time on " + html_escape(n ? report.tasks[most_input] : "") +
       " is spent waiting for input.";
  size_t most_last = 0;
  for (size_t t = 1; t < n; ++t) {
    if (report.last_arrivals[t] > report.last_arrivals[most_last]) most_last = t;
  }
  if (n > 1 && report.last_arrivals[most_last] > 0) {
    h += " The straggler of most steps is <b>" + html_escape(report.tasks[most_last]) + "</b> (" +
         std::to_string(report.last_arrivals[most_last]) + " of " +
         std::to_string(report.steps.size()) + " steps).";
  }
  h += "</div>\n<div class=\"legend\">";
  for (size_t c = 0; c < kStepCategories.size(); ++c) {
    h += std::string("<span><i style=\"background:") + kColors[c] + "\"></i>" + kStepCategories[c] +
         "</span>";
  }
  h += "</div>\n";

  // Per step, a bar per worker, stacked by category.
  double top = 1;
  for (const StepReport& s : report.steps) {
    for (const WorkerStep& w : s.workers) top = std::max(top, w.total_us);
  }
  const int bar = 12, gap = 2, group_gap = 10, height = 220, left = 50;
  const int group = static_cast<int>(n) * (bar + gap) + group_gap;
  const int width = left + static_cast<int>(report.steps.size()) * group + 10;
  h += "<h2>Step time by category (bars: ";
  for (size_t t = 0; t < n; ++t) h += (t ? ", " : "") + html_escape(report.tasks[t]);
  h += ", left to right)</h2>\n<svg id=\"steps\" width=\"" + std::to_string(width) +
       "\" height=\"" + std::to_string(height + 40) + "\">\n";
  h += "<text x=\"2\" y=\"12\">" + fixed(top / 1000, 1) + " ms</text><text x=\"2\" y=\"" +
       std::to_string(height) + "\">0</text>\n";
  for (size_t k = 0; k < report.steps.size(); ++k) {
    const StepReport& s = report.steps[k];
    const int x0 = left + static_cast<int>(k) * group;
    for (size_t t = 0; t < n; ++t) {
      const WorkerStep& w = s.workers[t];
      if (!w.present) continue;
      double y = height;
      const int x = x0 + static_cast<int>(t) * (bar + gap);
      for (size_t c = 0; c < kStepCategories.size(); ++c) {
        const double us = w.category_us.at(kStepCategories[c]);
        const double hgt = us / top * (height - 20);
        if (hgt <= 0) continue;
        y -= hgt;
        h += "<rect x=\"" + std::to_string(x) + "\" y=\"" + fixed(y, 2) + "\" width=\"" +
             std::to_string(bar) + "\" height=\"" + fixed(hgt, 2) + "\" fill=\"" + kColors[c] +
             "\"><title>step " + std::to_string(s.step_num) + ", " + html_escape(report.tasks[t]) +
             ": " + kStepCategories[c] + " " + fixed(us / 1000, 3) + " ms</title></rect>";
      }
      if (static_cast<int>(t) == s.straggler) {
        h += "<text x=\"" + std::to_string(x + 2) + "\" y=\"" + fixed(y - 3, 1) + "\">*</text>";
      }
    }
    h += "<text x=\"" + std::to_string(x0) + "\" y=\"" + std::to_string(height + 16) + "\">" +
         std::to_string(s.step_num) + "</text>\n";
  }
  h += "</svg>\n<p>* the step's straggler: the last worker into its collectives.</p>\n";

  // The workers.
  h += "<h2>Workers</h2>\n<table id=\"workers\"><tr><th class=\"l\">worker</th><th>steps</th>"
       "<th>mean step (ms)</th>";
  for (const char* c : kStepCategories) h += std::string("<th>") + c + " (ms)</th>";
  h += "<th>waiting for input</th><th>last arrivals</th></tr>\n";
  for (size_t t = 0; t < n; ++t) {
    int count = 0;
    std::map<std::string, double> sum;
    for (const StepReport& s : report.steps) {
      if (!s.workers[t].present) continue;
      ++count;
      for (const auto& [c, us] : s.workers[t].category_us) sum[c] += us;
    }
    h += "<tr><td class=\"l\">" + html_escape(report.tasks[t]) + "</td><td>" +
         std::to_string(count) + "</td><td>" + fixed(report.mean_step_us[t] / 1000, 3) + "</td>";
    for (const char* c : kStepCategories) {
      h += "<td>" + fixed(count ? sum[c] / count / 1000 : 0, 3) + "</td>";
    }
    h += "<td>" + fixed(report.input_share[t] * 100, 1) + "%</td><td>" +
         std::to_string(report.last_arrivals[t]) + "</td></tr>\n";
  }
  h += "</table>\n";

  // The steps.
  h += "<h2>Steps</h2>\n<table id=\"step-table\"><tr><th>step</th>";
  for (size_t t = 0; t < n; ++t) h += "<th>" + html_escape(report.tasks[t]) + " (ms)</th>";
  h += "<th class=\"l\">straggler</th><th>late by (ms)</th><th class=\"l\">bottleneck</th></tr>\n";
  for (const StepReport& s : report.steps) {
    h += "<tr><td>" + std::to_string(s.step_num) + "</td>";
    for (const WorkerStep& w : s.workers) {
      h += "<td>" + (w.present ? fixed(w.total_us / 1000, 3) : std::string("-")) + "</td>";
    }
    h += "<td class=\"l\">" +
         (s.straggler >= 0 ? html_escape(report.tasks[static_cast<size_t>(s.straggler)])
                           : std::string("-")) +
         "</td><td>" + fixed(s.straggler_lateness_us / 1000, 3) + "</td><td class=\"l\">" +
         html_escape(s.bottleneck) + "</td></tr>\n";
  }
  h += "</table>\n";

  // The training curves.
  if (!curves.empty()) h += "<h2>Training curves</h2>\n";
  for (const Curve& c : curves) {
    if (c.points.empty()) continue;
    double lo = c.points[0].second, hi = lo;
    int64_t first = c.points[0].first, last = first;
    for (const auto& [step, v] : c.points) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      first = std::min(first, step);
      last = std::max(last, step);
    }
    const double span = hi > lo ? hi - lo : 1;
    const double steps = last > first ? static_cast<double>(last - first) : 1;
    std::string points, dots;  // a dot at each point too, when few (one epoch: one point)
    for (const auto& [step, v] : c.points) {
      const std::string x = fixed(40 + static_cast<double>(step - first) / steps * 260, 1);
      const std::string y = fixed(10 + (hi - v) / span * 100, 1);
      points += x + "," + y + " ";
      if (c.points.size() <= 50) {
        dots += "<circle cx=\"" + x + "\" cy=\"" + y + "\" r=\"3\" fill=\"#4e79a7\"/>";
      }
    }
    h +=
        "<figure style=\"display:inline-block;margin:4px 12px\"><svg class=\"curve\" width=\"310\" "
        "height=\"130\"><polyline fill=\"none\" stroke=\"#4e79a7\" stroke-width=\"2\" points=\"" +
        points + "\"/>" + dots + "<text x=\"0\" y=\"14\">" + fixed(hi, 4) +
        "</text><text x=\"0\" y=\"112\">" + fixed(lo, 4) + "</text></svg><figcaption>" +
        html_escape(c.name) + "</figcaption></figure>\n";
  }
  // (</ cannot close the script: json's dump escapes no '/', so it is escaped here.)
  std::string payload = data.dump();
  for (size_t at = 0; (at = payload.find("</", at)) != std::string::npos; at += 3) {
    payload.replace(at, 2, "<\\/");
  }
  h += "<script type=\"application/json\" id=\"weft-report-data\">" + payload +
       "</script>\n</body></html>\n";
  return h;
}

std::string newest_run(const std::string& logdir) {
  std::string newest, newest_name;
  for (const fs::path& base : {fs::path(logdir) / "plugins" / "profile",
                               fs::path(logdir) / "train" / "plugins" / "profile"}) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(base, ec)) {
      const std::string name = entry.path().filename().string();
      if (entry.is_directory() && name > newest_name) {
        newest_name = name;
        newest = entry.path().string();
      }
    }
  }
  WEFT_CHECK(!newest.empty(), FailedPrecondition)
      << "weft report: no profile under " << logdir << "/plugins/profile or " << logdir
      << "/train/plugins/profile (weft train --profile-steps, weft profile or "
         "profiler::start write them)";
  return newest;
}

std::string load_run(const std::string& run_dir) {
  std::vector<fs::path> tasks;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(run_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name == "cluster.trace.json.gz") {
      return gzip_decompress(io::read_whole_file(entry.path().string()), entry.path().string());
    }
    if (name.ends_with(".trace.json.gz")) tasks.push_back(entry.path());
  }
  WEFT_CHECK(tasks.size() == 1, FailedPrecondition)
      << "weft report: " << run_dir << " holds " << tasks.size()
      << " task traces and no cluster.trace.json.gz; expected the merged trace or one task's";
  return gzip_decompress(io::read_whole_file(tasks[0].string()), tasks[0].string());
}

}  // namespace weft::profiler
