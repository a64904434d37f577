// Negotiation for one process set: decides, identically on every rank,
// which collectives run this cycle. Steady state: tensors seen before are
// agreed by one AND-allreduce of cache bits. Otherwise ranks send their new
// requests to the coordinator (rank 0 of the set), which checks that ranks
// agree and answers with a response list broadcast to all.
#pragma once

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/backends/comm.h"
#include "core/common/config.h"
#include "core/coordination/message.h"
#include "core/coordination/response_cache.h"

namespace hvd {

struct CycleOutput {
  std::vector<ResponsePtr> responses;  // unfused, in the order every rank runs them
  bool shutdown = false;
  std::vector<int32_t> shutdown_ranks;
};

class Controller {
 public:
  Controller(Comm* comm, const Config& config, int32_t set_id);

  // One cycle. `requests` are this rank's new requests for the set. A cache
  // hit is kept by pointer until every rank has it, so each request must
  // stay valid until its response is out (the tensor queue keeps them in
  // their entries until the background thread takes them).
  Status RunCycle(const std::vector<const Request*>& requests, bool shutdown, CycleOutput* out);

  // Names this rank submitted that are not yet answered.
  size_t outstanding() const { return outstanding_.size(); }
  // Negotiation events go to the timeline (coordinator only; may be null).
  void set_timeline(class Timeline* t) { timeline_ = t; }
  const ResponseCache& cache() const { return cache_; }

 private:
  // Flags travel inverted in word 0 of the AND-allreduce, so AND gives OR.
  enum Flag : uint64_t {
    kShutdownFlag = 1,
    kUncachedFlag = 2,
    kInvalidFlag = 4,
    kJoinedFlag = 8,
    kStaleHitFlag = 16,  // some rank's cache hit waits too long: see StaleHits
  };

  static bool Cacheable(OpType t);
  Status Coordinate(const RequestList& mine, ResponseList* out);
  // Coordinator only.
  void Record(const Request& q);
  bool IsReady(const std::string& name) const;
  Response Decide(const std::string& name);
  void CheckStalls(ResponseList* out);
  // Stall inspector, every rank: true when a pending cache hit has waited
  // half the stall time, or a hit moved for that reason is still unanswered.
  bool StaleHits();
  void EmitReady(ResponseList* out);
  // Pending cache hits of this rank, by slot.
  void SetHit(int pos, const Request* q, std::chrono::steady_clock::time_point now);
  const Request& TakeHit(int pos);

  Comm* comm_;
  const Config& config_;
  int32_t set_id_;
  int rank_;
  int size_;
  ResponseCache cache_;
  // A submitted tensor found in the cache, waiting for every rank's bit. A
  // flat array by slot: a steady-state cycle sets and clears hundreds.
  struct PendingHit {
    bool pending = false;
    const Request* request = nullptr;  // this rank's, to renegotiate if the slot is lost
    std::chrono::steady_clock::time_point since;
  };
  std::vector<PendingHit> hits_;
  size_t num_hits_ = 0;            // how many are pending
  std::vector<Request> resend_;    // hits whose slot was evicted
  std::set<std::string> demoted_;  // stale hits sent to the coordinator, until answered
  std::unordered_map<std::string, Request> outstanding_;  // sent to the coordinator
  class Timeline* timeline_ = nullptr;

  // Coordinator state.
  struct Pending {
    std::vector<Request> requests;  // in arrival order
    std::vector<bool> seen;         // by rank
    std::chrono::steady_clock::time_point first_seen;
    bool warned = false;
  };
  std::unordered_map<std::string, Pending> table_;
  std::vector<std::string> arrival_order_;  // names in first-seen order
  std::set<int32_t> joined_;
  int32_t last_joined_ = -1;
  std::map<std::string, std::vector<std::string>> group_ready_;
  std::vector<Response> stalled_errors_;
  std::chrono::steady_clock::time_point last_stall_check_;
};

}  // namespace hvd
