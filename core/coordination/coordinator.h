// The coordinator of one process set (its rank 0): collects the members'
// reports, decides which collectives are ready on every rank (or fail), and
// emits Decisions that every member applies in the same order. It owns the
// authoritative response cache (slot assignment, LRU eviction) and the
// stall inspector, which sees every waiting tensor, cached or not, and names
// the ranks that have not submitted it.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/common/config.h"
#include "core/coordination/protocol.h"
#include "core/coordination/response_cache.h"
#include "core/coordination/slot_set.h"
#include "core/coordination/stall_inspector.h"

namespace hvd {

class Autotuner;
class Timeline;

class Coordinator {
 public:
  using Clock = std::chrono::steady_clock;

  Coordinator(int size, int32_t set_id, const Config& config);

  void set_timeline(Timeline* t) { timeline_ = t; }
  // Says what the given ranks (of the set) are doing about `tensor`, for the
  // error of a tensor that missed its deadline (liveness probes).
  using Describe = std::function<std::string(const std::vector<int>&, const std::string&)>;
  void set_describe(Describe d) { describe_ = std::move(d); }
  void set_autotuner(Autotuner* a) { autotuner_ = a; }

  // A member's report (its rank within the set). An error means the peer
  // sent something malformed.
  Status OnReport(int rank, Report report);
  // The control link to `rank` broke: every member is told, and the set stops.
  void OnPeerLost(int rank, const std::string& why);
  // Everything decided since the last call, if anything.
  bool Decide(Decision* out);

  // When Decide should run again even without a report (stall checks).
  Clock::time_point next_check() const;
  bool stopped() const { return stopped_; }

 private:
  struct SlotWait {  // for the stall inspector
    Clock::time_point since;
    bool warned = false;
  };
  struct Pending {
    std::vector<Request> requests;  // in arrival order
    std::vector<bool> seen;         // by rank
    Clock::time_point since;
    bool warned = false;
  };

  void RecordHit(int rank, int32_t slot, int64_t epoch, Clock::time_point now);
  // Forgets who waits on `slot` (it ran, failed or changed).
  void ClearWait(int32_t slot);
  void RecordInvalid(int32_t slot, int64_t epoch);
  void RecordRequest(Request&& q);
  void DecideFull(int64_t seq, std::vector<Action>* out, int64_t* bytes);
  void DecideCached(std::vector<Action>* out, int64_t* bytes);
  void AddFull(int64_t seq, Response r, const Request& ref, std::vector<Action>* out);
  void Erase(int32_t slot, int64_t seq, std::vector<Action>* out);
  // The per-slot state, for as many slots as the cache has grown to.
  void GrowSlots();
  // Once per set, when tensors the cache turned away keep coming back: the
  // overflow is negotiated in full each time.
  void WarnIfCacheTooSmall();
  void CheckStalls(std::vector<Action>* out);
  Response Decided(const std::string& name);

  int size_;
  int32_t set_id_;
  const Config& config_;
  Timeline* timeline_ = nullptr;
  Autotuner* autotuner_ = nullptr;
  Describe describe_;
  int64_t seq_ = 0;
  bool stopped_ = false;

  ResponseCache cache_;
  std::vector<int64_t> slot_changed_;  // decision seq of the last put/erase, by slot
  std::vector<SlotWait> waits_;        // by slot
  // The slots each rank reported a hit for that have not run yet, and
  // their union. A slot is ready when every rank (joined ones aside) has
  // it: a word-wise AND over the ranks' bitmaps, as Horovod ANDs its cache
  // bit vectors, instead of counting hits slot by slot.
  std::vector<SlotSet> hit_by_;  // by rank
  SlotSet waiting_slots_;
  // A hit arrived or the joined ranks changed since DecideCached last
  // scanned: the loop decides on every pass while it waits for a peer, and
  // rescanning hundreds of unchanged slots each time took the core from
  // the ranks' own threads.
  bool hits_changed_ = false;
  std::vector<int32_t> erased_;  // by invalidation, not yet announced
  bool warned_cache_ = false;

  std::unordered_map<std::string, Pending> table_;
  std::vector<std::string> arrival_order_;
  std::map<std::string, std::vector<std::string>> group_ready_;
  std::set<int32_t> joined_;
  int32_t last_joined_ = -1;
  std::vector<int32_t> shutdown_ranks_;
  std::vector<int32_t> lost_ranks_;
  std::string lost_error_;
  StallInspector stalls_;
};

}  // namespace hvd
