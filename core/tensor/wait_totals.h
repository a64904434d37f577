// How long callers blocked in hvd_wait on collectives not yet finished,
// split where the collective started to run: before that moment every
// rank had not yet submitted it (the caller waited for slower ranks, and
// for the negotiation's round trip); after it, the caller waited for data
// movement that its own work did not hide. Process-wide since the first
// load; hvd_get_stats reports them.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace hvd {

struct WaitTotals {
  std::atomic<uint64_t> waits{0};           // waits that found the collective unfinished
  std::atomic<uint64_t> ns{0};              // time they took
  std::atomic<uint64_t> negotiating_ns{0};  // of it, before the collective started
};

WaitTotals& Waits();

// Nanoseconds on the steady clock: what HandleState records as a start time.
inline int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Adds one wait from `begin` to `end`, of which the collective ran from
// `started` (0: it never started, every rank had not submitted it).
void CountWait(int64_t begin, int64_t end, int64_t started);

}  // namespace hvd
