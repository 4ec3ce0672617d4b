// A tour of weft::np: NumPy's names and dtype rules on weft tensors. Prints each result as
// NumPy would give it; CTest checks the printed values.
#include <cmath>
#include <iostream>
#include <string>

#include <weft/weft.h>

namespace np = weft::np;

void show(const std::string& what, const weft::Tensor& t) {
  std::cout << what << ": " << t.to_vector<double>().size() << " values, dtype "
            << weft::dtype_name(t.dtype()) << ": ";
  for (double v : t.to_vector<double>()) std::cout << v << " ";
  std::cout << "\n";
}

int main() {
  weft::Tensor x = np::array({-2.5, -0.5, 0.5, 1.5, 2.5});
  show("round", np::round(x));  // [-2, -0, 0, 2, 2]: half to even
  show("mod", np::mod(x, 2));   // [1.5, 1.5, 0.5, 1.5, 0.5]: the divisor's sign
  show("cumsum", np::cumsum(x));
  show("isclose", np::isclose(x, np::add(x, 1e-9)));
  show("count_nonzero", np::count_nonzero(np::greater(x, 0)));
  weft::Tensor counts = np::arange(6);  // int64
  show("weak int", np::add(counts, 1));      // stays int64
  show("weak float", np::add(counts, 0.5));  // float64
  show("sum axis", np::sum(np::reshape(counts, {2, 3}), 1));

  // Indexing, as NumPy's a[...]: np::at(a, {...}) reads; .set and .add make updated copies.
  using np::_;
  weft::Tensor a = np::reshape(np::arange(12), {3, 4});
  show("a[1:, ::2]", np::at(a, {np::slice(1), np::slice(_, _, 2)}));
  show("a[:, -1]", np::at(a, {_, -1}));
  show("a[[0, 2], [1, 3]]", np::at(a, {np::array({0, 2}, weft::kInt64), np::array({1, 3}, weft::kInt64)}));
  show("a[a > 8]", np::at(a, {np::greater(a, 8)}));
  show("a[a > 8] = 0", np::at(a, {np::greater(a, 8)}).set(0));
  weft::Tensor column = np::at(a, {np::ellipsis, np::newaxis});
  std::cout << "a[..., None]: shape " << weft::shape_str(column.shape()) << "\n";

  // einsum contracts through matmul; sort is stable with NaN last.
  weft::Tensor m = np::reshape(np::arange(4.0), {2, 2});
  show("einsum ij,jk->ik", np::einsum("ij,jk->ik", {m, m}));
  show("einsum trace", np::einsum("ii", {m}));
  show("sort", np::sort(np::array({3.0, std::nan(""), -1.0, 2.0})));
  show("argsort", np::argsort(np::array({3.0, 1.0, 3.0, 0.0})));
  return 0;
}
