#include "weft/profiler/trace_file.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "weft/core/errors.h"
#include "weft/core/file_io.h"

namespace weft::profiler {
namespace {

using nlohmann::json;

void append_escaped(std::string& out, const std::string& s) {
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

// Nanoseconds as microseconds with three decimals (the format's unit).
void append_us(std::string& out, int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld.%03lld", static_cast<long long>(ns / 1000),
                static_cast<long long>((ns < 0 ? -ns : ns) % 1000));
  if (ns < 0 && ns > -1000) out += '-';
  out += buf;
}

void append_metadata(std::string& out, const char* name, int pid, int64_t tid,
                     const std::string& value, bool sort_index = false) {
  out += "{\"ph\":\"M\",\"pid\":" + std::to_string(pid);
  if (tid >= 0) out += ",\"tid\":" + std::to_string(tid);
  out += ",\"name\":\"";
  out += name;
  out += "\",\"args\":{";
  if (sort_index) {
    out += "\"sort_index\":" + value;
  } else {
    out += "\"name\":";
    append_escaped(out, value);
  }
  out += "}},\n";
}

// Threads of overlapping events that do not nest: events are shown on the thread's overflow
// row instead, numbered from here.
constexpr int64_t kOverflowThreads = 1'000'000;

}  // namespace

std::string task_trace_json(const TaskTrace& trace, std::vector<std::string>* warnings) {
  // The window's events, earliest first (a parent before the children it encloses).
  std::vector<const TraceEvent*> events;
  for (const TraceEvent& e : trace.capture.events) {
    if (e.start_ns >= trace.start_ns && e.end_ns <= trace.end_ns) events.push_back(&e);
  }
  std::sort(events.begin(), events.end(), [](const TraceEvent* a, const TraceEvent* b) {
    if (a->start_ns != b->start_ns) return a->start_ns < b->start_ns;
    return a->end_ns > b->end_ns;
  });
  std::size_t dropped = 0;
  if (events.size() > kMaxEventsPerTask) {
    dropped = events.size() - kMaxEventsPerTask;
    events.resize(kMaxEventsPerTask);
    if (warnings) {
      warnings->push_back(trace.task + ": " + std::to_string(dropped) + " events past the first " +
                          std::to_string(kMaxEventsPerTask) +
                          " were dropped; capture fewer steps or a lower host_tracer_level");
    }
  }
  std::string out = "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"task\":";
  append_escaped(out, trace.task);
  out += ",\"start_ns\":" + std::to_string(trace.start_ns) +
         ",\"end_ns\":" + std::to_string(trace.end_ns) +
         ",\"clock_offset_ns\":" + std::to_string(trace.clock_offset_ns) +
         ",\"host_tracer_level\":" + std::to_string(trace.host_tracer_level) +
         ",\"dropped_events\":" + std::to_string(dropped) + "},\n\"traceEvents\":[\n";
  append_metadata(out, "process_name", 1, -1, trace.task);
  std::map<int64_t, std::string> thread_names;
  // Each thread's open events (their ends), to find events that overlap without nesting.
  std::map<uint32_t, std::vector<int64_t>> open;
  for (const TraceEvent* e : events) {
    std::vector<int64_t>& stack = open[e->thread];
    while (!stack.empty() && stack.back() <= e->start_ns) stack.pop_back();
    int64_t tid = e->thread + 1;
    if (!stack.empty() && e->end_ns > stack.back()) {
      tid += kOverflowThreads;
    } else {
      stack.push_back(e->end_ns);
    }
    if (!thread_names.count(tid)) {
      auto named = trace.capture.threads.find(e->thread);
      std::string name = named != trace.capture.threads.end() && !named->second.empty()
                             ? named->second
                             : "thread " + std::to_string(e->thread);
      thread_names[tid] = tid > kOverflowThreads ? name + " (overlapping)" : name;
    }
    out += "{\"ph\":\"X\",\"pid\":1,\"tid\":" + std::to_string(tid) + ",\"name\":";
    append_escaped(out, e->name);
    out += ",\"cat\":\"";
    out += trace_category_name(e->category);
    out += "\",\"ts\":";
    append_us(out, e->start_ns - trace.start_ns);
    out += ",\"dur\":";
    append_us(out, e->end_ns - e->start_ns);
    if (!e->stats.empty()) {
      out += ",\"args\":{";
      for (std::size_t i = 0; i < e->stats.size(); ++i) {
        if (i) out += ',';
        append_escaped(out, e->stats[i].first);
        out += ':';
        append_escaped(out, e->stats[i].second);
      }
      out += '}';
    }
    out += "},\n";
  }
  for (const auto& [tid, name] : thread_names) {
    append_metadata(out, "thread_name", 1, tid, name);
    append_metadata(out, "thread_sort_index", 1, tid, std::to_string(tid), true);
  }
  out += "{\"ph\":\"M\",\"pid\":1,\"name\":\"process_sort_index\",\"args\":{\"sort_index\":1}}\n";
  out += "]}\n";
  if (warnings && out.size() > kLargeTraceBytes) {
    warnings->push_back(trace.task + ": its trace is " + std::to_string(out.size() >> 20) +
                        " MB; trace viewers slow down past " +
                        std::to_string(kLargeTraceBytes >> 20) + " MB");
  }
  return out;
}

std::string merge_trace_jsons(const std::vector<std::string>& task_jsons) {
  std::vector<json> docs;
  for (std::size_t i = 0; i < task_jsons.size(); ++i) {
    json doc = json::parse(task_jsons[i], nullptr, false);
    WEFT_CHECK(!doc.is_discarded() && doc.is_object() && doc.contains("traceEvents") &&
                   doc["traceEvents"].is_array() && doc.contains("otherData") &&
                   doc["otherData"].contains("start_ns"),
               InvalidArgument)
        << "merge_trace_jsons: trace " << i
        << " is not a task's trace (Chrome trace JSON with traceEvents and otherData.start_ns)";
    docs.push_back(std::move(doc));
  }
  // The tasks' windows on the reference clock; times count from the earliest start.
  int64_t origin = INT64_MAX;
  for (const json& d : docs) {
    origin = std::min(origin, d["otherData"]["start_ns"].get<int64_t>() +
                                  d["otherData"].value("clock_offset_ns", int64_t{0}));
  }
  json merged = {{"displayTimeUnit", "ns"}, {"otherData", {{"tasks", json::array()}}}};
  json& out = merged["traceEvents"] = json::array();
  struct Call {
    double ts;
    int pid;
    int64_t tid;
  };
  std::map<std::string, std::vector<Call>> calls;  // collective id → its events in each task
  for (std::size_t i = 0; i < docs.size(); ++i) {
    const json& other = docs[i]["otherData"];
    const int pid = static_cast<int>(i) + 1;
    const double shift_us =
        static_cast<double>(other["start_ns"].get<int64_t>() +
                            other.value("clock_offset_ns", int64_t{0}) - origin) /
        1000.0;
    merged["otherData"]["tasks"].push_back(other);
    for (json& e : docs[i]["traceEvents"]) {
      e["pid"] = pid;
      if (e.value("name", "") == "process_sort_index") e["args"]["sort_index"] = pid;
      if (e.contains("ts")) e["ts"] = e["ts"].get<double>() + shift_us;
      if (e.value("ph", "") == "X" && e.value("cat", "") == "collective" && e.contains("args") &&
          e["args"].contains("id")) {
        calls[e["args"]["id"].get<std::string>()].push_back(
            {e["ts"].get<double>(), pid, e["tid"].get<int64_t>()});
      }
      out.push_back(std::move(e));
    }
  }
  // One flow per call that more than one task made: from the first to enter to the last.
  int64_t flow = 0;
  for (auto& [id, parts] : calls) {
    if (parts.size() < 2) continue;
    std::sort(parts.begin(), parts.end(), [](const Call& a, const Call& b) { return a.ts < b.ts; });
    ++flow;
    for (std::size_t k = 0; k < parts.size(); ++k) {
      const char* ph = k == 0 ? "s" : (k + 1 == parts.size() ? "f" : "t");
      json f = {{"ph", ph},          {"id", flow}, {"pid", parts[k].pid}, {"tid", parts[k].tid},
                {"ts", parts[k].ts}, {"name", id}, {"cat", "collective"}};
      if (k + 1 == parts.size()) f["bp"] = "e";
      out.push_back(std::move(f));
    }
  }
  return merged.dump() + "\n";
}

std::string trace_file_name(const std::string& task) {
  std::string name = task;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.' && c != '_') c = '_';
  }
  return name + ".trace.json.gz";
}

std::string new_run_directory(const std::string& logdir) {
  std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y_%m_%d_%H_%M_%S", &utc);
  const std::filesystem::path base = std::filesystem::path(logdir) / "plugins" / "profile";
  std::error_code ec;
  std::filesystem::create_directories(base, ec);
  WEFT_CHECK(!ec, FailedPrecondition)
      << "profiler: cannot create " << base.string() << ": " << ec.message();
  for (int k = 0;; ++k) {
    std::filesystem::path dir =
        base / (k == 0 ? stamp : std::string(stamp) + "_" + std::to_string(k));
    if (std::filesystem::create_directory(dir, ec)) return dir.string();
    WEFT_CHECK(!ec, FailedPrecondition)
        << "profiler: cannot create " << dir.string() << ": " << ec.message();
  }
}

void write_traces(const std::string& run_dir, const std::vector<std::string>& tasks,
                  const std::vector<std::string>& task_jsons) {
  WEFT_ASSERT(tasks.size() == task_jsons.size());
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    io::write_file_atomically(run_dir + "/" + trace_file_name(tasks[i]),
                              gzip_compress(task_jsons[i]));
  }
  if (tasks.size() > 1) {
    io::write_file_atomically(run_dir + "/cluster.trace.json.gz",
                              gzip_compress(merge_trace_jsons(task_jsons)));
  }
}

}  // namespace weft::profiler
