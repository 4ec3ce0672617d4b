#include "weft/train/internal/ledger.h"

#include <iterator>
#include <sstream>

#include "weft/core/errors.h"

namespace weft::nn::internal {

void Ledger::add(int epoch, int64_t first, int64_t rows) {
  WEFT_CHECK(first >= 0 && rows > 0, Internal)
      << "fit's ledger: epoch " << epoch << " rows " << first << " + " << rows;
  std::map<int64_t, int64_t>& ranges = epochs_[epoch];
  int64_t lo = first, hi = first + rows;
  auto next = ranges.lower_bound(lo);
  if (next != ranges.begin()) {
    auto before = std::prev(next);
    WEFT_CHECK(before->second <= lo, Internal)
        << "fit: rows " << lo << "-" << hi - 1 << " of epoch " << epoch
        << " were committed, but rows " << before->first << "-" << before->second - 1
        << " had been already: a closure's steps were applied twice";
    if (before->second == lo) {
      lo = before->first;
      ranges.erase(before);
    }
  }
  if (next != ranges.end()) {
    WEFT_CHECK(next->first >= hi, Internal)
        << "fit: rows " << first << "-" << hi - 1 << " of epoch " << epoch
        << " were committed, but rows " << next->first << "-" << next->second - 1
        << " had been already: a closure's steps were applied twice";
    if (next->first == hi) {
      hi = next->second;
      ranges.erase(next);
    }
  }
  ranges[lo] = hi;
}

int64_t Ledger::rows(int epoch) const {
  auto it = epochs_.find(epoch);
  if (it == epochs_.end()) return 0;
  int64_t n = 0;
  for (const auto& [lo, hi] : it->second) n += hi - lo;
  return n;
}

int64_t Ledger::total() const {
  int64_t n = 0;
  for (const auto& [epoch, ranges] : epochs_) n += rows(epoch);
  return n;
}

std::vector<std::pair<int64_t, int64_t>> Ledger::ranges(int epoch) const {
  auto it = epochs_.find(epoch);
  if (it == epochs_.end()) return {};
  return {it->second.begin(), it->second.end()};
}

void Ledger::check_complete(int epoch, int64_t rows) const {
  const auto r = ranges(epoch);
  if (rows == 0 && r.empty()) return;
  std::ostringstream held;
  for (const auto& [lo, hi] : r) held << (held.tellp() > 0 ? ", " : "") << lo << "-" << hi - 1;
  WEFT_CHECK(r.size() == 1 && r[0].first == 0 && r[0].second == rows, Internal)
      << "fit: epoch " << epoch << " ended with its rows " << (r.empty() ? "none" : held.str())
      << " trained, not each of its " << rows << " rows once";
}

std::string Ledger::tracked_state() const {
  std::ostringstream out;
  for (const auto& [epoch, ranges] : epochs_) {
    if (ranges.empty()) continue;
    if (out.tellp() > 0) out << ";";
    out << epoch << ":";
    bool first = true;
    for (const auto& [lo, hi] : ranges) {
      out << (first ? "" : ",") << lo << "-" << hi;
      first = false;
    }
  }
  return out.str();
}

void Ledger::restore_state(const std::string& state) {
  epochs_.clear();
  std::istringstream in(state);
  for (std::string epoch_text; std::getline(in, epoch_text, ';');) {
    std::istringstream e(epoch_text);
    int epoch = 0;
    char colon = 0;
    WEFT_CHECK((e >> epoch >> colon) && colon == ':', DataLoss)
        << "fit's ledger: unreadable record \"" << epoch_text << "\"";
    for (std::string range; std::getline(e, range, ',');) {
      int64_t lo = 0, hi = 0;
      char dash = 0;
      std::istringstream r(range);
      WEFT_CHECK((r >> lo >> dash >> hi) && dash == '-' && lo < hi, DataLoss)
          << "fit's ledger: unreadable range \"" << range << "\" of epoch " << epoch;
      add(epoch, lo, hi - lo);
    }
  }
}

}  // namespace weft::nn::internal
