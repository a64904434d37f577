// How a shared-memory member writes what the others will read: plain
// stores or streaming (non-temporal) ones. Plain stores hand the data over
// through the caches, the fastest way while the members' cores share a
// last-level cache; when they do not, every line crosses between dies twice
// (the writer takes it from the reader's cache, the reader takes it back)
// and streaming stores, through memory, are about 3x faster. A VM's vCPUs
// move between the two for seconds at a time (docs/benchmarks.md, "slow
// mode"), so no fixed choice holds: each member times its large calls both
// ways and uses the faster, trying the other every kExplore-th call (the
// same calls on every member: they count calls alike).
#pragma once

#include <cstdint>

namespace hvd {

class StoreChooser {
 public:
  // Calls below this many bytes are latency, not bandwidth: plain stores,
  // not timed.
  static constexpr int64_t kMinBytes = 256 << 10;
  static constexpr uint64_t kExplore = 16;

  struct Choice {
    bool stream = false;   // streaming stores for this call
    bool explore = false;  // the way that is not the faster, tried again
  };
  // For call number `call` (counted alike on every member) of `bytes`.
  Choice Choose(uint64_t call, int64_t bytes) const {
    if (bytes < kMinBytes || ns_per_byte_[0] <= 0) return {};  // time each way once first
    if (ns_per_byte_[1] <= 0) return {true, true};
    const bool best = ns_per_byte_[1] < ns_per_byte_[0];
    const bool explore = call % kExplore == kExplore - 1;
    return {explore ? !best : best, explore};
  }

  // A call of `bytes` took `ns` with streaming stores or without. The way
  // in use drifts towards each new time; the way just tried takes it whole
  // (it is the only recent figure for it).
  void Record(bool stream, bool explored, int64_t bytes, double ns) {
    if (bytes < kMinBytes) return;
    if (!warm_) {  // the first large call also faults the slots in
      warm_ = true;
      return;
    }
    double& e = ns_per_byte_[stream ? 1 : 0];
    const double x = ns / static_cast<double>(bytes);
    e = (e <= 0 || explored) ? x : 0.7 * e + 0.3 * x;
  }

  // ns per byte each way (0: not timed yet), for tests.
  double ns_per_byte(bool stream) const { return ns_per_byte_[stream ? 1 : 0]; }

 private:
  double ns_per_byte_[2] = {0, 0};  // [plain, streaming]
  bool warm_ = false;
};

}  // namespace hvd
