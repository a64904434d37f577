// A ring allreduce over hvd's own TCP connections, for the cross-host step
// of hierarchical allreduce (one rank per host in the ring, so every hop
// crosses a host link): each member sends only to its right neighbour and
// receives only from its left, over a connection of their own.
//
// Why not the backend's allreduce there: under Gloo the ring's steps wait
// for each other and its event loop spins; under MPI, Open MPI moves bytes
// only inside MPI calls, so its TCP transport needs a thread that polls
// (MpiRingAllreduce sleeps between polls instead), copies every received
// fragment once more, and with Open MPI's default btl_tcp_flags runs one
// direction of an exchange at a time. Here both streams are plain
// non-blocking sockets: the kernel moves the bytes while the thread sleeps
// in poll(), received pieces land in place (or, in the reduce-scatter, in a
// piece-sized scratch that is reduced at once), and the byte streams carry
// the steps back to back, so the link never idles between them. Each host
// link carries 2(P-1)/P of the bytes each way, the least an allreduce can.
//
// No hang: a closed connection fails the call at once; no byte moving for
// `timeout_s` fails it naming the neighbour waited for; Abort() (another
// thread) fails it at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/backends/comm.h"
#include "core/common/status.h"
#include "core/common/types.h"
#include "core/rendezvous/socket_util.h"

namespace hvd {

class TcpRing {
 public:
  // Collective over `comm` (its Allgatherv carries the addresses, its
  // Allreduce the verdict). Every member listens on `bind_host` (an address
  // of its host the others reach), connects to its right neighbour and
  // accepts its left one, which must show the token it announced. Every
  // member returns the same verdict, so all can fall back together; the
  // message says which link failed where this member saw it. `names[r]`
  // names comm rank r in messages ("rank 5"); empty: "ring rank r".
  static Status Create(Comm* comm, const std::string& bind_host, double timeout_s,
                       const std::vector<std::string>& names, std::unique_ptr<TcpRing>* out);

  TcpRing(int rank, int size, rendezvous::UniqueFd right, rendezvous::UniqueFd left,
          double timeout_s, std::vector<std::string> names);
  TcpRing(const TcpRing&) = delete;
  TcpRing& operator=(const TcpRing&) = delete;

  // In place, over the ring's members (every one calls it with the same
  // count, type and op; op commutative). Not thread-safe (one call at a
  // time), but Abort may come from any thread. After a failure the streams
  // are out of step: every later call fails too, naming the first error.
  Status Allreduce(void* buf, int64_t count, DataType dt, ReduceOp op);
  // Fails the running and every later Allreduce.
  void Abort();

  int rank() const { return rank_; }
  int size() const { return size_; }
  // No byte moving for this long fails a call (<= 0: never).
  void set_timeout_s(double seconds) { timeout_s_ = seconds; }
  // The messages' piece: the reduce-scatter reduces what arrived piece by
  // piece, so a piece that stays in cache keeps the reduction cheap.
  void set_piece_bytes(int64_t bytes) { piece_bytes_ = bytes; }
  static constexpr int64_t kDefaultPieceBytes = 256 << 10;

 private:
  Status Run(void* buf, int64_t count, DataType dt, ReduceOp op);

  int rank_, size_;
  rendezvous::UniqueFd right_, left_;
  rendezvous::UniqueFd abort_read_, abort_write_;
  double timeout_s_;
  std::vector<std::string> names_;
  int64_t piece_bytes_ = kDefaultPieceBytes;
  std::vector<uint8_t> scratch_;  // one received reduce-scatter piece
  Status failed_;                 // the first call's error, if one failed
};

// names[r], or "ring rank r" where names has none.
std::string RingMemberName(const std::vector<std::string>& names, int r);

}  // namespace hvd
