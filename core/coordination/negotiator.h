// A member's side of negotiation (every rank, the coordinator included):
// turns newly submitted requests into a Report (cache hits by slot, full
// requests otherwise) and applies the coordinator's Decisions to its mirror
// of the response cache, yielding the responses to run in decision order.
//
// Requests are kept by pointer until answered: they live in the tensor
// queue's entries, which only the set's loop removes, after the answer.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "core/coordination/protocol.h"
#include "core/coordination/response_cache.h"

namespace hvd {

// What one decision means for this rank.
struct Applied {
  std::vector<ResponsePtr> runs;  // to execute, in order
  // Instead of runs: the same cached responses as the last decision that
  // ran any (a training loop's steady state), so the caller may reuse what
  // it made of them; no per-tensor reference is taken.
  bool repeat = false;
  bool params_changed = false;
  TunedParams params;
  bool shutdown = false;
  std::vector<int32_t> shutdown_ranks;
  Status lost;  // kPeerLost: fail everything with this
};

class Negotiator {
 public:
  // The cache's slots to start with and at most (it grows as the
  // coordinator's grows).
  Negotiator(int cache_capacity, int cache_capacity_max);

  // New local requests (and a local shutdown): classified into the pending
  // report.
  void Add(const std::vector<const Request*>& requests);
  void RequestShutdown() { report_.shutdown = shutdown_requested_ = true; }

  // The report to send, if there is anything new; clears it.
  bool TakeReport(Report* out);

  // Applies one decision from the coordinator.
  Status Apply(const Decision& d, Applied* out);

  // True while this rank waits for decisions: it reported something that is
  // not answered yet (so the loop must watch the channel).
  bool waiting() const { return pending_hits_ > 0 || !outstanding_.empty() || shutdown_requested_; }
  size_t pending() const { return pending_hits_ + outstanding_.size(); }

 private:
  static bool Cacheable(OpType t);
  void Renegotiate(const Request* q);
  // Only a kRunCached action without joined ranks.
  static bool OnlyCached(const Decision& d);
  void ClearHits(const std::vector<int32_t>& slots);
  Status RunCached(int64_t seq, const Action& a, Applied* out);

  ResponseCache cache_;
  std::vector<const Request*> hits_;  // by slot: this rank's request waiting on it
  size_t pending_hits_ = 0;
  std::unordered_map<std::string, const Request*> outstanding_;  // sent in full
  Report report_;
  bool shutdown_requested_ = false;
  int64_t epoch_ = 0;
  // The slots of the last decision that ran anything, when it ran only
  // cached ones (else empty), and the cache's generation then (see
  // Applied::repeat).
  std::vector<int32_t> last_slots_;
  uint64_t last_generation_ = 0;
};

}  // namespace hvd
