// weft::np: the NumPy names users reach for (tf.experimental.numpy), as free functions on the
// same weft::Tensor, differentiable under a GradientTape. Defaults follow NumPy: float literals
// make float64 arrays, integer sums give int64, axis arguments may be negative.
//
//   namespace np = weft::np;
//   weft::Tensor x = np::random::randn({1000, 1024}, /*seed=*/0);
//   weft::Tensor y = np::clip(np::dot(x, w), -1, 1);
//   np::save("y.npy", y);   // numpy.load("y.npy") reads it
#pragma once

#include "weft/np/array.h"
#include "weft/np/array_like.h"
#include "weft/np/dtypes.h"
#include "weft/np/indexing.h"
#include "weft/np/io.h"
#include "weft/np/linalg.h"
#include "weft/np/math.h"
#include "weft/np/random.h"
#include "weft/np/reductions.h"
