#include "tools/hvdrun/hosts.h"

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

namespace hvd {
namespace run {

namespace {

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

Status ParseSlots(const std::string& text, const std::string& where, int* slots) {
  char* end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < 1 || v > (1 << 20)) {
    return Status::Invalid("invalid slot count '" + text + "' in " + where);
  }
  *slots = static_cast<int>(v);
  return Status::OK();
}

// "host" or "host:N". IPv6 literals are not supported in this form.
Status ParseEntry(const std::string& entry, const std::string& where, HostSlots* out) {
  HostSlots h;
  size_t colon = entry.rfind(':');
  if (colon == std::string::npos) {
    h.name = entry;
  } else {
    h.name = entry.substr(0, colon);
    HVD_RETURN_IF_ERROR(ParseSlots(entry.substr(colon + 1), where, &h.slots));
  }
  if (h.name.empty()) return Status::Invalid("empty host name in " + where);
  *out = h;
  return Status::OK();
}

}  // namespace

Status ParseHostList(const std::string& text, std::vector<HostSlots>* out) {
  std::vector<HostSlots> hosts;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item = Trim(item);
    if (item.empty()) return Status::Invalid("empty entry in host list '" + text + "'");
    HostSlots h;
    HVD_RETURN_IF_ERROR(ParseEntry(item, "host list '" + text + "'", &h));
    hosts.push_back(h);
  }
  if (hosts.empty()) return Status::Invalid("empty host list");
  *out = std::move(hosts);
  return Status::OK();
}

Status ParseHostfile(const std::string& path, std::vector<HostSlots>* out) {
  std::ifstream in(path);
  if (!in) return Status::Invalid("cannot read hostfile '" + path + "'");
  std::vector<HostSlots> hosts;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    line = Trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    std::string where = path + ":" + std::to_string(lineno);
    std::stringstream words(line);
    std::string first, rest;
    words >> first;
    HostSlots h;
    HVD_RETURN_IF_ERROR(ParseEntry(first, where, &h));
    while (words >> rest) {
      if (rest.rfind("slots=", 0) == 0) {
        HVD_RETURN_IF_ERROR(ParseSlots(rest.substr(6), where, &h.slots));
      } else if (rest.rfind("max_slots=", 0) != 0) {  // Open MPI's, ignored
        return Status::Invalid("unexpected '" + rest + "' in " + where);
      }
    }
    hosts.push_back(h);
  }
  if (hosts.empty()) return Status::Invalid("hostfile '" + path + "' lists no hosts");
  *out = std::move(hosts);
  return Status::OK();
}

Status PlaceRanks(int np, const std::vector<HostSlots>& hosts, std::vector<RankPlacement>* out) {
  long total = 0;
  for (const auto& h : hosts) total += h.slots;
  if (np < 1) return Status::Invalid("-np must be at least 1");
  if (np > total) {
    return Status::Invalid("-np " + std::to_string(np) +
                           " needs more slots than the hosts provide (" + std::to_string(total) +
                           ")");
  }
  std::vector<RankPlacement> ranks;
  std::vector<int> per_host(hosts.size(), 0);
  for (size_t h = 0; h < hosts.size() && static_cast<int>(ranks.size()) < np; ++h) {
    for (int s = 0; s < hosts[h].slots && static_cast<int>(ranks.size()) < np; ++s) {
      RankPlacement r;
      r.rank = static_cast<int>(ranks.size());
      r.host = hosts[h].name;
      r.host_index = static_cast<int>(h);
      r.local_rank = per_host[h]++;
      ranks.push_back(r);
    }
  }
  // cross_rank: among hosts having a rank with this local_rank, in host order.
  std::map<int, std::vector<int>> hosts_by_local_rank;  // local rank -> host indices
  for (const auto& r : ranks) hosts_by_local_rank[r.local_rank].push_back(r.host_index);
  for (auto& r : ranks) {
    r.local_size = per_host[r.host_index];
    const auto& with = hosts_by_local_rank[r.local_rank];
    r.cross_size = static_cast<int>(with.size());
    for (size_t i = 0; i < with.size(); ++i) {
      if (with[i] == r.host_index) r.cross_rank = static_cast<int>(i);
    }
  }
  *out = std::move(ranks);
  return Status::OK();
}

}  // namespace run
}  // namespace hvd
