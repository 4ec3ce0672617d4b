// Tensor::to_string: NumPy's layout (aligned columns, one bracket per dimension, "..." past 1000
// elements) followed by TensorFlow's "shape=..., dtype=..." suffix.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "weft/core/tensor.h"

namespace weft {
namespace {

constexpr int64_t kSummaryThreshold = 1000;
constexpr int64_t kEdgeItems = 3;
constexpr int kMaxDigits = 8;

// Whether `parsed` is the same value as `v` once stored in `dtype`.
bool round_trips(DType dtype, double v, double parsed) {
  auto f = static_cast<float>(v), p = static_cast<float>(parsed);
  switch (dtype) {
    case kFloat32:
      return f == p;
    case kFloat16:
      return float16(f).bits == float16(p).bits;
    case kBFloat16:
      return bfloat16(f).bits == bfloat16(p).bits;
    default:
      return v == parsed;
  }
}

std::string printf_double(const char* fmt, int digits, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, digits, v);
  return buf;
}

// The fewest digits (at most kMaxDigits) after the point that give back v in its dtype.
int shortest_digits(DType dtype, double v, const char* fmt) {
  int d = 0;
  while (d < kMaxDigits &&
         !round_trips(dtype, v, std::strtod(printf_double(fmt, d, v).c_str(), nullptr))) {
    ++d;
  }
  return d;
}

std::string special(double v) {
  if (std::isnan(v)) return "nan";
  return v > 0 ? "inf" : "-inf";
}

// Every element as NumPy prints it: fixed point with each value's own shortest digits, aligned
// on the point; or, when magnitudes span more than 1e3 (or reach 1e8 or drop below 1e-4),
// scientific with one shared precision.
std::vector<std::string> format_all(DType dtype, const std::vector<double>& values) {
  std::vector<std::string> out;
  out.reserve(values.size());
  if (dtype == kBool) {
    for (double v : values) out.push_back(v != 0 ? "True" : "False");
  } else if (!is_floating(dtype)) {
    for (double v : values) out.push_back(std::to_string(static_cast<int64_t>(v)));
  } else {
    double max_abs = 0, min_abs = INFINITY;
    for (double v : values) {
      if (!std::isfinite(v) || v == 0) continue;
      max_abs = std::max(max_abs, std::fabs(v));
      min_abs = std::min(min_abs, std::fabs(v));
    }
    bool scientific =
        max_abs >= 1e8 || (min_abs != INFINITY && (min_abs < 1e-4 || max_abs / min_abs > 1e3));
    if (scientific) {
      int digits = 0;
      for (double v : values) {
        if (std::isfinite(v)) digits = std::max(digits, shortest_digits(dtype, v, "%.*e"));
      }
      for (double v : values)
        out.push_back(std::isfinite(v) ? printf_double("%.*e", digits, v) : special(v));
    } else {
      size_t int_width = 0, frac_width = 0;
      for (double v : values) {
        std::string s = std::isfinite(v)
                            ? printf_double("%.*f", shortest_digits(dtype, v, "%.*f"), v)
                            : special(v);
        if (std::isfinite(v) && s.find('.') == std::string::npos) s += ".";
        size_t dot = std::min(s.find('.'), s.size());
        int_width = std::max(int_width, dot);
        frac_width = std::max(frac_width, s.size() - dot);
        out.push_back(std::move(s));
      }
      for (std::string& s : out) {
        size_t dot = std::min(s.find('.'), s.size());
        s = std::string(int_width - dot, ' ') + s + std::string(frac_width - (s.size() - dot), ' ');
      }
    }
  }
  size_t width = 0;
  for (const std::string& s : out) width = std::max(width, s.size());
  for (std::string& s : out) s.insert(0, width - s.size(), ' ');
  return out;
}

struct Printer {
  const Shape& shape;
  const std::vector<std::string>& cells;
  const std::vector<int64_t>& strides;  // contiguous strides of `shape`
  bool summarize;

  void print(std::string& out, size_t dim, int64_t base, size_t indent) const {
    if (dim == shape.size()) {
      out += cells[base];
      return;
    }
    out += "[";
    int64_t n = shape[dim];
    bool innermost = dim + 1 == shape.size();
    std::string separator =
        innermost ? " " : std::string(shape.size() - dim - 1, '\n') + std::string(indent + 1, ' ');
    for (int64_t i = 0; i < n; ++i) {
      if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) {
        out += "...";
        out += innermost ? std::string(" ") : std::string(1, '\n') + std::string(indent + 1, ' ');
        i = n - kEdgeItems;
      }
      print(out, dim + 1, base + i * strides[dim], indent + 1);
      if (i + 1 < n) out += separator;
    }
    out += "]";
  }
};

}  // namespace

std::string Tensor::to_string() const {
  if (!defined()) return "Tensor(undefined)";
  if (parts()) {
    // TensorFlow prints a DTensor's components, one per device, with its layout.
    std::string out = "DTensor(layout=\"" + parts()->describe() + "\", components=[";
    const std::vector<Tensor>& components = parts()->components();
    for (size_t i = 0; i < components.size(); ++i) {
      out += (i ? ",\n" : "\n") + components[i].to_string();
    }
    return out + "], shape=" + shape_str(shape()) + ", dtype=" + std::string(dtype_name(dtype())) +
           ")";
  }
  std::vector<double> values = to_vector<double>();
  std::vector<std::string> cells = format_all(dtype(), values);
  std::vector<int64_t> strides = contiguous_strides(shape());
  std::string out;
  Printer{shape(), cells, strides, numel() > kSummaryThreshold}.print(out, 0, 0, 0);
  return out + ", shape=" + shape_str(shape()) + ", dtype=" + std::string(dtype_name(dtype()));
}

}  // namespace weft
