// How the `weft` subcommands check their flags, so that every refusal says what the flag accepts:
// "--epochs must be at least 1, got 0", "--model must be one of mlp, cnn; got \"mlpx\"". A check
// also names what it accepts in --help ("INT:at least 1").
#pragma once

#include <CLI/CLI.hpp>
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
// The first and last port of a range port_range() accepted.
std::pair<int, int> ports_of(const std::string& range);
// "epoch", or a whole number of steps >= 1 (--save-freq).
CLI::Validator epoch_or_steps();

// CLI11 reports a failed check as "<flag>: <message>"; weft prints "<flag> <message>".
std::string validation_message(const std::string& cli11_message);

// --threads for a subcommand: more threads than the cores this process may run on wait on each
// other (about 2x slower on 2 cores), so the count is capped at the cores, with one warning.
void apply_threads_flag(int threads);

}  // namespace weft::cli
