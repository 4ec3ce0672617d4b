// np::at against NumPy's indexing guide: scripts/make_np_indexing_goldens.py writes NumPy's
// result of each example; each case here makes the same selection (or functional update) with
// np::at on the same arrays. Below: gather, mask and scatter gradients, and the errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "weft/np/np.h"
#include "weft/testing/gradient_check.h"
#include "weft/testing/np_goldens.h"

namespace np = weft::np;
using np::_;
using weft::Tensor;

namespace {

Tensor ints(std::vector<int64_t> v, weft::Shape shape) { return Tensor::from_vector(v, shape); }
Tensor ints(std::vector<int64_t> v) { return Tensor::from_vector(v); }
Tensor mask(std::vector<uint8_t> v, weft::Shape shape) {
  return weft::cast(Tensor::from_vector(v, shape), weft::kBool);
}

const std::map<std::string, std::function<Tensor()>>& np_indexing_cases() {
  static const std::map<std::string, std::function<Tensor()>> m = [] {
    Tensor x10 = np::arange(10);
    Tensor x25 = np::reshape(x10, {2, 5});
    Tensor x231 = ints({1, 2, 3, 4, 5, 6}, {2, 3, 1});
    Tensor x_desc = np::arange(10, 1, -1);
    Tensor y = np::reshape(np::arange(35), {5, 7});
    Tensor x32 = ints({1, 2, 3, 4, 5, 6}, {3, 2});
    Tensor x43 = np::reshape(np::arange(12), {4, 3});
    double nan = std::nan("");
    Tensor xnan = Tensor::from_vector<double>({1, 2, nan, 3, nan, nan}, {3, 2});
    Tensor x4 = np::array({1., -1., -2., 3});
    Tensor x32b = ints({0, 1, 1, 1, 2, 2}, {3, 2});
    Tensor x235 = np::reshape(np::arange(30), {2, 3, 5});
    Tensor x234 = np::reshape(np::arange(24), {2, 3, 4});
    Tensor a34 = np::reshape(np::arange(12), {3, 4});
    Tensor b = np::greater(y, 20);
    using F = std::function<Tensor()>;
    return std::map<std::string, F>{
        {"int", [=] { return np::at(x10, {2}).get(); }},
        {"int_negative", [=] { return np::at(x10, {-2}).get(); }},
        {"slice", [=] { return np::at(x10, {np::slice(2, 5)}).get(); }},
        {"slice_stop_negative", [=] { return np::at(x10, {np::slice(_, -7)}).get(); }},
        {"slice_step", [=] { return np::at(x10, {np::slice(1, 7, 2)}).get(); }},
        {"two_ints",
         [=] {
           return np::at(x25, {1, 3}).get();
         }},
        {"two_ints_negative",
         [=] {
           return np::at(x25, {1, -1}).get();
         }},
        {"row", [=] { return np::at(x25, {0}).get(); }},
        {"slice_negative_start", [=] { return np::at(x10, {np::slice(-2, 10)}).get(); }},
        {"slice_negative_step", [=] { return np::at(x10, {np::slice(-3, 3, -1)}).get(); }},
        {"slice_open_stop", [=] { return np::at(x10, {np::slice(5)}).get(); }},
        {"slice_3d", [=] { return np::at(x231, {np::slice(1, 2)}).get(); }},
        {"ellipsis_int",
         [=] {
           return np::at(x231, {np::ellipsis, 0}).get();
         }},
        {"newaxis",
         [=] {
           return np::at(x231, {_, np::newaxis, _, _}).get();
         }},
        {"newaxis_outer_sum",
         [=] {
           Tensor head = np::at(x10, {np::slice(_, 5)});
           return np::add(np::at(head, {_, np::newaxis}).get(),
                          np::at(head, {np::newaxis, _}).get());
         }},
        {"column",
         [=] {
           return np::at(x43, {_, 0}).get();
         }},
        {"reverse_all",
         [=] {
           return np::at(x43, {np::slice(_, _, -1), np::slice(_, _, -1)}).get();
         }},
        {"array_1d",
         [=] {
           return np::at(x_desc, {ints({3, 3, 1, 8})}).get();
         }},
        {"array_negative",
         [=] {
           return np::at(x_desc, {ints({3, 3, -3, 8})}).get();
         }},
        {"array_2d",
         [=] {
           return np::at(x_desc, {ints({1, 1, 2, 3}, {2, 2})}).get();
         }},
        {"two_arrays",
         [=] {
           return np::at(y, {ints({0, 2, 4}), ints({0, 1, 2})}).get();
         }},
        {"array_and_int",
         [=] {
           return np::at(y, {ints({0, 2, 4}), 1}).get();
         }},
        {"array_rows",
         [=] {
           return np::at(y, {ints({0, 2, 4})}).get();
         }},
        {"pairs",
         [=] {
           return np::at(x32, {ints({0, 1, 2}), ints({0, 1, 0})}).get();
         }},
        {"corner_arrays",
         [=] {
           return np::at(x43, {ints({0, 0, 3, 3}, {2, 2}), ints({0, 2, 0, 2}, {2, 2})}).get();
         }},
        {"broadcast_arrays",
         [=] {
           Tensor rows = np::at(ints({0, 3}), {_, np::newaxis});
           return np::at(x43, {rows, ints({0, 2})}).get();
         }},
        {"mask_not_nan", [=] { return np::at(xnan, {np::logical_not(np::isnan(xnan))}).get(); }},
        {"mask_negative", [=] { return np::at(x4, {np::less(x4, 0)}).get(); }},
        {"mask_column",
         [=] {
           return np::at(y, {np::at(b, {_, 5}).get()}).get();
         }},
        {"mask_rows_slice",
         [=] {
           return np::at(x32b, {np::less_equal(np::sum(x32b, -1), 2), _}).get();
         }},
        {"mask_2d_of_3d",
         [=] {
           return np::at(x235, {mask({1, 1, 0, 0, 1, 1}, {2, 3})}).get();
         }},
        {"mask_all", [=] { return np::at(y, {b}).get(); }},
        {"array_then_slice",
         [=] {
           return np::at(y, {ints({0, 2, 4}), np::slice(1, 3)}).get();
         }},
        {"slices",
         [=] {
           return np::at(x43, {np::slice(1, 2), np::slice(1, 3)}).get();
         }},
        {"slice_then_list",
         [=] {
           return np::at(x43, {np::slice(1, 2), ints({1, 2})}).get();
         }},
        {"mask_then_slice",
         [=] {
           return np::at(y, {np::at(b, {_, 5}).get(), np::slice(1, 3)}).get();
         }},
        {"separated_arrays",
         [=] {
           return np::at(x234, {ints({0, 1}), _, ints({0, 2})}).get();
         }},
        {"adjacent_arrays",
         [=] {
           return np::at(x234, {_, ints({0, 1}), ints({1, 2})}).get();
         }},
        {"ellipsis_array",
         [=] {
           return np::at(x234, {np::ellipsis, ints({1, 2})}).get();
         }},
        {"empty_ellipsis_separates",
         [=] {
           return np::at(x234, {_, ints({0, 1}), np::ellipsis, ints({0, 1})}).get();
         }},
        {"newaxis_and_array",
         [=] {
           return np::at(x234, {np::newaxis, ints({1, 0}), np::ellipsis, 1}).get();
         }},
        {"ix_mask",
         [=] {
           auto ix = np::ix_({mask({1, 0, 1}, {3}), ints({0, 2})});
           return np::at(a34, {ix[0], ix[1]}).get();
         }},
        {"set_slice", [=] { return np::at(x10, {np::slice(2, 7)}).set(1); }},
        {"set_mask", [=] { return np::at(x4, {np::less(x4, 0)}).set(0.0); }},
        {"set_array_values",
         [=] {
           return np::at(x43, {ints({0, 3}), ints({1, 2})}).set(ints({-1, -2}));
         }},
        {"set_row_broadcast",
         [=] {
           return np::at(x43, {1}).set(ints({7, 8, 9}));
         }},
        {"add_mask", [=] { return np::at(x4, {np::less(x4, 0)}).add(20.0); }},
        {"add_repeated",
         [=] {
           return np::at(x10, {ints({1, 1, 3, 1})}).add(1);
         }},
    };
  }();
  return m;
}

TEST(NpIndexing, TheIndexingGuideExamplesGiveNumPysResults) {
  const auto& goldens = weft::testing::np_goldens("make_np_indexing_goldens.py");
  std::set<std::string> known;
  for (const auto& [name, fn] : np_indexing_cases()) known.insert(name);
  EXPECT_EQ(goldens.case_names(), known);
  for (const auto& [name, fn] : np_indexing_cases()) {
    EXPECT_TRUE(weft::testing::matches_numpy(fn(), goldens.load(name, "out").at(0))) << name;
  }
}

TEST(NpIndexing, UpdatesLeaveTheOriginalUnchanged) {
  Tensor x = np::arange(5.0);
  Tensor y = np::at(x, {np::slice(1, 3)}).set(-1.0);
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{0, 1, 2, 3, 4}));
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{0, -1, -1, 3, 4}));
}

TEST(NpIndexing, GatherMaskAndScatterGradientsPassTheChecker) {
  using weft::testing::gradient_check;
  using weft::testing::uniform;
  Tensor a = uniform({4, 5}, 1);
  Tensor rows = ints({0, 3, 3}), cols = ints({1, 4, 1});
  Tensor m = np::greater(uniform({4, 5}, 3), 0);
  std::vector<std::pair<std::string, weft::testing::TensorFn>> fns = {
      {"basic",
       [](auto& x) {
         return np::at(x[0], {np::slice(1, 3), np::slice(_, _, -2)}).get();
       }},
      {"int_and_newaxis",
       [](auto& x) {
         return np::at(x[0], {np::newaxis, 2, np::ellipsis}).get();
       }},
      {"gather",
       [=](auto& x) {
         return np::at(x[0], {rows, cols}).get();
       }},
      {"gather_slice",
       [=](auto& x) {
         return np::at(x[0], {rows, np::slice(1, 4)}).get();
       }},
      {"mask", [=](auto& x) { return np::at(x[0], {m}).get(); }},
      {"set",
       [=](auto& x) {
         return np::at(x[0], {_, ints({0, 2})}).set(x[1]);
       }},
      {"add_repeated",
       [=](auto& x) {
         return np::at(x[0], {ints({3, 3})}).add(x[1]);
       }},
      {"set_mask", [=](auto& x) { return np::at(x[0], {m}).set(2.5); }},
      // Repeated positions: the last write wins, and only it gets a gradient.
      {"set_repeated",
       [=](auto& x) {
         return np::at(x[0], {ints({2, 2})}).set(x[1]);
       }},
  };
  std::map<std::string, Tensor> values = {{"set", uniform({4, 1}, 4)},
                                          {"add_repeated", uniform({5}, 5)},
                                          {"set_repeated", uniform({2, 5}, 6)}};
  for (const auto& [name, f] : fns) {
    std::vector<Tensor> in = {a};
    if (values.count(name)) in.push_back(values.at(name));
    EXPECT_TRUE(gradient_check(f, in)) << name;
  }
}

TEST(NpIndexing, ErrorsNameTheAxisAndItsSize) {
  Tensor a = np::zeros({3, 4});
  auto message = [](auto f) {
    try {
      f();
    } catch (const weft::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([&] {
              np::at(a, {0, 4}).get();
            }).find("index 4 is out of bounds for axis 1 with size 4"),
            std::string::npos);
  EXPECT_NE(message([&] {
              np::at(a, {ints({0, -4})}).get();
            }).find("index -4 is out of bounds for axis 0 with size 3"),
            std::string::npos);
  EXPECT_NE(message([&] {
              np::at(a, {0, 0, 0}).get();
            }).find("too many indices"),
            std::string::npos);
  EXPECT_NE(message([&] {
              np::at(a, {mask({1, 0}, {2})}).get();
            }).find("boolean index did not match: axis 0 has size 3"),
            std::string::npos);
  EXPECT_NE(message([&] {
              np::at(a, {np::array({0.5})}).get();
            }).find("index arrays must be integers or bool"),
            std::string::npos);
}

}  // namespace
