// Paired timing (--paired): hvd and the raw patterns one iteration each, in
// turn, so that every implementation meets the machine in the same state.
// This VM's speed drifts by up to 1.6x over seconds (docs/benchmarks.md);
// implementations timed in separate blocks seconds apart compare that
// drift as much as themselves.
#pragma once

#include <functional>
#include <vector>

#include "tools/hvd_bench/buffers.h"
#include "tools/hvd_bench/workloads.h"

namespace hvdbench {

// One iteration, in place on the output buffer (which starts as the input).
struct PairedImpl {
  std::function<void()> run;
  bool ok = true;  // cleared when its checked iteration was wrong
};

// Checks each implementation's first iteration exactly (after a reset),
// then runs wl.warmup + wl.iters rounds of all of them: round k starts with
// implementation k mod n, going forward or backward as k is even or odd,
// and a barrier precedes every timed iteration.
// Returns each one's median in ms over the timed rounds.
std::vector<double> TimePaired(const Workload& wl, Buffers& b, int size,
                               std::vector<PairedImpl>* impls,
                               const std::function<void()>& barrier);

}  // namespace hvdbench
