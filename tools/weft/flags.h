// How the `weft` subcommands check their flags, so that every refusal says what the flag accepts:
// "--epochs must be at least 1, got 0", "--model must be one of mlp, cnn; got \"mlpx\"". A check
// also names what it accepts in --help ("INT:at least 1").
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace weft::cli {

// A whole number >= min (integer) or any number >= min.
CLI::Validator at_least(double min, bool integer = true);
// A number > 0.
CLI::Validator positive_number();
// A whole number in [lo, hi].
CLI::Validator in_range(long long lo, long long hi);
// One of `choices`, exactly.
CLI::Validator one_of(std::vector<std::string> choices);
// "LO-HI": a range of ports, 1 <= LO <= HI <= 65535 (--data-ports).
CLI::Validator port_range();
// "epoch", or a whole number of steps >= 1 (--save-freq).
CLI::Validator epoch_or_steps();
// "A:B": steps A to B of a run, 1 <= A <= B (--profile-steps).
CLI::Validator step_range();
// The two whole numbers of "A<separator>B", as port_range() ('-') and step_range() (':') accept
// them; {0, 0} when `text` is not such a pair.
std::pair<int64_t, int64_t> range_of(const std::string& text, char separator);

// CLI11 reports a failed check as "<flag>: <message>"; weft prints "<flag> <message>".
std::string validation_message(const std::string& cli11_message);

// What a cluster command's --startup-timeout (seconds; 0: the strategy's default) and --tls-*
// (PEM files; empty: none) set in a strategy's options (MultiWorkerOptions,
// ParameterServerOptions): weft train and weft server take them alike.
template <typename Options>
void set_cluster_options(double startup_timeout, const std::string& tls_cert,
                         const std::string& tls_key, const std::string& tls_ca, Options& options) {
  if (startup_timeout > 0) {
    options.startup_timeout =
        std::chrono::milliseconds(static_cast<int64_t>(startup_timeout * 1000));
  }
  options.coordination.tls = {tls_cert, tls_key, tls_ca};
}

// --threads for a subcommand: more threads than the cores this process may run on wait on each
// other (about 2x slower on 2 cores), so the count is capped at the cores, with one warning.
void apply_threads_flag(int threads);

}  // namespace weft::cli
