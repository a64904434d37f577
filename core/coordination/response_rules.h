// The coordinator's rules for turning the requests of every rank for one
// tensor into a Response: ranks must agree on the operation, dtype, device,
// reduce op, scale factors, root, group and shape (allgather/alltoall: all
// but dimension 0); a disagreement becomes an error response naming who has
// what. Pure functions, so they can be tested alone.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/coordination/message.h"

namespace hvd {

// `requests` holds one request per rank that submitted the tensor (joined
// ranks submit nothing), in any order. `joined` are the set's joined ranks.
Response DecideResponse(const std::string& name, std::vector<Request> requests,
                        const std::set<int32_t>& joined, int set_size);

// Joined ranks hold no entry for anything but allreduce (where they send
// zeros), so every other op is refused while any rank is joined.
inline bool RefusedWhileJoined(OpType type, const std::set<int32_t>& joined) {
  return !joined.empty() && type != OpType::kAllreduce;
}

// Checks what a peer sent before the coordinator trusts it: the C API
// validates requests before they leave a rank, so this stops a corrupted or
// hostile peer from making the coordinator overflow or read out of bounds.
Status CheckPeerRequest(const Request& q, int set_size);

// "1, 2, 5"
std::string RankList(const std::vector<int>& ranks);

// (rank, value) pairs grouped by value: each value once, in order of first
// appearance, with its ranks in the order given.
std::vector<std::pair<std::string, std::vector<int>>> GroupRanksByValue(
    const std::vector<std::pair<int, std::string>>& rank_values);

}  // namespace hvd
