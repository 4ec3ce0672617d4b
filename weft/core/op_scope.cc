#include "weft/core/op_scope.h"

#include "weft/core/errors.h"

namespace weft {
namespace {
OpScope::Handler g_handler = nullptr;
}  // namespace

void OpScope::set_handler(Handler handler) { g_handler = handler; }

Tensor OpScope::run(const SpmdRule& rule, const std::vector<Tensor>& operands,
                    const SpmdFn& fn) const {
  return run_all(rule, operands,
                 [&fn](const SpmdArgs& args) { return std::vector<Tensor>{fn(args)}; })[0];
}

std::vector<Tensor> OpScope::run_all(const SpmdRule& rule, const std::vector<Tensor>& operands,
                                     const SpmdResultsFn& fn) const {
  WEFT_ASSERT(g_handler != nullptr) << op_ << ": a DTensor operand but no SPMD handler";
  return g_handler(op_, rule, operands, fn);
}

}  // namespace weft
