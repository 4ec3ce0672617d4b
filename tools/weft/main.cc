// The `weft` command (SPEC §3). Each subcommand lives in its own file and registers itself here.
// Errors print on one line and exit non-zero.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "tools/weft/commands.h"
#include "tools/weft/flags.h"
#include "weft/core/errors.h"

namespace {
bool has_command(const CLI::App& app, const std::string& name) {
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == name) return true;
  }
  return false;
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"weft: train neural networks, from one core to a cluster"};
  // --help shows every flag's default.
  app.option_defaults()->always_capture_default();
  app.require_subcommand(1);
  weft::cli::add_bench(app);
  weft::cli::add_evaluate(app);
  weft::cli::add_info(app);
  weft::cli::add_inspect(app);
  weft::cli::add_launch(app);
  weft::cli::add_predict(app);
  weft::cli::add_profile(app);
  weft::cli::add_report(app);
  weft::cli::add_server(app);
  weft::cli::add_train(app);
  // A missing or unknown command is named, with the commands there are.
  std::string first = argc > 1 ? argv[1] : "";
  if (first.empty() || (first[0] != '-' && !has_command(app, first))) {
    std::string commands;
    for (const CLI::App* sub : app.get_subcommands({})) {
      commands += (commands.empty() ? "" : ", ") + sub->get_name();
    }
    std::fprintf(
        stderr, "weft: %s; the commands are %s (weft --help says what each does)\n",
        first.empty() ? "a command is needed" : ("unknown command \"" + first + "\"").c_str(),
        commands.c_str());
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::RuntimeError& e) {  // a command's own exit status (weft launch)
    return e.get_exit_code();
  } catch (const CLI::ValidationError& e) {
    std::fprintf(stderr, "weft: %s\n", weft::cli::validation_message(e.what()).c_str());
    return 2;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "weft: %s\n", e.what());
    return e.get_exit_code() != 0 ? e.get_exit_code() : 2;
  } catch (const weft::Error& e) {
    std::fprintf(stderr, "weft: %s\n", e.what());
    return 1;
  }
  return 0;
}
