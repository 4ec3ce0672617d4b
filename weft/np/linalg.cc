#include "weft/np/linalg.h"

#include <algorithm>
#include <map>
#include <set>

#include "weft/np/internal/check.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/linalg.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"

namespace weft::np {

Tensor dot(const Tensor& a, const Tensor& b) {
  WEFT_CHECK(a.defined() && b.defined(), InvalidArgument) << "np::dot: an input is undefined";
  if (a.rank() == 0 || b.rank() == 0) return mul(a, b);
  if (b.rank() <= 2) return weft::matmul(a, b);
  // N-d b: contract a's last axis with b's second-to-last, keeping all other axes of both.
  int64_t k = b.dim(-2);
  std::vector<int64_t> perm;
  perm.push_back(b.rank() - 2);
  for (int64_t i = 0; i < b.rank(); ++i) {
    if (i != b.rank() - 2) perm.push_back(i);
  }
  Tensor b2 = weft::reshape(weft::transpose(b, perm), {k, -1});
  Tensor out = weft::matmul(a, b2);
  Shape shape(a.shape().begin(), a.shape().end() - 1);
  shape.insert(shape.end(), b.shape().begin(), b.shape().end() - 2);
  shape.push_back(b.dim(-1));
  return weft::reshape(out, shape);
}
Tensor matmul(const Tensor& a, const Tensor& b) { return weft::matmul(a, b); }

}  // namespace weft::np

namespace weft::np {
namespace {

using internal::check;

// a's axes in `perm` order, then merged into the given groups: (sizes of group 0), ...
Tensor grouped(const Tensor& a, const std::vector<int64_t>& perm, const Shape& groups) {
  return weft::reshape(weft::transpose(a, perm), groups);
}

int64_t product(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

}  // namespace

Tensor diagonal(const Tensor& a, int64_t offset, int64_t axis1, int64_t axis2) {
  check("diagonal", a);
  WEFT_CHECK(a.rank() >= 2, InvalidArgument)
      << "np::diagonal: expected at least 2 dimensions, got shape " << shape_str(a.shape());
  int64_t a1 = normalize_axis("np::diagonal", axis1, a.rank());
  int64_t a2 = normalize_axis("np::diagonal", axis2, a.rank());
  WEFT_CHECK(a1 != a2, InvalidArgument) << "np::diagonal: axis1 and axis2 must differ";
  std::vector<int64_t> perm;
  Shape shape;
  for (int64_t i = 0; i < a.rank(); ++i) {
    if (i != a1 && i != a2) {
      perm.push_back(i);
      shape.push_back(a.dim(i));
    }
  }
  int64_t n1 = a.dim(a1), n2 = a.dim(a2);
  perm.insert(perm.end(), {a1, a2});
  shape.push_back(n1 * n2);
  // (i, i + offset) for offset >= 0, (i - offset, i) below: flat index row * n2 + col.
  int64_t first_row = offset < 0 ? -offset : 0, first_col = offset > 0 ? offset : 0;
  int64_t len = std::max<int64_t>(0, std::min(n1 - first_row, n2 - first_col));
  std::vector<int64_t> index(static_cast<size_t>(len));
  for (int64_t i = 0; i < len; ++i) index[i] = (first_row + i) * n2 + first_col + i;
  Tensor flat = weft::reshape(weft::transpose(a, perm), shape);
  return weft::gather(flat, Tensor::from_vector(index, {len}), -1);
}

Tensor trace(const Tensor& a, int64_t offset, int64_t axis1, int64_t axis2) {
  return weft::sum(diagonal(a, offset, axis1, axis2), {-1});
}

Tensor tensordot(const Tensor& a, const Tensor& b,
                 const std::pair<std::vector<int64_t>, std::vector<int64_t>>& axes) {
  check("tensordot", a);
  check("tensordot", b);
  const auto& [ax_a, ax_b] = axes;
  WEFT_CHECK(ax_a.size() == ax_b.size(), InvalidArgument)
      << "np::tensordot: " << ax_a.size() << " axes of a paired with " << ax_b.size() << " of b";
  std::vector<bool> in_a(a.rank(), false), in_b(b.rank(), false);
  std::vector<int64_t> contract_a, contract_b;
  for (size_t i = 0; i < ax_a.size(); ++i) {
    int64_t x = normalize_axis("np::tensordot", ax_a[i], a.rank());
    int64_t y = normalize_axis("np::tensordot", ax_b[i], b.rank());
    WEFT_CHECK(a.dim(x) == b.dim(y), InvalidArgument)
        << "np::tensordot: axis " << x << " of a has length " << a.dim(x) << " but axis " << y
        << " of b has " << b.dim(y);
    in_a[x] = in_b[y] = true;
    contract_a.push_back(x);
    contract_b.push_back(y);
  }
  std::vector<int64_t> perm_a, perm_b;
  Shape free_a, free_b, out;
  for (int64_t i = 0; i < a.rank(); ++i) {
    if (!in_a[i]) perm_a.push_back(i), free_a.push_back(a.dim(i));
  }
  for (int64_t i = 0; i < b.rank(); ++i) {
    if (!in_b[i]) free_b.push_back(b.dim(i));
  }
  int64_t k = 1;
  for (int64_t x : contract_a) k *= a.dim(x);
  perm_a.insert(perm_a.end(), contract_a.begin(), contract_a.end());
  perm_b = contract_b;
  for (int64_t i = 0; i < b.rank(); ++i) {
    if (!in_b[i]) perm_b.push_back(i);
  }
  Tensor m = weft::matmul(grouped(a, perm_a, {product(free_a), k}),
                          grouped(b, perm_b, {k, product(free_b)}));
  out = free_a;
  out.insert(out.end(), free_b.begin(), free_b.end());
  return weft::reshape(m, out);
}

Tensor tensordot(const Tensor& a, const Tensor& b, int64_t axes) {
  check("tensordot", a);
  check("tensordot", b);
  WEFT_CHECK(axes >= 0 && axes <= a.rank() && axes <= b.rank(), InvalidArgument)
      << "np::tensordot: can't contract " << axes << " axes of arrays of rank " << a.rank()
      << " and " << b.rank();
  std::vector<int64_t> xa, xb;
  for (int64_t i = 0; i < axes; ++i) {
    xa.push_back(a.rank() - axes + i);
    xb.push_back(i);
  }
  return tensordot(a, b, {xa, xb});
}

Tensor inner(const Tensor& a, const Tensor& b) {
  check("inner", a);
  check("inner", b);
  if (a.rank() == 0 || b.rank() == 0) return weft::mul(a, b);
  return tensordot(a, b, {{-1}, {-1}});
}

Tensor outer(const Tensor& a, const Tensor& b) {
  check("outer", a);
  check("outer", b);
  return weft::mul(weft::reshape(a, {-1, 1}), weft::reshape(b, {1, -1}));
}

Tensor vdot(const Tensor& a, const Tensor& b) {
  check("vdot", a);
  check("vdot", b);
  WEFT_CHECK(a.numel() == b.numel(), InvalidArgument)
      << "np::vdot: " << a.numel() << " and " << b.numel() << " elements";
  return weft::sum(weft::mul(weft::flatten(a), weft::flatten(b)));
}

Tensor cross(const Tensor& a, const Tensor& b) {
  check("cross", a);
  check("cross", b);
  auto component_count = [](const Tensor& t) {
    WEFT_CHECK(t.rank() >= 1 && (t.dim(-1) == 2 || t.dim(-1) == 3), InvalidArgument)
        << "np::cross: vectors must have 2 or 3 components, got shape " << shape_str(t.shape());
    return t.dim(-1);
  };
  int64_t na = component_count(a), nb = component_count(b);
  auto part = [](const Tensor& t, int64_t i) { return weft::select(t, -1, i); };
  if (na == 2 && nb == 2) {
    return weft::sub(weft::mul(part(a, 0), part(b, 1)), weft::mul(part(a, 1), part(b, 0)));
  }
  // A 2-vector next to a 3-vector has z = 0.
  auto z = [&](const Tensor& t, int64_t n, const Tensor& other) {
    return n == 3 ? part(t, 2) : weft::zeros_like(weft::mul(part(t, 0), part(other, 0)));
  };
  Tensor a0 = part(a, 0), a1 = part(a, 1), a2 = z(a, na, b);
  Tensor b0 = part(b, 0), b1 = part(b, 1), b2 = z(b, nb, a);
  return weft::stack({weft::sub(weft::mul(a1, b2), weft::mul(a2, b1)),
                      weft::sub(weft::mul(a2, b0), weft::mul(a0, b2)),
                      weft::sub(weft::mul(a0, b1), weft::mul(a1, b0))},
                     -1);
}

Tensor kron(const Tensor& a, const Tensor& b) {
  check("kron", a);
  check("kron", b);
  int64_t r = std::max(a.rank(), b.rank());
  Shape sa(r, 1), sb(r, 1);
  std::copy(a.shape().begin(), a.shape().end(), sa.end() - a.rank());
  std::copy(b.shape().begin(), b.shape().end(), sb.end() - b.rank());
  Shape ea, eb, out;  // a as (a0, 1, a1, 1, ...), b as (1, b0, 1, b1, ...)
  for (int64_t i = 0; i < r; ++i) {
    ea.insert(ea.end(), {sa[i], 1});
    eb.insert(eb.end(), {1, sb[i]});
    out.push_back(sa[i] * sb[i]);
  }
  return weft::reshape(weft::mul(weft::reshape(a, ea), weft::reshape(b, eb)), out);
}

Tensor polyval(const Tensor& p, const Tensor& x) {
  check("polyval", p);
  check("polyval", x);
  WEFT_CHECK(p.rank() == 1, InvalidArgument)
      << "np::polyval: coefficients must be 1-D, got shape " << shape_str(p.shape());
  Tensor y = weft::zeros_like(weft::mul(x, weft::zeros({}, p.dtype())));
  for (int64_t i = 0; i < p.dim(0); ++i) y = weft::add(weft::mul(y, x), weft::select(p, 0, i));
  return y;
}

// ---- einsum
// --------------------------------------------------------------------------------------

namespace {

// A label is a letter's code, or 256 + k for the k-th axis (from the right) of an ellipsis.
using Labels = std::vector<int>;

struct Operand {
  Tensor t;
  Labels labels;
};

constexpr int kEllipsisBase = 256;

bool is_label(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// One operand's subscripts, with its ellipsis expanded to `rank` minus the letters.
Labels parse_term(const std::string& term, int64_t rank, int64_t* ellipsis_dims,
                  const std::string& subscripts) {
  Labels letters_before, letters_after;
  bool seen_ellipsis = false;
  for (size_t i = 0; i < term.size(); ++i) {
    if (term.compare(i, 3, "...") == 0) {
      WEFT_CHECK(!seen_ellipsis, InvalidArgument)
          << "np::einsum: more than one ellipsis in \"" << term << "\" of \"" << subscripts << "\"";
      seen_ellipsis = true;
      i += 2;
      continue;
    }
    WEFT_CHECK(is_label(term[i]), InvalidArgument)
        << "np::einsum: invalid subscript '" << term[i] << "' in \"" << subscripts
        << "\" (letters, \"...\", \",\" and \"->\" only)";
    (seen_ellipsis ? letters_after : letters_before).push_back(term[i]);
  }
  int64_t letters = static_cast<int64_t>(letters_before.size() + letters_after.size());
  int64_t dims = seen_ellipsis ? rank - letters : 0;
  WEFT_CHECK(dims >= 0 && (seen_ellipsis || letters == rank), InvalidArgument)
      << "np::einsum: \"" << term << "\" names " << letters << " axes of an operand of rank "
      << rank << " in \"" << subscripts << "\"";
  *ellipsis_dims = dims;
  Labels labels = letters_before;
  for (int64_t k = dims; k-- > 0;) labels.push_back(kEllipsisBase + static_cast<int>(k));
  labels.insert(labels.end(), letters_after.begin(), letters_after.end());
  return labels;
}

// Takes the diagonal of every label repeated within the operand (kept at the first one's place).
void take_diagonals(Operand& op) {
  for (size_t i = 0; i < op.labels.size(); ++i) {
    for (size_t j = i + 1; j < op.labels.size();) {
      if (op.labels[j] != op.labels[i]) {
        ++j;
        continue;
      }
      WEFT_CHECK(op.t.dim(static_cast<int64_t>(i)) == op.t.dim(static_cast<int64_t>(j)),
                 InvalidArgument)
          << "np::einsum: label '"
          << (op.labels[i] < kEllipsisBase ? std::string(1, char(op.labels[i])) : "...")
          << "' repeats in one operand over axes of sizes " << op.t.dim(static_cast<int64_t>(i))
          << " and " << op.t.dim(static_cast<int64_t>(j));
      // diagonal() drops axes i and j and appends the diagonal: move it back to i.
      Tensor d = diagonal(op.t, 0, static_cast<int64_t>(i), static_cast<int64_t>(j));
      int64_t last = d.rank() - 1;
      std::vector<int64_t> perm;
      for (int64_t k = 0; k < last; ++k) {
        if (k == static_cast<int64_t>(i)) perm.push_back(last);
        perm.push_back(k);
      }
      if (static_cast<int64_t>(i) == last) perm.push_back(last);
      op.labels.erase(op.labels.begin() + static_cast<int64_t>(j));
      op.t = weft::transpose(d, perm);
    }
  }
}

// Sums out the labels of `op` that are not in `keep`.
void sum_unkept(Operand& op, const std::set<int>& keep) {
  Axes axes;
  Labels rest;
  for (size_t i = 0; i < op.labels.size(); ++i) {
    if (keep.count(op.labels[i])) {
      rest.push_back(op.labels[i]);
    } else {
      axes.push_back(static_cast<int64_t>(i));
    }
  }
  if (axes.empty()) return;
  op.t = weft::sum(op.t, axes);
  op.labels = rest;
}

int64_t label_size(const Operand& op, int label) {
  for (size_t i = 0; i < op.labels.size(); ++i) {
    if (op.labels[i] == label) return op.t.dim(static_cast<int64_t>(i));
  }
  return 1;
}

// a and b contracted over their shared labels not in `keep`; shared labels in `keep` are batch
// axes. One (batched) matmul: a as (batch, a-only, shared), b as (batch, shared, b-only).
Operand contract(const Operand& a, const Operand& b, const std::set<int>& keep) {
  Labels batch, a_only, b_only, summed;
  for (int l : a.labels) {
    bool in_b = std::find(b.labels.begin(), b.labels.end(), l) != b.labels.end();
    (in_b ? (keep.count(l) ? batch : summed) : a_only).push_back(l);
  }
  for (int l : b.labels) {
    if (std::find(a.labels.begin(), a.labels.end(), l) == a.labels.end()) b_only.push_back(l);
  }
  auto arrange = [](const Operand& op, const std::vector<const Labels*>& groups,
                    const std::map<int, int64_t>& sizes) {
    std::vector<int64_t> perm;
    Shape full, merged;
    for (const Labels* g : groups) {
      int64_t n = 1;
      for (int l : *g) {
        auto at = std::find(op.labels.begin(), op.labels.end(), l);
        perm.push_back(at - op.labels.begin());
        full.push_back(sizes.at(l));
        n *= sizes.at(l);
      }
      merged.push_back(n);
    }
    Tensor t = weft::transpose(op.t, perm);
    if (t.shape() != full) t = weft::broadcast_to(t, full);  // size-1 ellipsis axes broadcast
    return weft::reshape(t, merged);
  };
  std::map<int, int64_t> sizes;
  for (int l : a.labels) sizes[l] = label_size(a, l);
  for (int l : b.labels) {
    int64_t n = label_size(b, l);
    auto [it, fresh] = sizes.emplace(l, n);
    if (!fresh && it->second != n) {
      WEFT_CHECK(it->second == 1 || n == 1, InvalidArgument)
          << "np::einsum: label '" << (l < kEllipsisBase ? std::string(1, char(l)) : "...")
          << "' has sizes " << it->second << " and " << n;
      it->second = std::max(it->second, n);
    }
  }
  Tensor product;
  if (batch.empty()) {
    product =
        weft::matmul(arrange(a, {&a_only, &summed}, sizes), arrange(b, {&summed, &b_only}, sizes));
  } else {
    product = weft::matmul(arrange(a, {&batch, &a_only, &summed}, sizes),
                           arrange(b, {&batch, &summed, &b_only}, sizes));
  }
  Operand out;
  out.labels = batch;
  out.labels.insert(out.labels.end(), a_only.begin(), a_only.end());
  out.labels.insert(out.labels.end(), b_only.begin(), b_only.end());
  Shape shape;
  for (int l : out.labels) shape.push_back(sizes.at(l));
  out.t = weft::reshape(product, shape);
  return out;
}

}  // namespace

Tensor einsum(const std::string& subscripts, const std::vector<Tensor>& operands) {
  std::string spec;
  for (char c : subscripts) {
    if (c != ' ') spec += c;
  }
  size_t arrow = spec.find("->");
  std::string inputs = spec.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = inputs.find(',', start);
    terms.push_back(inputs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  WEFT_CHECK(terms.size() == operands.size(), InvalidArgument)
      << "np::einsum: \"" << subscripts << "\" has " << terms.size() << " operand terms but "
      << operands.size() << " operands were given";
  std::vector<Operand> ops;
  std::map<int, int> counts;
  int64_t ellipsis_dims = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    check("einsum", operands[i]);
    int64_t dims = 0;
    Operand op{operands[i], parse_term(terms[i], operands[i].rank(), &dims, subscripts)};
    ellipsis_dims = std::max(ellipsis_dims, dims);
    for (int l : op.labels) ++counts[l];  // "ii" counts i twice: an implicit output drops it
    take_diagonals(op);
    ops.push_back(op);
  }
  Labels output;
  if (arrow == std::string::npos) {
    // Implicit: the ellipsis axes, then the letters seen once, alphabetically.
    for (int64_t k = ellipsis_dims; k-- > 0;) output.push_back(kEllipsisBase + static_cast<int>(k));
    for (const auto& [l, n] : counts) {
      if (l < kEllipsisBase && n == 1) output.push_back(l);
    }
  } else {
    std::string out_term = spec.substr(arrow + 2);
    bool has_ellipsis = out_term.find("...") != std::string::npos;
    int64_t letters = static_cast<int64_t>(out_term.size()) - (has_ellipsis ? 3 : 0);
    int64_t dims = 0;
    output = parse_term(out_term, letters + (has_ellipsis ? ellipsis_dims : 0), &dims, subscripts);
  }
  std::set<int> out_set(output.begin(), output.end());
  WEFT_CHECK(out_set.size() == output.size(), InvalidArgument)
      << "np::einsum: a label repeats in the output of \"" << subscripts << "\"";
  for (int l : output) {
    WEFT_CHECK(counts.count(l), InvalidArgument)
        << "np::einsum: output label '" << (l < kEllipsisBase ? std::string(1, char(l)) : "...")
        << "' of \"" << subscripts << "\" is in no operand";
  }
  // Left to right: each operand first drops the labels no one else needs, then meets the next.
  auto needed_after = [&](size_t i) {
    std::set<int> keep = out_set;
    for (size_t j = i; j < ops.size(); ++j) keep.insert(ops[j].labels.begin(), ops[j].labels.end());
    return keep;
  };
  Operand acc = ops[0];
  std::set<int> keep0 = needed_after(1);
  sum_unkept(acc, keep0);
  for (size_t i = 1; i < ops.size(); ++i) {
    std::set<int> keep = needed_after(i + 1);
    std::set<int> keep_b = keep;
    keep_b.insert(acc.labels.begin(), acc.labels.end());
    sum_unkept(ops[i], keep_b);
    acc = contract(acc, ops[i], keep);
  }
  sum_unkept(acc, out_set);
  std::vector<int64_t> perm;
  for (int l : output) {
    perm.push_back(std::find(acc.labels.begin(), acc.labels.end(), l) - acc.labels.begin());
  }
  return weft::transpose(acc.t, perm);
}

}  // namespace weft::np
