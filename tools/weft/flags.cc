#include "tools/weft/flags.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "weft/core/config.h"

namespace weft::cli {
namespace {

std::string shown(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.15g", v);
  return buf;
}

// The number `text` holds, or "" in *error naming what is wrong.
bool parse_number(const std::string& text, bool integer, double* value, std::string* error) {
  errno = 0;
  char* end = nullptr;
  *value = std::strtod(text.c_str(), &end);
  bool number =
      !text.empty() && end == text.c_str() + text.size() && errno == 0 && std::isfinite(*value);
  if (!number || (integer && *value != std::floor(*value))) {
    *error = std::string("must be ") + (integer ? "a whole number" : "a number") + ", got \"" +
             text + "\"";
    return false;
  }
  return true;
}

}  // namespace

CLI::Validator at_least(double min, bool integer) {
  return CLI::Validator(
      [min, integer](std::string& text) -> std::string {
        double v;
        std::string error;
        if (!parse_number(text, integer, &v, &error)) return error;
        if (v < min) return "must be at least " + shown(min) + ", got " + text;
        return {};
      },
      "at least " + shown(min));
}

CLI::Validator positive_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double v;
        std::string error;
        if (!parse_number(text, false, &v, &error)) return error;
        if (v <= 0) return "must be greater than 0, got " + text;
        return {};
      },
      "greater than 0");
}

std::pair<int64_t, int64_t> range_of(const std::string& text, char separator) {
  long long first = 0, last = 0;
  char between = 0, rest = 0;
  if (std::sscanf(text.c_str(), "%lld%c%lld%c", &first, &between, &last, &rest) != 3 ||
      between != separator) {
    return {0, 0};
  }
  return {first, last};
}

CLI::Validator port_range() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        auto [first, last] = range_of(text, '-');
        if (first < 1 || last > 65535 || first > last) {
          return "must be a range of ports LO-HI (1 <= LO <= HI <= 65535), got " + text;
        }
        return {};
      },
      "LO-HI");
}

CLI::Validator in_range(long long lo, long long hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        double v;
        std::string error;
        if (!parse_number(text, true, &v, &error)) return error;
        if (v < static_cast<double>(lo) || v > static_cast<double>(hi)) {
          return "must be from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got " +
                 text;
        }
        return {};
      },
      std::to_string(lo) + " to " + std::to_string(hi));
}

CLI::Validator one_of(std::vector<std::string> choices) {
  std::string list;
  for (const std::string& c : choices) list += (list.empty() ? "" : ", ") + c;
  return CLI::Validator(
      [choices, list](std::string& text) -> std::string {
        for (const std::string& c : choices) {
          if (text == c) return {};
        }
        return "must be one of " + list + "; got \"" + text + "\"";
      },
      "{" + list + "}");
}

CLI::Validator epoch_or_steps() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double v;
        std::string error;
        if (text == "epoch" || (parse_number(text, true, &v, &error) && v >= 1)) return {};
        return "must be \"epoch\" or a number of steps of at least 1, got \"" + text + "\"";
      },
      "epoch or steps");
}

CLI::Validator step_range() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        auto [first, last] = range_of(text, ':');
        if (first < 1 || first > last) {
          return "must be a range of steps A:B (1 <= A <= B, counted from 1 across epochs), "
                 "got " +
                 text;
        }
        return {};
      },
      "A:B");
}

std::string validation_message(const std::string& message) {
  size_t at = message.find(": ");
  if (at == std::string::npos || message.rfind("--", 0) != 0) return message;
  return message.substr(0, at) + " " + message.substr(at + 2);
}

void apply_threads_flag(int threads) {
  if (threads <= 0) return;
  int cores = config::hardware_threads();
  if (threads > cores) {
    std::fprintf(stderr,
                 "weft: warning: --threads %d is more than the %d core%s this process may run "
                 "on; using %d (threads beyond the cores only wait on each other)\n",
                 threads, cores, cores == 1 ? "" : "s", cores);
    threads = cores;
  }
  config::set_num_threads(threads);
}

}  // namespace weft::cli
