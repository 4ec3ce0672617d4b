#include "weft/dtensor/dtensor.h"

#include "weft/core/errors.h"
#include "weft/dtensor/internal/parts.h"

namespace weft::dtensor {

using internal::parts_of;

namespace {

const internal::Parts& parts_or_fail(const char* what, const Tensor& t) {
  WEFT_CHECK(t.defined(), InvalidArgument) << what << ": the tensor is undefined";
  const internal::Parts* p = parts_of(t);
  WEFT_CHECK(p != nullptr, InvalidArgument)
      << what << ": the tensor of shape " << shape_str(t.shape())
      << " is not a DTensor (make one with dtensor::pack or dtensor::copy_to_mesh)";
  return *p;
}

}  // namespace

bool is_dtensor(const Tensor& t) { return parts_of(t) != nullptr; }

Layout fetch_layout(const Tensor& t) { return parts_or_fail("fetch_layout", t).layout(); }

Tensor pack(const std::vector<Tensor>& components, const Layout& layout) {
  WEFT_CHECK(!layout.is_empty(), InvalidArgument) << "pack: the layout is empty";
  const Mesh& mesh = layout.mesh();
  WEFT_CHECK(static_cast<int>(components.size()) == mesh.num_local_devices(), InvalidArgument)
      << "pack: " << components.size() << " components for the " << mesh.num_local_devices()
      << " local devices of mesh " << mesh.to_string();
  for (size_t i = 0; i < components.size(); ++i) {
    WEFT_CHECK(components[i].defined() && !is_dtensor(components[i]), InvalidArgument)
        << "pack: component " << i << " is "
        << (components[i].defined() ? "a DTensor" : "undefined");
  }
  WEFT_CHECK(static_cast<int>(components[0].rank()) == layout.rank(), InvalidArgument)
      << "pack: component 0 has shape " << shape_str(components[0].shape()) << ", of rank "
      << components[0].rank() << ", but layout " << layout.to_string() << " has rank "
      << layout.rank();
  const Shape global = layout.global_shape(components[0].shape());
  const Shape local = layout.local_shape(global);
  for (size_t i = 0; i < components.size(); ++i) {
    WEFT_CHECK(components[i].shape() == local && components[i].dtype() == components[0].dtype(),
               InvalidArgument)
        << "pack: component " << i << " is " << components[i].dtype() << " "
        << shape_str(components[i].shape()) << "; every component must be " << components[0].dtype()
        << " " << shape_str(local) << " (layout " << layout.to_string() << ")";
  }
  return internal::make(layout, {}, components);
}

std::vector<Tensor> unpack(const Tensor& t) {
  parts_or_fail("unpack", t);
  return parts_of(internal::resolve(t))->components();
}

Tensor relayout(const Tensor& t, const Layout& layout) {
  const internal::Parts& p = parts_or_fail("relayout", t);
  WEFT_CHECK(layout.mesh() == p.layout().mesh() && layout.rank() == p.layout().rank(),
             InvalidArgument)
      << "relayout: a DTensor of layout " << p.layout().to_string() << " cannot take layout "
      << layout.to_string() << " (relayout keeps the mesh and the rank)";
  std::vector<std::string> specs = layout.sharding_specs();
  for (size_t axis = 0; axis < specs.size(); ++axis) {
    if (specs[axis] == kMatch) specs[axis] = p.layout().sharding_specs()[axis];
  }
  Layout target(specs, layout.mesh());
  target.local_shape(t.shape());  // checks that the mesh dimensions divide the axes
  return internal::move(internal::resolve(t), target);
}

Tensor copy_to_mesh(const Tensor& t, const Layout& layout) {
  WEFT_CHECK(t.defined() && !is_dtensor(t), InvalidArgument)
      << "copy_to_mesh: expected a local tensor, got "
      << (t.defined() ? "a DTensor (use relayout)" : "an undefined tensor");
  WEFT_CHECK(!layout.is_empty(), InvalidArgument) << "copy_to_mesh: the layout is empty";
  layout.local_shape(t.shape());  // the rank and the divisions, named
  return internal::move(internal::replicate(t, layout.mesh()), layout);
}

Tensor call_with_layout(const std::function<Tensor()>& fn, const Layout& layout) {
  WEFT_CHECK(fn != nullptr, InvalidArgument) << "call_with_layout: the function is empty";
  Tensor t = fn();
  if (is_dtensor(t)) return relayout(t, layout);
  return copy_to_mesh(t, layout);
}

DVariable::DVariable(const Tensor& initial_value, std::string name, bool trainable)
    : Variable([&] {
        parts_or_fail("DVariable", initial_value);
        return Variable(initial_value, std::move(name), trainable);
      }()) {}

}  // namespace weft::dtensor
