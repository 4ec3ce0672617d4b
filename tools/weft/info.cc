// `weft info`: version, the ISA oneDNN dispatches to, oneDNN version, threads.
#include <cstdio>

#include "tools/weft/commands.h"
#include "tools/weft/flags.h"
#include "weft/core/config.h"
#include "weft/version.h"

namespace weft::cli {

void add_info(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Print the version, the CPU ISA oneDNN uses, and threads");
  auto* threads =
      cmd->add_option("--threads", "Threads to report (default: all cores)")->check(at_least(1));
  cmd->callback([threads] {
    if (threads->count() > 0) apply_threads_flag(threads->as<int>());
    std::fputs(build_info().c_str(), stdout);
  });
}

}  // namespace weft::cli
