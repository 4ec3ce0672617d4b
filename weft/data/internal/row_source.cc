#include <cstring>
#include <sstream>

#include "weft/data/internal/pipeline.h"
#include "weft/ops/cast.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/shape_ops.h"

namespace weft::data {

RowSource::RowSource(std::vector<Tensor> components, std::vector<Conversion> conversions)
    : components_(std::move(components)), conversions_(std::move(conversions)) {
  WEFT_CHECK(!components_.empty(), InvalidArgument)
      << "Dataset::from_tensor_slices: expected at least one tensor";
  WEFT_ASSERT(conversions_.empty() || conversions_.size() == components_.size())
      << conversions_.size() << " conversions for " << components_.size() << " components";
  conversions_.resize(components_.size());
  for (size_t i = 0; i < components_.size(); ++i) {
    Tensor& c = components_[i];
    WEFT_CHECK(c.defined() && c.rank() >= 1, InvalidArgument)
        << "Dataset::from_tensor_slices: component " << i
        << " must have rank >= 1 to be sliced, got "
        << (c.defined() ? shape_str(c.shape()) : "an undefined tensor");
    WEFT_CHECK(c.dim(0) == components_[0].dim(0), InvalidArgument)
        << "Dataset::from_tensor_slices: component " << i << " has " << c.dim(0) << " rows (shape "
        << shape_str(c.shape()) << "), component 0 has " << components_[0].dim(0);
    c = contiguous(c);
  }
}

namespace {

// dst[j] = src[j] / divisor, for the dtypes datasets convert between (anything else goes through
// ops). Returns false when it does not handle the pair.
template <typename S>
bool convert_from(const S* src, void* dst, DType to, int64_t n, double divisor) {
  auto loop = [&]<typename D>(D* out) {
    for (int64_t j = 0; j < n; ++j) {
      out[j] = static_cast<D>(divisor == 1 ? static_cast<double>(src[j])
                                           : static_cast<double>(src[j]) / divisor);
    }
    return true;
  };
  switch (to) {
    case kInt32:
      return loop(static_cast<int32_t*>(dst));
    case kInt64:
      return loop(static_cast<int64_t*>(dst));
    case kFloat32:
      return loop(static_cast<float*>(dst));
    case kFloat64:
      return loop(static_cast<double*>(dst));
    default:
      return false;
  }
}

bool convert_values(const void* src, DType from, void* dst, DType to, int64_t n, double divisor) {
  switch (from) {
    case kUInt8:
      return convert_from(static_cast<const uint8_t*>(src), dst, to, n, divisor);
    case kInt32:
      return convert_from(static_cast<const int32_t*>(src), dst, to, n, divisor);
    case kInt64:
      return convert_from(static_cast<const int64_t*>(src), dst, to, n, divisor);
    case kFloat32:
      return convert_from(static_cast<const float*>(src), dst, to, n, divisor);
    case kFloat64:
      return convert_from(static_cast<const double*>(src), dst, to, n, divisor);
    default:
      return false;
  }
}

}  // namespace

bool RowSource::converts(size_t component) const {
  const Conversion& conv = conversions_[component];
  return (conv.dtype && *conv.dtype != components_[component].dtype()) || conv.divisor != 1;
}

Tensor RowSource::gather(size_t component, const std::vector<int64_t>& idx) const {
  const Tensor& src = components_[component];
  const int64_t n = static_cast<int64_t>(idx.size());
  bool consecutive = n > 0;
  for (int64_t k = 1; k < n && consecutive; ++k) consecutive = idx[k] == idx[0] + k;
  const bool convert = converts(component);
  if (consecutive && !convert) return slice(src, {Slice{idx[0], idx[0] + n, 1}});

  Shape shape = src.shape();
  shape[0] = n;
  const int64_t row_elems = src.dim(0) > 0 ? src.numel() / src.dim(0) : 0;
  const Conversion& conv = conversions_[component];
  const DType to = conv.dtype.value_or(src.dtype());
  const char* from = static_cast<const char*>(src.raw_data());
  const int64_t from_row = row_elems * dtype_size(src.dtype());
  if (convert) {
    // One pass: each source row is converted straight into its place in the batch.
    Tensor out = Tensor::empty(shape, to);
    char* dst = static_cast<char*>(out.raw_data());
    const int64_t to_row = row_elems * dtype_size(to);
    bool handled = true;
    for (int64_t k = 0; k < n && handled; ++k) {
      handled = convert_values(from + idx[k] * from_row, src.dtype(), dst + k * to_row, to,
                               row_elems, conv.divisor);
    }
    if (handled) return out;
  }
  Tensor rows = Tensor::empty(shape, src.dtype());
  char* dst = static_cast<char*>(rows.raw_data());
  // One memcpy per run of consecutive rows.
  for (int64_t k = 0; k < n;) {
    int64_t run = 1;
    while (k + run < n && idx[k + run] == idx[k] + run) ++run;
    std::memcpy(dst + k * from_row, from + idx[k] * from_row, run * from_row);
    k += run;
  }
  if (convert) {
    if (conv.dtype && *conv.dtype != rows.dtype()) rows = cast(rows, *conv.dtype);
    if (conv.divisor != 1) rows = div(rows, conv.divisor);
  }
  return rows;
}

Element RowSource::row(int64_t i) const {
  Element e;
  e.reserve(components_.size());
  for (size_t c = 0; c < components_.size(); ++c) {
    e.push_back(converts(c) ? select(gather(c, {i}), 0, 0) : select(components_[c], 0, i));
  }
  return e;
}

Element RowSource::rows(const std::vector<int64_t>& idx) const {
  Element out;
  out.reserve(components_.size());
  for (size_t c = 0; c < components_.size(); ++c) out.push_back(gather(c, idx));
  return out;
}

std::string RowSource::describe() const {
  std::ostringstream s;
  s << "from_tensor_slices(";
  for (size_t c = 0; c < components_.size(); ++c) {
    s << (c ? ", " : "") << shape_str(components_[c].shape()) << " " << components_[c].dtype();
    const Conversion& conv = conversions_[c];
    if (conv.dtype) s << " as " << *conv.dtype;
    if (conv.divisor != 1) s << " / " << conv.divisor;
  }
  s << ")";
  return s.str();
}

namespace internal {
namespace {
thread_local RestoreScope* t_restore_scope = nullptr;
}  // namespace

RestoreScope::RestoreScope() : outer_(t_restore_scope) { t_restore_scope = this; }
RestoreScope::~RestoreScope() { t_restore_scope = outer_; }
bool RestoreScope::active() { return t_restore_scope != nullptr; }
void RestoreScope::on_success(std::function<void()> f) {
  if (t_restore_scope) {
    t_restore_scope->pending_.push_back(std::move(f));
  } else {
    f();
  }
}
void RestoreScope::commit() {
  for (auto& f : pending_) f();
  pending_.clear();
}

Element stack_elements(const std::vector<Element>& elements) {
  WEFT_ASSERT(!elements.empty()) << "stack_elements of no elements";
  const Element& first = elements[0];
  for (size_t k = 1; k < elements.size(); ++k) {
    WEFT_CHECK(elements[k].size() == first.size(), InvalidArgument)
        << "Dataset::batch: element " << k << " of the batch has " << elements[k].size()
        << " components, element 0 has " << first.size();
    for (size_t c = 0; c < first.size(); ++c) {
      const Tensor& t = elements[k][c];
      WEFT_CHECK(t.shape() == first[c].shape() && t.dtype() == first[c].dtype(), InvalidArgument)
          << "Dataset::batch: component " << c << " of element " << k << " of the batch is "
          << shape_str(t.shape()) << " " << t.dtype() << ", in element 0 it is "
          << shape_str(first[c].shape()) << " " << first[c].dtype()
          << "; batch needs equal shapes and dtypes (map each element to a fixed shape first)";
    }
  }
  const int64_t n = static_cast<int64_t>(elements.size());
  Element out;
  for (size_t c = 0; c < first.size(); ++c) {
    Shape shape = first[c].shape();
    shape.insert(shape.begin(), n);
    Tensor batch = Tensor::empty(shape, first[c].dtype());
    const int64_t row_bytes = first[c].numel() * dtype_size(first[c].dtype());
    char* to = static_cast<char*>(batch.raw_data());
    for (int64_t k = 0; k < n; ++k) {
      Tensor row = contiguous(elements[k][c]);
      if (row_bytes > 0) std::memcpy(to + k * row_bytes, row.raw_data(), row_bytes);
    }
    out.push_back(batch);
  }
  return out;
}

}  // namespace internal
}  // namespace weft::data
