// The negotiation's message channel of one process set: point-to-point,
// ordered per peer, never blocking on a peer. Workers send reports to the
// coordinator (rank 0 of the set), the coordinator sends decisions to every
// member. It is separate from the data communicator (Comm): negotiation
// needs small messages whenever some rank has work, data needs fast
// collectives once every rank agreed.
//
// How the set's loop waits for messages depends on the transport: a channel
// over sockets gives file descriptors the loop can poll() next to its own
// wake-up fd, so an idle rank sleeps in the kernel and wakes the moment a
// message arrives; a channel over MPI has none (MPI cannot wake a sleeping
// thread), so the loop polls Receive in naps while it expects a message,
// which costs latency and CPU, unless it can be woken beside MPI (on one
// host: MpiChannel's wake sockets). Host backends use sockets where every
// member reaches the coordinator across hosts (ControlChannelOptions).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/common/config.h"
#include "core/common/status.h"

namespace hvd {

struct ChannelMessage {
  int from = -1;  // rank in the set
  std::string bytes;
  bool lost = false;  // the link to `from` broke; `bytes` says how
};

// What Comm::OpenControlChannel needs from the runtime.
struct ControlChannelOptions {
  double timeout_s = 30.0;  // bounds the set-up
  // An address of this host the set's other ranks can reach; the
  // coordinator's TCP listener binds to it (a backend may have its own).
  std::string host = "127.0.0.1";
  ControlChannelChoice transport = ControlChannelChoice::kAuto;
};

class ControlChannel {
 public:
  virtual ~ControlChannel() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Queues `bytes` for `peer`. Returns at once; delivery is in order per
  // peer. kPeerLost: the link to `peer` is gone (the others still work).
  virtual Status Send(int peer, std::string bytes) = 0;
  // Appends every complete message that has arrived to *out, without
  // blocking, and makes progress on queued sends. A link that breaks is
  // reported once, as a message with `lost` set.
  virtual Status Receive(std::vector<ChannelMessage>* out) = 0;

  // Descriptors to poll for POLLIN (and POLLOUT where `want_write`): when
  // one is ready, Receive has something to do. Empty: the channel must be
  // polled by calling Receive.
  struct PollFd {
    int fd;
    bool want_write;
  };
  virtual void PollFds(std::vector<PollFd>* out) const = 0;
  // True when arrivals are only seen by calling Receive (no descriptors).
  virtual bool needs_polling() const = 0;
  // True where an answer usually follows a message within microseconds
  // (shared memory): the loop yields for a moment before it sleeps.
  virtual bool spin_before_sleep() const { return needs_polling(); }
  // Around the loop's sleep on PollFds (after a Receive that found
  // nothing): PrepareToSleep false means a message may be in already, so
  // the loop looks again instead of sleeping; Awake follows every sleep.
  virtual bool PrepareToSleep() { return true; }
  virtual void Awake() {}
  // For the log: "TCP, coordinator at 10.0.0.1:4711", "MPI messages, polled".
  virtual std::string description() const = 0;

  // What messages call a peer: "rank 2 (host node3)" once the set's world
  // ranks and hosts are known (SetPeerNames), else "rank 2".
  void SetPeerNames(std::vector<std::string> names) { names_ = std::move(names); }
  std::string PeerName(int peer) const {
    if (peer >= 0 && static_cast<size_t>(peer) < names_.size()) return names_[peer];
    return "rank " + std::to_string(peer);
  }

 private:
  std::vector<std::string> names_;
};

}  // namespace hvd
