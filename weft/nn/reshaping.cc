#include "weft/nn/reshaping.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "weft/nn/internal/layer_util.h"
#include "weft/ops/cast.h"
#include "weft/ops/linalg.h"
#include "weft/ops/shape_ops.h"

namespace weft::nn {
namespace {

using internal::layer_label;

void check_image(const LayerImpl& layer, const Shape& shape) {
  internal::check_rank(layer, shape, 4, "(batch, height, width, channels)");
}

// TF's half-pixel bilinear resize of one axis as an (out, in) matrix of weights.
Tensor bilinear_weights(int64_t in, int64_t out, DType dtype) {
  std::vector<double> w(static_cast<size_t>(out * in), 0.0);
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  for (int64_t o = 0; o < out; ++o) {
    double src = (static_cast<double>(o) + 0.5) * scale - 0.5;
    double lo_f = std::floor(src);
    int64_t lo = std::max<int64_t>(static_cast<int64_t>(lo_f), 0);
    int64_t hi = std::min<int64_t>(static_cast<int64_t>(std::ceil(src)), in - 1);
    double frac = src - lo_f;
    w[o * in + lo] += 1 - frac;
    w[o * in + hi] += frac;
  }
  return cast(Tensor::from_vector(w, {out, in}), dtype);
}

std::vector<int64_t> flat(const Padding2D& p) {
  return {p[0].first, p[0].second, p[1].first, p[1].second};
}
Padding2D padding_of(const ConfigDict& c, const std::string& key) {
  std::vector<int64_t> v = c.get_ints(key);
  WEFT_CHECK(v.size() == 4, InvalidArgument)
      << "config field \"" << key << "\" must hold [top, bottom, left, right], got " << v.size()
      << " integers";
  return {{{v[0], v[1]}, {v[2], v[3]}}};
}

}  // namespace

UpSampling2D::UpSampling2D(Size2 size, UpSampling2DOptions o)
    : Layer(std::make_shared<internal::FunctionLayerImpl>(
          "UpSampling2D", o.name, o.dtype,
          [size, o](const LayerImpl& layer, const Shape& shape) {
            check_image(layer, shape);
            WEFT_CHECK(size[0] > 0 && size[1] > 0, InvalidArgument)
                << layer_label(layer) << ": size must be positive, got {" << size[0] << ", "
                << size[1] << "}";
            WEFT_CHECK(o.interpolation == "nearest" || o.interpolation == "bilinear",
                       InvalidArgument)
                << layer_label(layer) << ": interpolation must be \"nearest\" or \"bilinear\", "
                << "got \"" << o.interpolation << "\"";
          },
          [size, o](const Tensor& x) {
            const int64_t n = x.dim(0), h = x.dim(1), w = x.dim(2), c = x.dim(3);
            if (o.interpolation == "nearest") {
              Tensor e = reshape(x, {n, h, 1, w, 1, c});
              return reshape(broadcast_to(e, {n, h, size[0], w, size[1], c}),
                             {n, h * size[0], w * size[1], c});
            }
            // Rows, then columns, each a matrix product with the interpolation weights.
            Tensor rows = bilinear_weights(h, h * size[0], x.dtype());
            Tensor cols = bilinear_weights(w, w * size[1], x.dtype());
            Tensor t = matmul(rows, reshape(x, {n, h, w * c}));               // (n, H, w c)
            t = transpose(reshape(t, {n, h * size[0], w, c}), {0, 1, 3, 2});  // (n, H, c, w)
            t = matmul(t, cols, false, true);                                 // (n, H, c, W)
            return transpose(t, {0, 1, 3, 2});
          },
          [size, o](ConfigDict& c) {
            c.set("size", internal::config_pair(size)).set("interpolation", o.interpolation);
          })) {}
UpSampling2D UpSampling2D::from_config(const ConfigDict& c) {
  UpSampling2DOptions o;
  o.interpolation = c.get_string("interpolation", o.interpolation);
  return internal::configured(UpSampling2D(internal::config_size2(c, "size", {2, 2}), o), c);
}

ZeroPadding2D::ZeroPadding2D(Padding2D p, LayerOptions o)
    : Layer(std::make_shared<internal::FunctionLayerImpl>(
          "ZeroPadding2D", o.name, o.dtype,
          [p](const LayerImpl& layer, const Shape& shape) {
            check_image(layer, shape);
            for (int64_t v : flat(p)) {
              WEFT_CHECK(v >= 0, InvalidArgument)
                  << layer_label(layer) << ": padding must be non-negative, got " << v;
            }
          },
          [p](const Tensor& x) {
            return pad(x, {{0, 0}, p[0], p[1], {0, 0}});
          },
          [p](ConfigDict& c) { c.set("padding", flat(p)); })) {}
ZeroPadding2D ZeroPadding2D::from_config(const ConfigDict& c) {
  return internal::configured(ZeroPadding2D(padding_of(c, "padding")), c);
}

Cropping2D::Cropping2D(Padding2D p, LayerOptions o)
    : Layer(std::make_shared<internal::FunctionLayerImpl>(
          "Cropping2D", o.name, o.dtype,
          [p](const LayerImpl& layer, const Shape& shape) {
            check_image(layer, shape);
            bool fits = p[0].first >= 0 && p[0].second >= 0 && p[1].first >= 0 &&
                        p[1].second >= 0 && p[0].first + p[0].second < shape[1] &&
                        p[1].first + p[1].second < shape[2];
            WEFT_CHECK(fits, InvalidArgument)
                << layer_label(layer) << ": cropping {{" << p[0].first << ", " << p[0].second
                << "}, {" << p[1].first << ", " << p[1].second
                << "}} must be non-negative and leave something of inputs of shape "
                << shape_str(shape);
          },
          [p](const Tensor& x) {
            return slice(x, {Slice{}, Slice{p[0].first, x.dim(1) - p[0].second},
                             Slice{p[1].first, x.dim(2) - p[1].second}, Slice{}});
          },
          [p](ConfigDict& c) { c.set("cropping", flat(p)); })) {}
Cropping2D Cropping2D::from_config(const ConfigDict& c) {
  return internal::configured(Cropping2D(padding_of(c, "cropping")), c);
}

Permute::Permute(std::vector<int64_t> dims, LayerOptions o)
    : Layer(std::make_shared<internal::FunctionLayerImpl>(
          "Permute", o.name, o.dtype,
          [dims](const LayerImpl& layer, const Shape& shape) {
            std::vector<int64_t> sorted = dims;
            std::sort(sorted.begin(), sorted.end());
            bool ok = sorted.size() + 1 == shape.size();
            for (size_t i = 0; ok && i < sorted.size(); ++i) {
              ok = sorted[i] == static_cast<int64_t>(i) + 1;
            }
            WEFT_CHECK(ok, InvalidArgument)
                << layer_label(layer) << ": dims must be a permutation of 1.." << shape.size() - 1
                << " for inputs of shape " << shape_str(shape);
          },
          [dims](const Tensor& x) {
            std::vector<int64_t> perm{0};
            perm.insert(perm.end(), dims.begin(), dims.end());
            return transpose(x, perm);
          },
          [dims](ConfigDict& c) { c.set("dims", dims); })) {}
Permute Permute::from_config(const ConfigDict& c) {
  return internal::configured(Permute(c.get_ints("dims")), c);
}

RepeatVector::RepeatVector(int64_t n, LayerOptions o)
    : Layer(std::make_shared<internal::FunctionLayerImpl>(
          "RepeatVector", o.name, o.dtype,
          [n](const LayerImpl& layer, const Shape& shape) {
            internal::check_rank(layer, shape, 2, "(batch, features)");
            WEFT_CHECK(n > 0, InvalidArgument)
                << layer_label(layer) << ": n must be positive, got " << n;
          },
          [n](const Tensor& x) {
            return broadcast_to(expand_dims(x, 1), {x.dim(0), n, x.dim(1)});
          },
          [n](ConfigDict& c) { c.set("n", n); })) {}
RepeatVector RepeatVector::from_config(const ConfigDict& c) {
  return internal::configured(RepeatVector(c.get_int("n")), c);
}

}  // namespace weft::nn
