// The rendezvous key-value store that hvdrun hosts for one job. One
// background thread serves every connection with poll(); waits (get of a key
// not yet set, wait for several keys) are parked on the server and answered
// when the key arrives or the request's timeout passes, so clients never
// busy-poll. Every request must be authenticated with the job's secret
// (see kv_protocol.h); anything else closes the connection. The first
// refusal from an address is logged naming the peer, later ones are counted
// and summarised by Stop(). Unauthenticated peers get 256 bytes and 10 s,
// and are shed oldest first when the connection table or fd limit is full.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/common/status.h"

namespace hvd {
namespace rendezvous {

struct KVServerStats {
  uint64_t accepted = 0;  // connections accepted
  uint64_t refused = 0;   // failed authentication
  uint64_t dropped = 0;   // malformed, oversized or replayed frames
};

class KVServer {
 public:
  KVServer();
  ~KVServer();  // Stop()s
  KVServer(const KVServer&) = delete;
  KVServer& operator=(const KVServer&) = delete;

  // Binds bind_address:port (port 0 = an ephemeral port) and starts serving.
  // secret must be non-empty: an open store would let anyone on the network
  // inject addresses into the job.
  Status Start(const std::string& bind_address, int port, const std::string& secret);
  // The bound port, 0 before Start.
  int port() const;
  // Closes every connection and joins the thread. Idempotent.
  void Stop();
  KVServerStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rendezvous
}  // namespace hvd
