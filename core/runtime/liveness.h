// The job's liveness probes (observability/peer_probe.h) wired to the
// runtime: at init every rank starts its probe server and learns every
// other rank's address and the job's token over the world communicator;
// afterwards any rank can ask a group of ranks what they are doing and get
// one line per rank naming it and its host.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/backends/comm.h"
#include "core/common/launch_env.h"
#include "core/observability/peer_probe.h"

namespace hvd {

class Liveness {
 public:
  // Collective over `world`. `hosts` are the world ranks' host names;
  // `store` (hvdrun's, when set) picks the address the others reach.
  static Status Start(Comm* world, const RendezvousEndpoint& store, std::vector<std::string> hosts,
                      ProbeServer::Answer answer, std::unique_ptr<Liveness>* out);

  struct Peer {
    int rank;  // world rank
    ProbeResult result;
  };
  // Asks `ranks` (world ranks) about `question`, all at once.
  std::vector<Peer> Ask(const std::vector<int>& ranks, const ProbeQuestion& question,
                        double timeout_s) const;
  // "rank 2 (host b)"
  std::string Name(int rank) const;
  // One clause per peer: "rank 1 (host a) does not answer (stopped or hung)".
  std::string Describe(const std::vector<Peer>& peers) const;

  Liveness(std::unique_ptr<ProbeServer> server, std::string token,
           std::vector<std::string> addresses, std::vector<std::string> hosts);

 private:
  std::unique_ptr<ProbeServer> server_;
  std::string token_;
  std::vector<std::string> addresses_;  // by world rank
  std::vector<std::string> hosts_;
};

// An address of this host other ranks can reach: the one towards the
// rendezvous server when there is one, else the first non-loopback IPv4
// address, else 127.0.0.1.
std::string ReachableAddress(const RendezvousEndpoint& store);

}  // namespace hvd
