// A tour of weft::np: NumPy's names and dtype rules on weft tensors. Prints each result as
// NumPy would give it; CTest checks the printed values.
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
  return 0;
}
