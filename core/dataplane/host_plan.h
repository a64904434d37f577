// Which ranks of a process set share a host, and who carries which share of
// a hierarchical CPU allreduce across hosts. Pure (no communication), so it
// is unit-tested on its own.
//
// Hosts may hold different numbers of ranks. The buffer is cut into K
// shares, K = the fewest ranks any host has; local rank k < K of every host
// carries share k across hosts (the "cross group" of local rank k has one
// member per host), local ranks >= K only take part inside their host.
#pragma once

#include <string>
#include <vector>

namespace hvd {

struct HostPlan {
  bool usable = false;
  std::string reason;              // why not, when !usable
  bool one_rank_per_host = false;  // several hosts, one rank on each
  std::vector<int> local_ranks;    // set ranks on my host, ascending
  int local_index = 0;             // my position in local_ranks
  int host_index = 0;              // my host, in order of first appearance
  int hosts = 0;
  int shares = 0;                // K: ranks per host that carry a share
  std::vector<int> cross_ranks;  // set ranks with my local index, one per
                                 // host, ascending; empty when I carry none
  bool carrier() const { return local_index < shares; }
};

// hosts[r]: the host key of set rank r; me: this rank. Usable when there is
// more than one host and some host holds more than one rank.
HostPlan PlanHosts(const std::vector<std::string>& hosts, int me);

}  // namespace hvd
