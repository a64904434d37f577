// Lets one process of this host wake another that sleeps in poll(): a Unix
// datagram socket per rank, named in the abstract namespace after a token
// its channel shares. The MPI control channel uses it so that a rank
// waiting for a negotiation message can sleep in the kernel, as over TCP,
// while the message itself still travels through MPI's shared memory (MPI
// cannot wake a sleeping thread). The datagrams carry no data: a wake-up
// that finds nothing to read costs one look, and one that is dropped (the
// queue full) is covered by those already queued.
//
// A sender pays the system call only when the receiver sleeps: each rank
// raises a flag in a page the ranks share (rank 0 creates it and hands it
// to the others over the sockets) before its last look for messages, and
// a sender reads it after its message is out. With a full barrier on both
// sides (atomic read-modify-writes), either the receiver's look finds the
// message or the sender sees the flag (the store-buffering pattern).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "core/common/status.h"
#include "core/rendezvous/socket_util.h"

namespace hvd {

class WakeSocket {
 public:
  // Binds this rank's socket ("hvd-wake-<token>-<rank>") of a channel of
  // `size` ranks. Fails where the name is taken or Unix sockets are
  // unavailable.
  static Status Open(uint64_t token, int rank, int size, std::unique_ptr<WakeSocket>* out);
  ~WakeSocket();
  WakeSocket(const WakeSocket&) = delete;
  WakeSocket& operator=(const WakeSocket&) = delete;

  int fd() const { return fd_.get(); }
  // Rank 0: creates the flags' page and sends it, with a first wake-up,
  // to every other rank. Others: send a first wake-up to rank 0. False
  // where some rank could not be reached (another network namespace).
  bool Introduce();
  // Reads the wake-ups of Introduce (and, on ranks but 0, maps the page
  // they carry); true when all arrived.
  bool Introduced();

  // Wakes `peer` if it sleeps (call after the message is out). False: it
  // has no socket here (or it is gone); a full queue counts as delivered.
  bool Wake(int peer) const;
  // Raised before this rank's last look for messages and its sleep.
  void SetSleeping(bool sleeping);
  // Reads every queued wake-up, if this rank slept since the last call
  // (only a sleeper is sent any); returns how many there were.
  int Drain();

  WakeSocket(rendezvous::UniqueFd fd, uint64_t token, int rank, int size);

 private:
  bool Send(int peer, int pass_fd) const;
  std::atomic<int32_t>* Flag(int rank) const;

  rendezvous::UniqueFd fd_;
  uint64_t token_;
  int rank_;
  int size_;
  void* page_ = nullptr;  // the flags, one cache line per rank
  bool slept_ = true;     // a wake-up may be queued (from Introduce too)
};

}  // namespace hvd
