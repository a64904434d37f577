// How a shared-memory member writes what the others will read: plain
// stores or streaming (non-temporal) ones. Plain stores hand the data over
// through the caches, the fastest way while the members' cores share a
// last-level cache; when they do not, every line crosses between dies twice
// (the writer takes it from the reader's cache, the reader takes it back)
// and streaming stores, through memory, are about 3x faster. A VM's vCPUs
// move between the two for seconds at a time (docs/benchmarks.md, "slow
// mode"), so no fixed choice holds: each member times its large calls both
// ways and uses the faster, trying the other every kExplore-th large call,
// and at once after a call much slower than its way's figure (the state
// has likely changed). The choice is each member's own: whatever the
// others choose, what they read is the same.
#pragma once

#include <chrono>
#include <cstdint>

#include "core/common/traffic.h"

namespace hvd {

class StoreChooser {
 public:
  // Calls below this many bytes are latency, not bandwidth: plain stores,
  // not timed.
  static constexpr int64_t kMinBytes = 256 << 10;
  static constexpr uint64_t kExplore = 16;
  // A call this many times slower than its way's figure: try the other.
  static constexpr double kSurprise = 1.5;

  struct Choice {
    bool stream = false;   // streaming stores for this call
    bool explore = false;  // the way that is not the faster, tried again
  };
  // The way for the next call, of `bytes`.
  Choice Choose(int64_t bytes) {
    if (bytes < kMinBytes || ns_per_byte_[0] <= 0) return {};  // time each way once first
    if (ns_per_byte_[1] <= 0) return {true, true};
    if (retry_ >= 0) return {retry_ == 1, true};
    const bool best = ns_per_byte_[1] < ns_per_byte_[0];
    const bool explore = ++calls_ % kExplore == 0;
    return {explore ? !best : best, explore};
  }

  // A call of `bytes` made as `c` took `ns`. The way in use drifts towards
  // each new time; the way just tried takes it whole (it is the only recent
  // figure for it).
  void Record(Choice c, int64_t bytes, double ns) {
    if (bytes < kMinBytes) return;
    if (!warm_) {  // the first large call also faults the slots in
      warm_ = true;
      return;
    }
    double& e = ns_per_byte_[c.stream ? 1 : 0];
    const double x = ns / static_cast<double>(bytes);
    retry_ = !c.explore && e > 0 && x > kSurprise * e ? !c.stream : -1;
    e = (e <= 0 || c.explore) ? x : 0.7 * e + 0.3 * x;
  }

  // ns per byte each way (0: not timed yet), for tests.
  double ns_per_byte(bool stream) const { return ns_per_byte_[stream ? 1 : 0]; }

 private:
  double ns_per_byte_[2] = {0, 0};  // [plain, streaming]
  uint64_t calls_ = 0;              // large calls since both ways were timed
  bool warm_ = false;
  int retry_ = -1;  // the way to try next (1: streaming) after a surprise
};

// One call's choice and its time: what this member does, less its wait at
// the call's first barrier (a peer arriving late is not the stores' doing).
class StoreTimer {
 public:
  using Clock = std::chrono::steady_clock;
  StoreTimer(StoreChooser* chooser, int64_t bytes)
      : chooser_(chooser),
        bytes_(bytes),
        choice_(chooser->Choose(bytes)),
        timed_(bytes >= StoreChooser::kMinBytes),
        start_(timed_ ? Clock::now() : Clock::time_point()) {
    if (timed_) CountStoreChoice(choice_.stream);
  }
  bool stream() const { return choice_.stream; }
  // Around each barrier: only the first one's wait is left out.
  void Waiting() {
    if (timed_ && !waited_) ns_ = Since(start_);
  }
  void Waited() {
    if (timed_ && !waited_) start_ = Clock::now();
    waited_ = true;
  }
  // The call succeeded: its time counts.
  void Done() {
    if (timed_) chooser_->Record(choice_, bytes_, ns_ + Since(start_));
  }

 private:
  static double Since(Clock::time_point t) {
    return std::chrono::duration<double, std::nano>(Clock::now() - t).count();
  }
  StoreChooser* chooser_;
  int64_t bytes_;
  StoreChooser::Choice choice_;
  bool timed_;  // large enough for the chooser
  Clock::time_point start_;
  double ns_ = 0;  // before the first barrier
  bool waited_ = false;
};

}  // namespace hvd
