// TcpCommunicator's Gloo algorithms (GLOO_RING, GLOO_HALVING_DOUBLING), on Gloo's own transport:
// the only file that includes Gloo.
#include <gloo/allreduce.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include "weft/core/errors.h"
#include "weft/distribute/collective/internal/reduce.h"
#include "weft/distribute/collective/tcp/internal/impl.h"

namespace weft::distribute::collective {
namespace {

using std::chrono::milliseconds;

// Gloo's rendezvous store over the coordination service's key-value store.
class CoordinationStore : public gloo::rendezvous::Store {
 public:
  CoordinationStore(coordination::CoordinationClient& client, std::string prefix,
                    milliseconds timeout)
      : client_(client), prefix_(std::move(prefix)), timeout_(timeout) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    client_.insert_key_value(prefix_ + key, std::string(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    std::string v = client_.get_key_value(prefix_ + key, timeout_);
    return {v.begin(), v.end()};
  }
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys, const milliseconds& timeout) override {
    for (const auto& k : keys) client_.get_key_value(prefix_ + k, timeout);
  }

 private:
  coordination::CoordinationClient& client_;
  std::string prefix_;
  milliseconds timeout_;
};

template <typename T>
void run_halving_doubling(const std::shared_ptr<gloo::Context>& context, void* data, std::size_t n,
                          Reduction op) {
  const gloo::ReductionFunction<T>* fn = gloo::ReductionFunction<T>::sum;
  if (op == Reduction::MAX) fn = gloo::ReductionFunction<T>::max;
  if (op == Reduction::MIN) fn = gloo::ReductionFunction<T>::min;
  gloo::AllreduceHalvingDoubling<T> algorithm(context, {static_cast<T*>(data)}, static_cast<int>(n),
                                              fn);
  algorithm.run();
}

template <typename T>
void set_output(T& o, void* data, std::size_t n, DType dtype) {
  if (dtype_size(dtype) == 8) {
    o.template setOutput<int64_t>(static_cast<int64_t*>(data), n);
  } else if (dtype_size(dtype) == 4) {
    o.template setOutput<int32_t>(static_cast<int32_t*>(data), n);
  } else {
    o.template setOutput<int16_t>(static_cast<int16_t*>(data), n);
  }
}

}  // namespace

struct TcpCommunicator::Impl::Gloo {
  std::shared_ptr<gloo::transport::Device> device;
  std::shared_ptr<gloo::rendezvous::Context> context;
};

void TcpCommunicator::Impl::gloo(const Header& h, Implementation implementation, void* data,
                                 std::size_t n, DType dtype, Reduction op, milliseconds timeout) {
  check_agreement(h, timeout);
  if (size() == 1 || n == 0) return;
  if (!gloo_) {
    // Gloo's full mesh, connected the first time a call asks for a GLOO_* implementation (every
    // rank has just agreed on that call; Gloo's connections do not prove the token).
    auto made = std::make_shared<Gloo>();
    gloo::transport::tcp::attr attr;
    attr.hostname = hostname_;
    try {
      made->device = gloo::transport::tcp::CreateDevice(attr);
    } catch (const gloo::Exception& e) {
      WEFT_FAIL(Unavailable) << "TcpCommunicator: task " << task(rank_) << " cannot listen on "
                             << hostname_ << " for Gloo: " << e.what();
    }
    made->context = std::make_shared<gloo::rendezvous::Context>(rank_, size());
    made->context->setTimeout(timeout_);
    CoordinationStore store(client_, name_ + "/gloo/", timeout);
    try {
      made->context->connectFullMesh(store, made->device);
    } catch (const gloo::Exception& e) {
      // (The store's own errors are weft's already: a deadline, a failed task.)
      lost("connecting Gloo's ranks", -1, e.what());
    }
    gloo_ = std::move(made);
  }
  const std::shared_ptr<gloo::rendezvous::Context>& context = gloo_->context;
  try {
    if (implementation == Implementation::GLOO_RING) {
      gloo::AllreduceOptions o(context);
      o.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
      set_output(o, data, n, dtype);
      o.setReduceFunction([dtype, op](void* out, const void* a, const void* b, size_t count) {
        internal::combine(out, a, b, count, dtype, op);
      });
      o.setTag(static_cast<uint32_t>(h.sequence & 0x7fffffff));
      o.setTimeout(timeout);
      gloo::allreduce(o);
      return;
    }
    switch (dtype) {
      case kFloat32:
        run_halving_doubling<float>(context, data, n, op);
        break;
      case kFloat64:
        run_halving_doubling<double>(context, data, n, op);
        break;
      case kInt32:
        run_halving_doubling<int32_t>(context, data, n, op);
        break;
      default:
        run_halving_doubling<int64_t>(context, data, n, op);
        break;
    }
  } catch (const gloo::Exception& e) {
    lost(h.describe(), -1, e.what());
  }
}

}  // namespace weft::distribute::collective
