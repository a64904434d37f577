// Pure planning for hierarchical allreduce on GPUs (HierarchicalGpuComm;
// no CUDA, no NCCL: unit-tested
// on any machine). The ranks of a process set are grouped by host; the
// allreduce is an NCCL reduce-scatter inside each host, an allreduce of
// each rank's block across hosts (between the ranks with the same local
// index) on the CPU backend, and an NCCL allgather inside each host.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace hvd {

struct HierarchyPlan {
  bool usable = false;
  std::string reason;            // why not, when !usable
  std::vector<int> local_ranks;  // set ranks on my host, ascending
  std::vector<int> cross_ranks;  // set ranks with my local index, one per host, ascending
  int local_rank = 0;            // my index in local_ranks
  int host_index = 0;            // my host, in order of first appearance
};

// hosts[r]: host key of set rank r. Usable only when every host has the
// same number of ranks (else the cross groups would not line up) and there
// is more than one host with more than one rank each (else a flat NCCL
// allreduce is already the whole job).
inline HierarchyPlan PlanHierarchy(const std::vector<std::string>& hosts, int me) {
  HierarchyPlan p;
  std::vector<std::string> order;
  std::map<std::string, std::vector<int>> by_host;
  for (int r = 0; r < static_cast<int>(hosts.size()); ++r) {
    if (!by_host.count(hosts[r])) order.push_back(hosts[r]);
    by_host[hosts[r]].push_back(r);
  }
  if (me < 0 || me >= static_cast<int>(hosts.size())) {
    p.reason = "rank out of range";
    return p;
  }
  const size_t per_host = by_host[order[0]].size();
  for (const auto& h : order) {
    if (by_host[h].size() != per_host) {
      p.reason = "hosts have different numbers of ranks";
      return p;
    }
  }
  if (order.size() < 2 || per_host < 2) {
    p.reason = order.size() < 2 ? "one host only" : "one rank per host";
    return p;
  }
  const std::string& mine = hosts[static_cast<size_t>(me)];
  p.local_ranks = by_host[mine];
  for (size_t i = 0; i < p.local_ranks.size(); ++i) {
    if (p.local_ranks[i] == me) p.local_rank = static_cast<int>(i);
  }
  for (size_t h = 0; h < order.size(); ++h) {
    if (order[h] == mine) p.host_index = static_cast<int>(h);
    p.cross_ranks.push_back(by_host[order[h]][static_cast<size_t>(p.local_rank)]);
  }
  std::vector<int> sorted = p.cross_ranks;
  // Comm::Split wants ascending ranks; host order already gives that for
  // block-placed ranks, but round-robin placement would not.
  std::sort(sorted.begin(), sorted.end());
  p.cross_ranks = sorted;
  p.usable = true;
  return p;
}

// `count` elements in `parts` blocks: the first count % parts get one more.
inline std::vector<int64_t> SplitCount(int64_t count, int parts) {
  std::vector<int64_t> v(static_cast<size_t>(parts), count / parts);
  for (int64_t i = 0; i < count % parts; ++i) ++v[static_cast<size_t>(i)];
  return v;
}

}  // namespace hvd
