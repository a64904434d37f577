#include "tools/hvd_bench/paired.h"

#include <chrono>

#include "tools/hvd_bench/timing.h"

namespace hvdbench {

std::vector<double> TimePaired(const Workload& wl, Buffers& b, int size,
                               std::vector<PairedImpl>* impls,
                               const std::function<void()>& barrier) {
  using Clock = std::chrono::steady_clock;
  std::vector<PairedImpl>& v = *impls;
  const size_t n = v.size();
  b.set_output_starts_as_input(true);
  for (PairedImpl& impl : v) {
    b.Reset();
    barrier();
    impl.run();
    if (!b.Verify(size)) impl.ok = false;
  }
  // Later iterations keep summing in place: the values grow, the work does not change.
  std::vector<std::vector<double>> times(n);
  for (int it = 0; it < wl.warmup + wl.iters; ++it) {
    // Forward on even rounds, backward on odd ones: each implementation
    // follows both its neighbours in the order, not always the same one
    // (what ran before can leave the caches or the core in a state that
    // favours or hurts the next).
    const size_t start = static_cast<size_t>(it) % n;
    for (size_t j = 0; j < n; ++j) {
      const size_t i = it % 2 == 0 ? (start + j) % n : (start + n - j) % n;
      barrier();
      const auto t0 = Clock::now();
      v[i].run();
      const auto t1 = Clock::now();
      if (it >= wl.warmup)
        times[i].push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
  }
  b.set_output_starts_as_input(false);
  std::vector<double> medians;
  for (const auto& t : times) medians.push_back(Median(t));
  return medians;
}

}  // namespace hvdbench
