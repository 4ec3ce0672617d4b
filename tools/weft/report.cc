// `weft report LOGDIR [--out FILE]`: the newest profile run under LOGDIR (weft train
// --profile-steps, weft profile, profiler::start) as one self-contained HTML page: each step's
// time per worker by category, its straggler and bottleneck, the share of time waiting for input,
// and the training curves of LOGDIR/train and LOGDIR/validation (docs/profiler.md).
#include "weft/profiler/report.h"

#include <cstdio>
#include <map>
#include <string>

#include "tools/weft/commands.h"
#include "weft/core/file_io.h"
#include "weft/train/tensorboard_events.h"

namespace weft::cli {

void add_report(CLI::App& app) {
  struct ReportFlags {
    std::string logdir, out;
  };
  auto flags = std::make_shared<ReportFlags>();
  auto* cmd = app.add_subcommand(
      "report", "Write an HTML page of where each step's time went on each worker (a profile run)");
  cmd->add_option("logdir", flags->logdir, "the --logdir of the profiled job")->required();
  cmd->add_option("--out", flags->out, "the page (default: report.html in the newest run)");
  cmd->callback([flags] {
    const std::string run = profiler::newest_run(flags->logdir);
    const profiler::TraceReport report = profiler::analyze_trace(profiler::load_run(run));
    std::vector<profiler::Curve> curves;
    for (const char* part : {"train", "validation"}) {
      std::map<std::string, profiler::Curve> by_tag;
      for (const train::ScalarEvent& e : train::read_scalar_events(flags->logdir + "/" + part)) {
        profiler::Curve& c = by_tag[e.tag];
        c.name = std::string(part) + "/" + e.tag;
        c.points.emplace_back(e.step, e.value);
      }
      for (auto& [tag, c] : by_tag) curves.push_back(std::move(c));
    }
    const std::string out = flags->out.empty() ? run + "/report.html" : flags->out;
    io::write_file_atomically(out, profiler::report_html(report, curves, run));
    std::printf("weft report: %s (%zu steps of %zu workers)\n", out.c_str(), report.steps.size(),
                report.tasks.size());
  });
}

}  // namespace weft::cli
