// The `weft` command (SPEC §3). Each subcommand lives in its own file and registers itself here.
// Errors print on one line and exit non-zero.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "tools/weft/commands.h"
#include "weft/core/errors.h"

int main(int argc, char** argv) {
  CLI::App app{"weft: train neural networks, from one core to a cluster"};
  app.require_subcommand(1);
  weft::cli::add_bench(app);
  weft::cli::add_evaluate(app);
  weft::cli::add_info(app);
  weft::cli::add_inspect(app);
  weft::cli::add_launch(app);
  weft::cli::add_predict(app);
  weft::cli::add_train(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::RuntimeError& e) {  // a command's own exit status (weft launch)
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "weft: %s\n", e.what());
    return e.get_exit_code() != 0 ? e.get_exit_code() : 2;
  } catch (const weft::Error& e) {
    std::fprintf(stderr, "weft: %s\n", e.what());
    return 1;
  }
  return 0;
}
