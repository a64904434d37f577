// The negotiation protocol of a process set, and its wire format.
//
// Each member sends the coordinator (rank 0 of the set) a Report when it
// has something new: tensors found in its response cache (slots only),
// full requests for the others, a wish to shut down. The coordinator
// answers every member with the same Decisions, in one order: which cached
// or newly decided collectives run, cache slots to fill or drop, tuned
// parameters, shutdown. Applying the same decisions in the same order keeps
// every member's cache, fusion and execution order identical without any
// collective in the negotiation itself.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/coordination/message.h"
#include "core/observability/autotune/tuned_params.h"

namespace hvd {

struct Report {
  // Decisions this member had applied when it looked up `hits`: a hit on a
  // slot the coordinator changed since is stale (the member renegotiates it
  // when it applies that change).
  int64_t epoch = 0;
  bool shutdown = false;
  std::vector<int32_t> hits;      // cache slots of newly submitted tensors
  std::vector<Request> requests;  // full requests: cache misses, renegotiated hits
  std::vector<int32_t> invalid;   // slots whose tensor came back with other parameters

  bool empty() const { return !shutdown && hits.empty() && requests.empty() && invalid.empty(); }
};

struct Action {
  enum Kind : uint8_t {
    kRunCached,  // slots: run their cached responses (joined ranks contribute zeros)
    kRun,        // response: run it; slot >= 0: cache it there first
    kErase,      // slot: drop it; a member waiting on it renegotiates the tensor
    kParams,     // params: apply from here on
    kShutdown,   // ranks asked to shut down: everyone stops after this decision
    kPeerLost,   // ranks: lost (error says how); everyone fails what is pending
    kNumKinds
  };
  Kind kind = kRun;
  int32_t slot = -1;
  std::vector<int32_t> slots;
  std::vector<int32_t> ranks;  // kRunCached: joined ranks; kShutdown/kPeerLost: who
  Response response;
  TunedParams params;
  std::string error;  // kPeerLost
};

struct Decision {
  int64_t seq = 0;  // 1, 2, ... per set
  std::vector<Action> actions;
};

std::string EncodeReport(const Report& r);
Status DecodeReport(const std::string& bytes, Report* out);
std::string EncodeDecision(const Decision& d);
Status DecodeDecision(const std::string& bytes, Decision* out);

}  // namespace hvd
