#include "core/tensor/wait_totals.h"

#include <algorithm>

namespace hvd {

WaitTotals& Waits() {
  static WaitTotals totals;
  return totals;
}

void CountWait(int64_t begin, int64_t end, int64_t started) {
  if (end <= begin) return;
  const int64_t negotiating =
      started <= 0 ? end - begin : std::clamp(started - begin, int64_t{0}, end - begin);
  WaitTotals& w = Waits();
  w.waits.fetch_add(1, std::memory_order_relaxed);
  w.ns.fetch_add(static_cast<uint64_t>(end - begin), std::memory_order_relaxed);
  w.negotiating_ns.fetch_add(static_cast<uint64_t>(negotiating), std::memory_order_relaxed);
}

}  // namespace hvd
