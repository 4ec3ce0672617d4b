#include "weft/nn/merging.h"

#include "weft/nn/internal/layer_util.h"
#include "weft/ops/elementwise.h"
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
};

class ConcatenateImpl : public MergeImpl {
 public:
  ConcatenateImpl(int64_t axis, std::string name)
      : MergeImpl("Concatenate", std::move(name)), axis_(axis) {}
  std::vector<Tensor> call_multi(const std::vector<Tensor>& xs, bool) override {
    return {concat(xs, axis_)};
  }
  ConfigDict get_config() const override { return LayerImpl::get_config().set("axis", axis_); }

 private:
  int64_t axis_;
};

class AddImpl : public MergeImpl {
 public:
  explicit AddImpl(std::string name) : MergeImpl("Add", std::move(name)) {}
  std::vector<Tensor> call_multi(const std::vector<Tensor>& xs, bool) override {
    Tensor sum = xs[0];
    for (size_t i = 1; i < xs.size(); ++i) sum = add(sum, xs[i]);
    return {sum};
  }
};

}  // namespace

Concatenate::Concatenate(int64_t axis, const std::string& name)
    : Layer(std::make_shared<ConcatenateImpl>(axis, name)) {}
Add::Add(const std::string& name) : Layer(std::make_shared<AddImpl>(name)) {}

Concatenate Concatenate::from_config(const ConfigDict& c) {
  return internal::configured(Concatenate(c.get_int("axis", -1)), c);
}
Add Add::from_config(const ConfigDict& c) { return internal::configured(Add(), c); }

}  // namespace weft::nn
