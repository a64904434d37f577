#include "tools/hvd_bench/timing.h"

#include <sys/resource.h>

#include <algorithm>
#include <thread>

namespace hvdbench {
namespace {

double ProcessCpuSeconds() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  return sec(ru.ru_utime) + sec(ru.ru_stime);
}

}  // namespace

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

Summary Summarize(const std::vector<double>& per_round) {
  Summary s;
  if (per_round.empty()) return s;
  s.median = Median(per_round);
  s.min = *std::min_element(per_round.begin(), per_round.end());
  s.max = *std::max_element(per_round.begin(), per_round.end());
  return s;
}

double IdleCpuPerSecond(double seconds, double settle) {
  using Clock = std::chrono::steady_clock;
  std::this_thread::sleep_for(std::chrono::duration<double>(settle));
  const double cpu0 = ProcessCpuSeconds();
  const auto t0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  const double cpu1 = ProcessCpuSeconds();
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  return wall > 0 ? (cpu1 - cpu0) / wall : 0;
}

}  // namespace hvdbench
