#include "core/dataplane/host_plan.h"

#include <algorithm>
#include <map>

namespace hvd {

HostPlan PlanHosts(const std::vector<std::string>& hosts, int me) {
  HostPlan p;
  if (me < 0 || me >= static_cast<int>(hosts.size())) {
    p.reason = "rank out of range";
    return p;
  }
  std::vector<std::string> order;  // hosts in order of their first rank
  std::map<std::string, std::vector<int>> by_host;
  for (int r = 0; r < static_cast<int>(hosts.size()); ++r) {
    auto& ranks = by_host[hosts[r]];
    if (ranks.empty()) order.push_back(hosts[r]);
    ranks.push_back(r);
  }
  size_t fewest = hosts.size(), most = 0;
  for (const auto& h : order) {
    fewest = std::min(fewest, by_host[h].size());
    most = std::max(most, by_host[h].size());
  }
  p.hosts = static_cast<int>(order.size());
  if (order.size() < 2 || most < 2) {
    p.reason = order.size() < 2 ? "one host only" : "one rank per host";
    p.one_rank_per_host = order.size() >= 2;
    return p;
  }
  const std::string& mine = hosts[static_cast<size_t>(me)];
  p.local_ranks = by_host[mine];
  p.local_index = static_cast<int>(std::find(p.local_ranks.begin(), p.local_ranks.end(), me) -
                                   p.local_ranks.begin());
  p.host_index = static_cast<int>(std::find(order.begin(), order.end(), mine) - order.begin());
  p.shares = static_cast<int>(fewest);
  if (p.carrier()) {
    for (const auto& h : order) p.cross_ranks.push_back(by_host[h][p.local_index]);
    // Comm::Split wants ascending ranks; round-robin placement is not.
    std::sort(p.cross_ranks.begin(), p.cross_ranks.end());
  }
  p.usable = true;
  return p;
}

}  // namespace hvd
