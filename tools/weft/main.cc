// The `weft` command (SPEC §3). Each subcommand lives in its own file and registers itself here.
// Errors print on one line and exit non-zero.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>

#include "tools/weft/commands.h"
#include "weft/core/errors.h"

int main(int argc, char** argv) {
  // How long idle OpenMP threads spin before they sleep. libgomp's default (300000 spins) is the
  // fastest on an idle machine but halves throughput when other work competes for the cores (the
  // input pipeline's thread, or other processes); sleeping at once (OMP_WAIT_POLICY=PASSIVE) costs
  // a thread wake-up per parallel region. Measured on 2 cores, MLP examples/s for one epoch:
  // idle 17400 / 15200 / 8600 (default / 30000 spins / passive), with two CPU hogs running
  // 3350 / 7130 / 5660. libgomp reads this when it loads, so set it and restart once; an explicit
  // OMP_WAIT_POLICY or GOMP_SPINCOUNT is respected.
  if (std::getenv("OMP_WAIT_POLICY") == nullptr && std::getenv("GOMP_SPINCOUNT") == nullptr) {
    setenv("GOMP_SPINCOUNT", "30000", 1);
    execv("/proc/self/exe", argv);  // returns only on failure: carry on with the default policy
  }
  CLI::App app{"weft: train neural networks, from one core to a cluster"};
  app.require_subcommand(1);
  weft::cli::add_info(app);
  weft::cli::add_inspect(app);
  weft::cli::add_train(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "weft: %s\n", e.what());
    return e.get_exit_code() != 0 ? e.get_exit_code() : 2;
  } catch (const weft::Error& e) {
    std::fprintf(stderr, "weft: %s\n", e.what());
    return 1;
  }
  return 0;
}
