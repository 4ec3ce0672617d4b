// What the oneDNN kernels of weft/ops/onednn/ share: the engine and per-thread stream, the
// per-thread primitive caches and their keys, thread counts, and running a primitive on weft's
// buffers. Included only by the .cc files of this folder (the one door to oneDNN).
#pragma once

#include <xxhash.h>

#include <algorithm>
#include <array>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <span>
#include <unordered_map>

#include "weft/core/dtype.h"
#include "weft/core/errors.h"
#include "weft/core/storage.h"

namespace weft::onednn::internal {

using dnnl::memory;
using tag = memory::format_tag;

dnnl::engine& engine();

memory::data_type data_type(DType t);

// oneDNN (OpenMP runtime) sizes its work for the thread count current when a primitive is made
// and requires the same count when it runs: each primitive is made and run under its own count
// (config::num_threads(), or 1 where a kernel runs on one thread), set by use_threads() first.
int use_threads(int n);
int use_configured_threads();

// What a primitive is made from (shapes, strides, dtypes, thread count, ...), held inline: a
// lookup builds one on the stack and hashes it without touching the heap.
class Key {
 public:
  static constexpr size_t kCapacity = 80;  // a matmul's: 4 + 3 operands x (rank + 2 x 12 dims)
  Key() = default;
  Key(std::initializer_list<int64_t> values) { append(values.begin(), values.end()); }
  // Copies the values in use only (the rest are never read).
  Key(const Key& o) : size_(o.size_) { std::copy_n(o.values_.begin(), size_, values_.begin()); }
  Key& operator=(const Key&) = delete;
  void push_back(int64_t v) { values_.at(size_++) = v; }
  template <typename It>
  void append(It first, It last) {
    for (; first != last; ++first) push_back(*first);
  }
  bool operator==(const Key& o) const {
    return size_ == o.size_ &&
           std::equal(values_.begin(), values_.begin() + size_, o.values_.begin());
  }
  size_t hash() const { return XXH3_64bits(values_.data(), size_ * sizeof(int64_t)); }

 private:
  std::array<int64_t, kCapacity> values_;
  size_t size_ = 0;
};

struct KeyHash {
  size_t operator()(const Key& k) const { return k.hash(); }
};

// Primitives (and what their execution needs) by a key describing every input to their creation.
// Each thread keeps its own (`thread_local Cache<...>`): an entry's memory objects are re-pointed
// at every call's buffers, so two threads running the same primitive at once must not share them,
// and a per-thread map needs no lock. A second thread making the same primitive finds its kernel
// in oneDNN's own primitive cache rather than generating it again.
template <typename Entry>
class Cache {
 public:
  template <typename Make>
  Entry& get(const Key& key, Make&& make) {
    auto it = entries_.find(key);
    if (it == entries_.end()) {
      try {
        it = entries_.emplace(key, make()).first;
      } catch (const dnnl::error& e) {
        WEFT_FAIL(Internal) << "oneDNN could not create a primitive: " << e.what();
      }
    }
    return it->second;
  }

 private:
  std::unordered_map<Key, Entry, KeyHash> entries_;
};

dnnl::stream& stream();

// An argument of a primitive: its DNNL_ARG_* and a memory object of the calling thread's cache.
using Arg = dnnl_exec_arg_t;

void run(const dnnl::primitive& prim, std::span<const Arg> args);
void run(const dnnl::primitive& prim, std::initializer_list<Arg> args);

// A memory object for a cache entry, pointing nowhere until bound. Entries keep theirs and only
// re-point them: making one costs an aligned allocation (150 ns).
memory unbound(const memory::desc& md);

// `arg` of a primitive: `m` re-pointed at `data`.
Arg bind(int arg, const memory& m, const void* data);

template <typename Range>
memory::dims dims_of(const Range& v) {
  return memory::dims(v.begin(), v.end());
}

// One argument of a primitive whose layout it chooses: memory in weft's layout (`user`) and, when
// the primitive chose another layout, memory in that one (`chosen`) and the reorder between them
// (user to chosen for an input, chosen to user for the output).
struct LayoutArg {
  int id;
  memory user, chosen;
  size_t chosen_bytes = 0;  // the scratch buffer `chosen` needs
  std::optional<dnnl::reorder> reorder;
};

LayoutArg layout_arg(int id, const memory::desc& user, const memory::desc& chosen, bool output);

// Binds an input: `data` itself, or a copy in the primitive's layout made in `scratch`.
Arg bind_input(const LayoutArg& a, const void* data, std::shared_ptr<Storage>& scratch);
// Binds an output: `data` itself, or `scratch` in the primitive's layout, which finish_output
// then copies to `data`.
Arg bind_output(const LayoutArg& a, void* data, std::shared_ptr<Storage>& scratch);
void finish_output(const LayoutArg& a, const Arg& bound, void* data);

}  // namespace weft::onednn::internal
