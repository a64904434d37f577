// Lets one process of this host wake another that sleeps in poll(): a Unix
// datagram socket per rank, named in the abstract namespace after a token
// its channel shares. The MPI control channel uses it so that a rank
// waiting for a negotiation message can sleep in the kernel, as over TCP,
// while the message itself still travels through MPI's shared memory (MPI
// cannot wake a sleeping thread). The datagrams carry no data: a wake-up
// that finds nothing to read costs one look, and one that is dropped (the
// queue full) is covered by those already queued.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/common/status.h"
#include "core/rendezvous/socket_util.h"

namespace hvd {

class WakeSocket {
 public:
  // Binds this rank's socket ("hvd-wake-<token>-<rank>"). Fails where the
  // name is taken or Unix sockets are unavailable.
  static Status Open(uint64_t token, int rank, std::unique_ptr<WakeSocket>* out);

  int fd() const { return fd_.get(); }
  // Queues a wake-up for `peer`'s socket. False: it has none in this
  // network namespace (or it is gone); a full queue counts as delivered.
  bool Wake(int peer) const;
  // Reads every queued wake-up; returns how many there were.
  int Drain() const;

  WakeSocket(rendezvous::UniqueFd fd, uint64_t token) : fd_(std::move(fd)), token_(token) {}

 private:
  rendezvous::UniqueFd fd_;
  uint64_t token_;
};

}  // namespace hvd
