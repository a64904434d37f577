#include "tools/hvdrun/elastic_plan.h"

#include <algorithm>
#include <set>
#include <sstream>

namespace hvd {
namespace run {

std::vector<RoundSlot> PlanRound(std::vector<LiveWorker> workers) {
  std::sort(workers.begin(), workers.end(),
            [](const LiveWorker& a, const LiveWorker& b) { return a.id < b.id; });
  const int size = static_cast<int>(workers.size());
  std::vector<std::string> host_order;  // hosts in order of their first rank
  std::map<std::string, int> per_host;
  std::vector<RoundSlot> out;
  for (int r = 0; r < size; ++r) {
    const std::string& h = workers[r].host;
    if (!per_host.count(h)) host_order.push_back(h);
    RoundSlot s;
    s.worker_id = workers[r].id;
    s.host = h;
    s.rank = r;
    s.size = size;
    s.local_rank = per_host[h]++;
    out.push_back(s);
  }
  for (auto& s : out) {
    s.local_size = per_host[s.host];
    for (const auto& h : host_order) {
      if (per_host[h] <= s.local_rank) continue;
      if (h == s.host) s.cross_rank = s.cross_size;
      ++s.cross_size;
    }
  }
  return out;
}

std::string AssignmentValue(const RoundSlot& s) {
  std::ostringstream o;
  o << s.rank << ' ' << s.size << ' ' << s.local_rank << ' ' << s.local_size << ' ' << s.cross_rank
    << ' ' << s.cross_size;
  return o.str();
}

std::vector<std::string> PlanSpawns(const std::vector<HostSlots>& discovered,
                                    const std::map<std::string, int>& running_per_host,
                                    const std::map<std::string, bool>& blacklisted, int running,
                                    int max_np) {
  std::vector<std::string> out;
  for (const auto& h : discovered) {
    auto b = blacklisted.find(h.name);
    if (b != blacklisted.end() && b->second) continue;
    auto it = running_per_host.find(h.name);
    int free = h.slots - (it == running_per_host.end() ? 0 : it->second);
    for (; free > 0 && running < max_np; --free, ++running) out.push_back(h.name);
  }
  return out;
}

Status ParseDiscoveryOutput(const std::string& text, std::vector<HostSlots>* out) {
  std::vector<HostSlots> hosts;
  std::set<std::string> seen;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    const auto b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos) continue;
    line = line.substr(b, line.find_last_not_of(" \t\r") - b + 1);
    std::vector<HostSlots> one;
    Status s = ParseHostList(line, &one);
    if (!s.ok() || one.size() != 1) {
      return Status::Invalid("host discovery script printed '" + line +
                             "'; expected one 'host:slots' per line");
    }
    if (!seen.insert(one[0].name).second) {
      return Status::Invalid("host discovery script listed host '" + one[0].name + "' twice");
    }
    hosts.push_back(one[0]);
  }
  *out = std::move(hosts);
  return Status::OK();
}

}  // namespace run
}  // namespace hvd
