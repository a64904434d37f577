// How hvd_bench times things: per-round medians of iterations, summaries
// over rounds, and the CPU a process burns while it waits.
#pragma once

#include <chrono>
#include <vector>

#include "tools/hvd_bench/buffers.h"
#include "tools/hvd_bench/workloads.h"

namespace hvdbench {

double Median(std::vector<double> v);

// One implementation's figure: the median over rounds of the per-round
// medians, and the range over rounds.
struct Summary {
  double median = 0, min = 0, max = 0;
};
Summary Summarize(const std::vector<double>& per_round);

// Large workloads align the ranks before every iteration so that one rank's
// late start is not counted; small ones run back to back.
inline bool AlignEachIteration(const Workload& wl) {
  return wl.bytes() >= (1 << 20);
}

// Runs warm-up + timed iterations of `iteration` on `b` and returns this
// rank's median in ms. The output is reset first and the first iteration is
// checked exactly (against `size` ranks); a failure clears *ok.
template <typename Iter, typename Barrier>
double TimeIt(const Workload& wl, Buffers& b, int size, bool* ok, Iter iteration, Barrier barrier) {
  using Clock = std::chrono::steady_clock;
  std::vector<double> times;
  times.reserve(static_cast<size_t>(wl.iters));
  const bool align = AlignEachIteration(wl);
  b.Reset();
  barrier();
  for (int it = 0; it < wl.warmup + wl.iters; ++it) {
    if (align) barrier();
    auto t0 = Clock::now();
    iteration();
    auto t1 = Clock::now();
    if (it == 0 && !b.Verify(size)) *ok = false;
    if (it >= wl.warmup) {
      times.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
  }
  return Median(times);
}

// CPU time (user + system, every thread of this process, getrusage) per
// wall-clock second over `seconds`, measured after sleeping `settle`
// seconds; 1.0 = one core busy. The calling thread only sleeps meanwhile.
double IdleCpuPerSecond(double seconds, double settle);

}  // namespace hvdbench
