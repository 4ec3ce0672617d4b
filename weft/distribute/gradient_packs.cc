#include "weft/distribute/gradient_packs.h"

#include "weft/autodiff/tape.h"
#include "weft/core/errors.h"
#include "weft/ops/cast.h"
#include "weft/ops/creation.h"

namespace weft::distribute {

GradientPacks::GradientPacks(ReplicaContext& ctx, const std::vector<Variable>& vars,
                             std::size_t bytes)
    : ctx_(ctx),
      vars_(vars),
      gradients_(vars.size()),
      ready_(vars.size(), false),
      pack_of_(vars.size(), 0) {
  std::size_t filled = 0;
  for (std::size_t i = vars.size(); i-- > 0;) {
    const Variable& v = vars[i];
    const std::size_t size = static_cast<std::size_t>(v.value().numel()) * dtype_size(v.dtype());
    bool fits = !packs_.empty() && vars[packs_.back().members.back()].dtype() == v.dtype() &&
                filled + size <= bytes;
    if (!fits) {
      packs_.emplace_back();
      filled = 0;
    }
    packs_.back().members.push_back(i);
    ++packs_.back().waiting;
    pack_of_[i] = packs_.size() - 1;
    filled += size;
  }
}

void GradientPacks::ready(std::size_t i, const Tensor& gradient) {
  WEFT_CHECK(i < vars_.size() && !ready_[i], InvalidArgument)
      << "GradientPacks::ready: gradient " << i << " of " << vars_.size()
      << (i < vars_.size() ? " was already reported" : " is out of range");
  ready_[i] = true;
  gradients_[i] = gradient;
  --packs_[pack_of_[i]].waiting;
  begin_ready_packs();
}

void GradientPacks::begin_ready_packs() {
  autodiff::NoRecordScope no_record;
  for (; next_ < packs_.size() && packs_[next_].waiting == 0; ++next_) {
    Pack& pack = packs_[next_];
    // The gradients, then one flag per gradient (1: this replica has it) in the same dtype:
    // the summed flags say which gradients some replica had.
    std::vector<Tensor> values;
    std::vector<double> flags;
    for (std::size_t i : pack.members) {
      const Tensor& v = vars_[i].value();
      const Tensor& g = gradients_[i];
      flags.push_back(g.defined() ? 1.0 : 0.0);
      values.push_back(!g.defined()             ? zeros(v.shape(), v.dtype())
                       : g.dtype() == v.dtype() ? g
                                                : cast(g, v.dtype()));
    }
    values.push_back(cast(Tensor::from_vector(flags), vars_[pack.members[0]].dtype()));
    pack.pending = ctx_.begin_all_reduce(ReduceOp::SUM, values);
    for (std::size_t i : pack.members) gradients_[i] = Tensor();
  }
}

std::vector<Tensor> GradientPacks::finish() {
  for (std::size_t i = 0; i < vars_.size(); ++i) {
    if (!ready_[i]) ready(i, Tensor());
  }
  std::vector<Tensor> out(vars_.size());
  for (Pack& pack : packs_) {
    std::vector<Tensor> summed = pack.pending->wait();
    const std::vector<double> flags = cast(summed.back(), kFloat64).to_vector<double>();
    for (std::size_t k = 0; k < pack.members.size(); ++k) {
      if (flags[k] > 0) out[pack.members[k]] = std::move(summed[k]);
    }
  }
  return out;
}

}  // namespace weft::distribute
