// weft::Tensor: an n-dimensional array, a cheap value. It is a handle to shared storage with a
// shape, strides and an offset (in elements), a dtype and a device; views (reshape, transpose,
// slices, broadcasts) share storage. Tensors are immutable to users: only Variable::assign*
// writes into existing storage.
//
//   weft::Tensor x = weft::Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
//   weft::Tensor y = weft::exp(x) + 1;
//   std::cout << y;   // [[ 3.7182817  8.389056  21.085537]
//                     //  [55.59815  149.41316  404.4288   ]], shape=(2, 3), dtype=float32
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "weft/core/dtype.h"
#include "weft/core/shape.h"
#include "weft/core/storage.h"

namespace weft {

// A C++ number used as an operand: remembers whether it was written as a float, so that
// `int_tensor + 1` stays int32 and `int_tensor + 0.5` becomes float64, as in NumPy.
struct Scalar {
  double value;
  bool is_float;
  template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
  Scalar(T v)  // NOLINT(google-explicit-constructor)
      : value(static_cast<double>(v)), is_float(std::is_floating_point_v<T>) {}
};

class Tensor;
struct TensorBlock;

// The parts of a tensor laid out over several devices (a DTensor, weft/dtensor/dtensor.h): its
// storage is empty and its values are in one component per local device. Core, ops and autodiff
// reach it through this door only; weft/dtensor implements it.
class TensorParts {
 public:
  virtual ~TensorParts() = default;
  // This client's components, one per local device in the mesh's order (several devices may share
  // one component tensor when they hold the same block).
  virtual const std::vector<Tensor>& components() const = 0;
  // The layout's string (TensorFlow's form), for messages.
  virtual std::string describe() const = 0;
  // The whole value when every device holds all of it (after any pending sum is resolved), else
  // an undefined tensor.
  virtual Tensor replicated_value() const = 0;
  // A tensor laid out as this one, made of `components` (same shapes and dtype): what an op that
  // maps each component alone (stop_gradient) returns.
  virtual Tensor with_components(std::vector<Tensor> components) const = 0;
  // Fresh, uninitialised, contiguous components laid out as this tensor (its pending sums
  // resolved): what a Variable made from it writes into.
  virtual Tensor empty_like() const = 0;
  // Autodiff (weft/autodiff/tape.cc). A tape records the ops on the components, so the gradient of
  // a DTensor target starts from its components: `seeds` gives each distinct component and its
  // seed, from the output gradient (undefined: ones), seeding each block of the global tensor
  // once. `gradient` makes a source's gradient from its components' (aligned with components(),
  // undefined where none reached), summing over the devices that hold the same block.
  virtual std::vector<std::pair<Tensor, Tensor>> seeds(const Tensor& output_gradient) const = 0;
  virtual Tensor gradient(const std::vector<Tensor>& component_gradients) const = 0;
  // Checkpoints (weft/train/checkpoint.h): this process's distinct blocks of the global tensor
  // (its pending sums resolved), each once, with where it starts; `saves` when this process holds
  // the lowest device that holds it, which writes it.
  virtual std::vector<TensorBlock> blocks() const = 0;
};

struct TensorImpl {
  std::shared_ptr<Storage> storage;  // null for a DTensor
  int64_t offset = 0;
  Shape shape;
  Strides strides;
  DType dtype = kFloat32;
  uint64_t id = 0;                  // unique per tensor; what gradient tapes key on
  bool trainable_variable = false;  // the value of a trainable Variable: tapes watch it on use
  std::weak_ptr<void> variable;     // the Variable whose value this is (Variable::of finds it)
  // The mask a Keras layer attached to this tensor (weft/nn/layer.h's keras_mask); ops do not
  // carry it to their outputs.
  std::shared_ptr<TensorImpl> keras_mask;
  // Set for a DTensor, whose storage is null: its layout and components.
  std::shared_ptr<const TensorParts> parts;
};

class Tensor {
 public:
  Tensor() = default;  // undefined: what a gradient is when the target does not depend on a source

  // Uninitialised contiguous tensor.
  static Tensor empty(Shape shape, DType dtype = kFloat32, Device device = {});
  static Tensor scalar(Scalar value, DType dtype);
  // Copies `values` (C order) into a new tensor of dtype_of<T>().
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape);
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values) {
    return from_vector(values, {static_cast<int64_t>(values.size())});
  }
  // A view of `base`'s storage with new geometry, and a fresh id.
  static Tensor view(const Tensor& base, const Shape& shape, const Strides& strides,
                     int64_t offset);

  bool defined() const { return impl_ != nullptr; }
  DType dtype() const { return impl_->dtype; }
  const Shape& shape() const { return impl_->shape; }
  int64_t rank() const { return static_cast<int64_t>(impl_->shape.size()); }
  // Size of `axis` (negative counts from the end).
  int64_t dim(int64_t axis) const;
  int64_t numel() const { return num_elements(impl_->shape); }
  const Strides& strides() const { return impl_->strides; }
  int64_t offset() const { return impl_->offset; }
  bool is_contiguous() const;
  uint64_t id() const { return impl_->id; }
  Device device() const { return impl_->storage ? impl_->storage->device() : Device{}; }
  const std::shared_ptr<Storage>& storage() const { return impl_->storage; }
  bool is_trainable_variable() const { return impl_->trainable_variable; }
  // A DTensor's layout and components (weft/dtensor/dtensor.h), or null for a local tensor.
  const TensorParts* parts() const { return impl_->parts.get(); }

  // Pointer to element 0 of this view. T must match the dtype.
  template <typename T>
  T* data() const {
    check_dtype(dtype_of<std::remove_const_t<T>>(), "data");
    if (!impl_->storage) no_storage("data");
    return static_cast<T*>(impl_->storage->data()) + impl_->offset;
  }
  void* raw_data() const {
    if (!impl_->storage) no_storage("raw_data");
    return static_cast<char*>(impl_->storage->data()) + impl_->offset * dtype_size(dtype());
  }
  // The single element of a one-element tensor, converted to T.
  template <typename T>
  T item() const;
  // Every element in C order, converted to T.
  template <typename T>
  std::vector<T> to_vector() const;

  // NumPy-like text: values (truncated past 1000 elements), shape and dtype.
  std::string to_string() const;

  // For autodiff and Variable only.
  TensorImpl* impl() const { return impl_.get(); }
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

 private:
  void check_dtype(DType expected, const char* what) const;
  // A DTensor's values are in its components: InvalidArgument naming its layout.
  [[noreturn]] void no_storage(const char* what) const;
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// One block of a DTensor (TensorParts::blocks): a component and where it starts in the global
// tensor; `saves` when this process holds the lowest device that holds it.
struct TensorBlock {
  Tensor value;
  std::vector<int64_t> offsets;
  bool saves = false;
};

// Fresh ids for new tensors (never reused, so a tape cannot confuse two tensors).
uint64_t next_tensor_id();

}  // namespace weft
