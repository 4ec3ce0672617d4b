#include "weft/nn/merging.h"

#include <algorithm>

#include "weft/nn/internal/layer_util.h"
#include "weft/ops/creation.h"
#include "weft/ops/elementwise.h"
#include "weft/ops/linalg.h"
#include "weft/ops/nn.h"
#include "weft/ops/reduce.h"
#include "weft/ops/shape_ops.h"

namespace weft::nn {
namespace {

class MergeImpl : public LayerImpl {
 public:
  MergeImpl(std::string class_name, std::string name) : LayerImpl(class_name, std::move(name)) {}
  void build_multi(const std::vector<Shape>& shapes) override {
    WEFT_CHECK(shapes.size() >= 2, InvalidArgument)
        << class_name() << " \"" << name() << "\" merges at least 2 inputs, got " << shapes.size();
  }
  // Keras's _Merge.compute_mask: a step is kept where every input that has a mask keeps it
  // (none when no input has one).
  std::vector<Tensor> compute_mask(const std::vector<Tensor>& xs) const override {
    Tensor mask;
    for (const Tensor& x : xs) {
      Tensor m = keras_mask(x);
      if (m.defined()) mask = mask.defined() ? logical_and(mask, m) : m;
    }
    return {mask};
  }
};

class ConcatenateImpl : public MergeImpl {
 public:
  ConcatenateImpl(int64_t axis, std::string name)
      : MergeImpl("Concatenate", std::move(name)), axis_(axis) {}
  std::vector<Tensor> call_multi(const std::vector<Tensor>& xs, bool) override {
    return {concat(xs, axis_)};
  }
  // Keras's: each input's mask (all true for an input without) spread over its features and
  // concatenated as the inputs are, then a step is kept where all its features are.
  std::vector<Tensor> compute_mask(const std::vector<Tensor>& xs) const override {
    if (std::none_of(xs.begin(), xs.end(), [](const Tensor& x) { return keras_mask(x).defined(); }))
      return {};
    std::vector<Tensor> masks;
    for (const Tensor& x : xs) {
      Tensor m = keras_mask(x);
      if (!m.defined()) m = ones(x.shape(), kBool);
      if (m.rank() < x.rank()) m = expand_dims(m, -1);
      masks.push_back(broadcast_to(m, x.shape()));
    }
    return {all(concat(masks, axis_), {-1})};
  }
  ConfigDict get_config() const override { return LayerImpl::get_config().set("axis", axis_); }

 private:
  int64_t axis_;
};

// A merge that folds an elementwise op over its inputs (and may finish, as Average divides).
class FoldImpl : public MergeImpl {
 public:
  using Op = Tensor (*)(const Tensor&, const Tensor&);
  FoldImpl(std::string class_name, std::string name, Op op, bool average = false,
           bool exactly_two = false)
      : MergeImpl(std::move(class_name), std::move(name)),
        op_(op),
        average_(average),
        exactly_two_(exactly_two) {}
  void build_multi(const std::vector<Shape>& shapes) override {
    MergeImpl::build_multi(shapes);
    WEFT_CHECK(!exactly_two_ || shapes.size() == 2, InvalidArgument)
        << class_name() << " \"" << name() << "\" takes exactly 2 inputs, got " << shapes.size();
  }
  std::vector<Tensor> call_multi(const std::vector<Tensor>& xs, bool) override {
    Tensor y = xs[0];
    for (size_t i = 1; i < xs.size(); ++i) y = op_(y, xs[i]);
    if (average_) y = div(y, static_cast<double>(xs.size()));
    return {y};
  }

 private:
  Op op_;
  bool average_, exactly_two_;
};

Tensor add2(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor sub2(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor mul2(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor max2(const Tensor& a, const Tensor& b) { return maximum(a, b); }
Tensor min2(const Tensor& a, const Tensor& b) { return minimum(a, b); }

class DotImpl : public MergeImpl {
 public:
  DotImpl(std::array<int64_t, 2> axes, bool normalize, std::string name)
      : MergeImpl("Dot", std::move(name)), axes_(axes), normalize_(normalize) {}
  // Keras's Dot drops masks (its features axis is summed away).
  std::vector<Tensor> compute_mask(const std::vector<Tensor>&) const override { return {}; }
  void build_multi(const std::vector<Shape>& shapes) override {
    WEFT_CHECK(shapes.size() == 2, InvalidArgument)
        << "Dot \"" << name() << "\" takes exactly 2 inputs, got " << shapes.size();
    const Shape &a = shapes[0], &b = shapes[1];
    bool ok = a.size() == b.size() && (a.size() == 2 || a.size() == 3);
    int64_t ia = ok ? axis(axes_[0], a) : 0, ib = ok ? axis(axes_[1], b) : 0;
    ok = ok && ia >= 1 && ib >= 1 && a[ia] == b[ib];
    WEFT_CHECK(ok, InvalidArgument)
        << "Dot \"" << name() << "\": inputs of shapes " << shape_str(a) << " and " << shape_str(b)
        << " cannot be multiplied along axes {" << axes_[0] << ", " << axes_[1]
        << "}; expected two inputs of rank 2 or 3 whose sizes along the axes (batch excluded) "
           "match";
  }
  std::vector<Tensor> call_multi(const std::vector<Tensor>& xs, bool) override {
    int64_t ia = axis(axes_[0], xs[0].shape()), ib = axis(axes_[1], xs[1].shape());
    Tensor a = normalize_ ? l2_normalize(xs[0], ia) : xs[0];
    Tensor b = normalize_ ? l2_normalize(xs[1], ib) : xs[1];
    if (a.rank() == 2) return {sum(mul(a, b), {1}, true)};
    // (batch, m, d) x (batch, d, n): a's contracted axis last, b's first after the batch.
    if (ia == 1) a = transpose(a, {0, 2, 1});
    if (ib == 2) b = transpose(b, {0, 2, 1});
    return {matmul(a, b)};
  }
  ConfigDict get_config() const override {
    return LayerImpl::get_config()
        .set("axes", std::vector<int64_t>{axes_[0], axes_[1]})
        .set("normalize", normalize_);
  }

 private:
  static int64_t axis(int64_t a, const Shape& s) {
    return a < 0 ? a + static_cast<int64_t>(s.size()) : a;
  }
  std::array<int64_t, 2> axes_;
  bool normalize_;
};

}  // namespace

Concatenate::Concatenate(int64_t axis, const std::string& name)
    : Layer(std::make_shared<ConcatenateImpl>(axis, name)) {}
Add::Add(const std::string& name) : Layer(std::make_shared<FoldImpl>("Add", name, add2)) {}
Subtract::Subtract(const std::string& name)
    : Layer(std::make_shared<FoldImpl>("Subtract", name, sub2, false, true)) {}
Multiply::Multiply(const std::string& name)
    : Layer(std::make_shared<FoldImpl>("Multiply", name, mul2)) {}
Average::Average(const std::string& name)
    : Layer(std::make_shared<FoldImpl>("Average", name, add2, true)) {}
Maximum::Maximum(const std::string& name)
    : Layer(std::make_shared<FoldImpl>("Maximum", name, max2)) {}
Minimum::Minimum(const std::string& name)
    : Layer(std::make_shared<FoldImpl>("Minimum", name, min2)) {}
Dot::Dot(std::array<int64_t, 2> axes, DotOptions o)
    : Layer(std::make_shared<DotImpl>(axes, o.normalize, o.name)) {}

Concatenate Concatenate::from_config(const ConfigDict& c) {
  return internal::configured(Concatenate(c.get_int("axis", -1)), c);
}
Add Add::from_config(const ConfigDict& c) { return internal::configured(Add(), c); }
Subtract Subtract::from_config(const ConfigDict& c) { return internal::configured(Subtract(), c); }
Multiply Multiply::from_config(const ConfigDict& c) { return internal::configured(Multiply(), c); }
Average Average::from_config(const ConfigDict& c) { return internal::configured(Average(), c); }
Maximum Maximum::from_config(const ConfigDict& c) { return internal::configured(Maximum(), c); }
Minimum Minimum::from_config(const ConfigDict& c) { return internal::configured(Minimum(), c); }
Dot Dot::from_config(const ConfigDict& c) {
  std::vector<int64_t> axes = c.get_ints("axes");
  WEFT_CHECK(axes.size() == 2, InvalidArgument)
      << "Dot config: \"axes\" must hold two integers, got " << axes.size();
  return internal::configured(
      Dot(std::array<int64_t, 2>{axes[0], axes[1]}, {.normalize = c.get_bool("normalize", false)}),
      c);
}

}  // namespace weft::nn
