// What hvd_bench asks of hvd itself: one iteration of a workload, a
// barrier, and small reductions to gather every rank's results.
#pragma once

#include <cstdint>
#include <vector>

#include "hvd/hvd.h"
#include "tools/hvd_bench/buffers.h"

namespace hvdbench {

// Submits an async allreduce (SUM) for every tensor in order, then waits
// for all of them.
// `in_place`: each tensor reduced in place in the output buffer (a training
// step's gradients), not from the input into the output.
void HvdIteration(Buffers& b, std::vector<hvd_handle>& handles, bool in_place = false);

void HvdBarrier();

// 64-bit MAX or SUM over ranks.
int64_t HvdAllreduceInt64(int64_t v, hvd_reduce_op op, const char* name);

// Every rank's value, indexed by rank.
std::vector<double> HvdGather(double v, const char* name);

}  // namespace hvdbench
