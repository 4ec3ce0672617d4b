// What tape.cc and forward.cc share: a count of the tapes and forward accumulators that exist
// (while it is 0, autodiff::is_recording() answers without touching thread-local storage), and
// the hooks through which record() reaches this thread's forward accumulators.
#pragma once

#include <vector>

#include "weft/autodiff/tape.h"

namespace weft::autodiff::internal {

void add_recorder();
void remove_recorder();

// True when a forward accumulator on this thread sees ops (it is not busy computing tangents).
bool forward_recording();
// Gives the op's outputs tangents in every forward accumulator of this thread that sees it and
// holds a tangent of one of its inputs.
void forward_record(const char* op, const std::vector<Tensor>& inputs,
                    const std::vector<Tensor>& outputs, const BackwardFn& backward);

}  // namespace weft::autodiff::internal
