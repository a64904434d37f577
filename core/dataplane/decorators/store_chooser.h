// How a shared-memory member writes what the others will read: plain
// stores or streaming (non-temporal) ones. Plain stores hand the data over
// through the caches, the fastest way while the members' cores share a
// last-level cache; when they do not, every line crosses between dies twice
// (the writer takes it from the reader's cache, the reader takes it back)
// and streaming stores, through memory, are about 3x faster. A VM's vCPUs
// move between the two for seconds at a time (docs/benchmarks.md, "slow
// mode"), so no fixed choice holds: large calls are timed both ways and
// take the faster, trying the other now and then (below), and at once
// after a call much slower than its way's figure (the state has likely
// changed). A try costs: the slower way takes 1.4-1.9x as long with the
// cores sharing a cache (streaming) and about 3.5x without (plain), 3-15%
// of every call on average when tried every 16th. So each try that
// confirms the choice by a clear margin doubles the interval, up to
// kMaxExplore; any other try, or a surprise, brings it back to kExplore.
//
// A call's time is the slowest member's (its barriers wait for it), so
// one member's choice shows in every member's times: member 0 chooses for
// all (AgreedStores). Chosen each for itself, a member that once timed
// plain stores in a slow moment kept streaming for the rest of a launch
// while member 0's tries came out fast (notebook, 2026-12-06).
//
// ShmComm also uses a StoreChooser to choose between two paths of a large
// allreduce (the slots, or the backend's own allreduce: shm_backend.cc),
// and one to place an allreduce's rounds in the slots (shm_shared.cc);
// there way 1 ("stream") is the backend, or the slots' parts in turn.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "core/common/traffic.h"

namespace hvd {

class StoreChooser {
 public:
  // Calls below this many bytes are latency, not bandwidth: plain stores,
  // not timed.
  static constexpr int64_t kMinBytes = 256 << 10;
  // `explore` and `max_explore`: large calls between tries, at first and
  // at most (kExplore and kMaxExplore unless given); `samples`: timings of
  // each way, in turn, before the first choice (each way's figure is then
  // its fastest: a first call may still be cold).
  explicit StoreChooser(int64_t min_bytes = kMinBytes, uint64_t explore = kExplore,
                        uint64_t max_explore = kMaxExplore, int samples = 1)
      : min_bytes_(min_bytes),
        explore_(explore),
        max_explore_(max_explore),
        samples_(samples),
        interval_(explore) {}
  int64_t min_bytes() const { return min_bytes_; }
  static constexpr uint64_t kExplore = 16;     // large calls between tries, at first
  static constexpr uint64_t kMaxExplore = 64;  // ... and after tries that confirmed
  // A tried way this many times slower than the way in use confirms it.
  static constexpr double kClearLoss = 1.2;
  // A call this many times slower than its way's figure: try the other.
  static constexpr double kSurprise = 1.5;

  struct Choice {
    bool stream = false;   // streaming stores for this call
    bool explore = false;  // the way that is not the faster, tried again
  };
  // The way for the next call, of `bytes`. `may_try`: false where the call
  // cannot time this chooser's way (another chooser tries its own in it):
  // the faster way so far, and the turn (a sample, a try) waits.
  Choice Choose(int64_t bytes, bool may_try = true) {
    if (bytes < min_bytes_) return {};
    if (!may_try) return {StreamFaster()};
    if (!cold_given_) {  // the first large call: cold, not timed
      cold_given_ = true;
      return {};
    }
    // Each way `samples` times in turn, plain first, counted as given, not
    // as timed: AgreedStores chooses a call ahead of the call's record.
    // Then a way still without a timing (its call went another way, or is
    // not recorded yet) is tried again.
    const bool giving = given_[0] < samples_ || given_[1] < samples_;
    if (giving || timed_[0] == 0 || timed_[1] == 0) {
      const bool stream = giving ? given_[1] < given_[0] : timed_[1] == 0;
      ++given_[stream ? 1 : 0];
      return {stream, stream};
    }
    if (retry_ >= 0) return {retry_ == 1, true};
    const bool best = StreamFaster();
    const bool explore = ++calls_ >= interval_;
    if (explore) calls_ = 0;
    return {explore ? !best : best, explore};
  }

  // A call of `bytes` made as `c` took `ns`. The way in use drifts towards
  // each new time; the way just tried takes it whole (it is the only recent
  // figure for it).
  void Record(Choice c, int64_t bytes, double ns) {
    if (bytes < min_bytes_) return;
    if (!warm_) {  // the first large call also faults the slots in
      warm_ = true;
      return;
    }
    double& e = ns_per_byte_[c.stream ? 1 : 0];
    const double other = ns_per_byte_[c.stream ? 0 : 1];
    const double x = ns / static_cast<double>(bytes);
    if (timed_[c.stream ? 1 : 0]++ < samples_) {
      e = e <= 0 ? x : std::min(e, x);
      if (retry_ == (c.stream ? 1 : 0)) retry_ = -1;  // a sample, but the retry is done
      return;
    }
    if (c.explore && e > 0 && other > 0) {  // not the first timing of this way
      interval_ = x > kClearLoss * other ? std::min(2 * interval_, max_explore_) : explore_;
    }
    retry_ = !c.explore && e > 0 && x > kSurprise * e ? !c.stream : -1;
    if (retry_ >= 0) interval_ = explore_;
    e = (e <= 0 || c.explore) ? x : 0.7 * e + 0.3 * x;
  }

  // ns per byte each way (0: not timed yet) and large calls between tries,
  // for tests.
  double ns_per_byte(bool stream) const { return ns_per_byte_[stream ? 1 : 0]; }
  uint64_t explore_interval() const { return interval_; }

 private:
  // Both ways timed, and streaming (way 1) the faster so far.
  bool StreamFaster() const {
    return timed_[0] > 0 && timed_[1] > 0 && ns_per_byte_[1] < ns_per_byte_[0];
  }

  int64_t min_bytes_;
  uint64_t explore_, max_explore_;
  int samples_;
  int given_[2] = {0, 0};           // samples of each way chosen
  int timed_[2] = {0, 0};           // timings of each way
  double ns_per_byte_[2] = {0, 0};  // [plain, streaming]
  uint64_t calls_ = 0;              // large calls since the last try
  uint64_t interval_;               // large calls from one try to the next
  bool cold_given_ = false;         // the first large call's way is chosen
  bool warm_ = false;               // ... and recorded
  int retry_ = -1;                  // the way to try next (1: streaming) after a surprise
};

// One collective's stores, the same on every member: member 0's
// StoreChooser decides. Before each call's first barrier member 0 publishes
// the way for the next call, in its line of the segment, by the call's
// parity; every member reads it after that barrier (member 0, publishing
// for the call after that one, writes the other word). A choice stands
// until a large call takes it, so each is timed by the call that took it.
class AgreedStores {
 public:
  explicit AgreedStores(StoreChooser chooser = StoreChooser()) : chooser_(chooser) {}
  // `published`: two words in member 0's line; `chooses`: this is member 0.
  void Attach(int32_t* published, bool chooses) {
    published_ = published;
    chooses_ = chooses;
    after_ = chooser_.Choose(chooser_.min_bytes());  // the first call's: cold, plain
  }
  // This call's way for a member writing `bytes` (small calls: plain).
  StoreChooser::Choice For(int64_t bytes) const {
    return bytes < chooser_.min_bytes() ? StoreChooser::Choice{} : next_;
  }
  // Before the call's first barrier. `large`: member 0's call takes the
  // standing choice (a new one follows).
  void Publish(bool large) {
    if (!chooses_) return;
    if (large) after_ = chooser_.Choose(chooser_.min_bytes());
    __atomic_store_n(&published_[(calls_ + 1) % 2], after_.stream ? 1 : 0, __ATOMIC_RELAXED);
  }
  // After it.
  void Read() {
    ++calls_;
    next_ = chooses_ ? after_
                     : StoreChooser::Choice{
                           __atomic_load_n(&published_[calls_ % 2], __ATOMIC_RELAXED) == 1, false};
  }
  // A large call made as `c` took `ns`: member 0's figures, everyone's count.
  void Record(StoreChooser::Choice c, int64_t bytes, double ns, bool timed) {
    streamed_ += c.stream;
    CountStoreChoice(c.stream);
    if (chooses_ && timed) chooser_.Record(c, bytes, ns);
  }
  const StoreChooser& chooser() const { return chooser_; }
  int64_t streamed() const { return streamed_; }  // large calls that streamed
  // Member 0's: the next large call tries the way not in use.
  bool trying() const { return after_.explore; }

 private:
  StoreChooser chooser_;
  int32_t* published_ = nullptr;
  bool chooses_ = false;
  uint64_t calls_ = 0;          // calls that passed their first barrier
  StoreChooser::Choice next_;   // this member's way for the coming call
  StoreChooser::Choice after_;  // member 0's: the way it published last
  int64_t streamed_ = 0;
};

// One call's choice and its time: what this member does, less its wait at
// the call's first barrier (a peer arriving late is not the stores' doing).
class StoreTimer {
 public:
  using Clock = std::chrono::steady_clock;
  // `bytes`: this member's (large or not: the same on every member, except
  // an alltoall's sends).
  StoreTimer(AgreedStores* stores, int64_t bytes)
      : stores_(stores),
        bytes_(bytes),
        choice_(stores->For(bytes)),
        timed_(bytes >= stores->chooser().min_bytes()),
        start_(timed_ ? Clock::now() : Clock::time_point()) {}
  bool stream() const { return choice_.stream; }
  bool explore() const { return choice_.explore; }
  // Before the first barrier: member 0 sends the call another way (its
  // second path, or between shared buffers), which writes no slots. The
  // standing choice then waits for a call that does, rather than being
  // spent untimed; and a placement chosen beside it (shm_shared.cc) meets
  // the stores it was chosen against.
  void Elsewhere() { elsewhere_ = true; }
  // Around each barrier: only the first one's wait is left out, and the
  // next call's way goes from member 0 to all across it.
  void Waiting() {
    if (waited_) return;
    if (timed_) ns_ = Since(start_);
    stores_->Publish(timed_ && !elsewhere_);
  }
  void Waited() {
    if (waited_) return;
    stores_->Read();
    if (timed_) start_ = Clock::now();
    waited_ = true;
  }
  // The call succeeded through the slots: its time counts unless `timed`
  // is false (another choice was tried in the same call); a call that took
  // another path, or failed, counts nowhere.
  void Done(bool timed = true) {
    if (timed_) stores_->Record(choice_, bytes_, ns_ + Since(start_), timed);
  }

 private:
  static double Since(Clock::time_point t) {
    return std::chrono::duration<double, std::nano>(Clock::now() - t).count();
  }
  AgreedStores* stores_;
  int64_t bytes_;
  StoreChooser::Choice choice_;
  bool timed_;  // large enough for the chooser
  Clock::time_point start_;
  double ns_ = 0;  // before the first barrier
  bool waited_ = false;
  bool elsewhere_ = false;
};

}  // namespace hvd
