#include "core/runtime/liveness.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include "core/rendezvous/socket_util.h"

namespace hvd {

std::string ReachableAddress(const RendezvousEndpoint& store) {
  if (store.set) {
    std::string ip;
    if (rendezvous::LocalAddressTowards(store.addr, store.port.empty() ? "0" : store.port, &ip)
            .ok() &&
        ip.find(':') == std::string::npos) {
      return ip;
    }
  }
  std::string ip = "127.0.0.1";
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return ip;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET) continue;
    const auto* in = reinterpret_cast<sockaddr_in*>(a->ifa_addr);
    if ((ntohl(in->sin_addr.s_addr) >> 24) == 127) continue;
    char buf[INET_ADDRSTRLEN] = {0};
    if (inet_ntop(AF_INET, &in->sin_addr, buf, sizeof(buf))) {
      ip = buf;
      break;
    }
  }
  freeifaddrs(list);
  return ip;
}

Status Liveness::Start(Comm* world, const RendezvousEndpoint& store, std::vector<std::string> hosts,
                       ProbeServer::Answer answer, std::unique_ptr<Liveness>* out) {
  std::string token = world->rank() == 0 ? NewProbeToken() : std::string();
  HVD_RETURN_IF_ERROR(BroadcastBytes(*world, &token, 0));
  std::unique_ptr<ProbeServer> server;
  // A rank that cannot listen still takes part (with an empty address):
  // probes then call it unreachable instead of failing init.
  const Status s = ProbeServer::Start(token, std::move(answer), &server);
  const std::string mine =
      s.ok() ? ReachableAddress(store) + ":" + std::to_string(server->port()) : "";
  std::vector<std::string> addresses;
  HVD_RETURN_IF_ERROR(AllgatherBytes(*world, mine, &addresses));
  *out = std::make_unique<Liveness>(std::move(server), std::move(token), std::move(addresses),
                                    std::move(hosts));
  return Status::OK();
}

Liveness::Liveness(std::unique_ptr<ProbeServer> server, std::string token,
                   std::vector<std::string> addresses, std::vector<std::string> hosts)
    : server_(std::move(server)),
      token_(std::move(token)),
      addresses_(std::move(addresses)),
      hosts_(std::move(hosts)) {}

std::string Liveness::Name(int rank) const {
  const size_t r = static_cast<size_t>(rank);
  return "rank " + std::to_string(rank) + (r < hosts_.size() ? " (host " + hosts_[r] + ")" : "");
}

std::vector<Liveness::Peer> Liveness::Ask(const std::vector<int>& ranks,
                                          const ProbeQuestion& question, double timeout_s) const {
  std::vector<std::string> where;
  for (int r : ranks) {
    where.push_back(static_cast<size_t>(r) < addresses_.size() ? addresses_[r] : "");
  }
  const std::vector<ProbeResult> results = ProbePeers(where, token_, question, timeout_s);
  std::vector<Peer> out;
  for (size_t i = 0; i < ranks.size(); ++i) out.push_back({ranks[i], results[i]});
  return out;
}

std::string Liveness::Describe(const std::vector<Peer>& peers) const {
  std::string s;
  for (const auto& p : peers) {
    s += (s.empty() ? "" : "; ") + Name(p.rank);
    switch (p.result.verdict) {
      case ProbeResult::kAnswered:
        s += ": " + p.result.answer;
        break;
      case ProbeResult::kSilent:
        s += " does not answer (" + p.result.answer + ")";
        break;
      case ProbeResult::kGone:
        s += " is gone (" + p.result.answer + ")";
        break;
    }
  }
  return s;
}

}  // namespace hvd
