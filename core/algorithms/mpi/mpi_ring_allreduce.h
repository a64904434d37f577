// An allreduce for the cross-host step of hierarchical allreduce on MPI: a
// ring (reduce-scatter, then allgather) of nonblocking point-to-point
// messages in pieces, waited for by polling: without pause for 50 us after
// each completion, then with sleeps.
//
// Why not MPI_Allreduce there: Open MPI busy-polls inside blocking calls
// (mpi_yield_when_idle only adds sched_yield), so the helper thread that
// runs the cross step spins beside the thread doing the host-local steps,
// on every rank; with more threads than cores the spinning starves the
// threads that move the bytes, and the link idles (docs/scaling.md). Here
// the thread sleeps while the kernel's socket buffers carry the data, as a
// blocking socket would. Every piece of every step is posted as soon as it
// is ready (the piece it forwards has arrived and, in the reduce-scatter,
// been reduced), so the steps overlap and the link does not idle between
// them. Each host link carries 2(P-1)/P of the bytes each way, the least an
// allreduce can, for any P (not only powers of two).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "core/backends/mpi/mpi_quiet_allreduce.h"
#include "core/common/status.h"
#include "core/common/types.h"

namespace hvd {

// MpiComm's quiet allreduce (registered in mpi_ring_allreduce.cc).
class MpiRingAllreduce : public MpiAllreduceAlgorithm {
 public:
  // `piece_bytes`: the size of the messages the ring's blocks are cut into.
  explicit MpiRingAllreduce(int64_t piece_bytes = kDefaultPieceBytes) : piece_bytes_(piece_bytes) {}

  // Over `comm` (every member calls it with the same count, type and op;
  // op commutative). `in` may equal `out`; otherwise they do not overlap.
  Status Run(MPI_Comm comm, const void* in, void* out, int64_t count, DataType dt,
             ReduceOp op) override;

  static constexpr int64_t kDefaultPieceBytes = 256 << 10;

 private:
  int64_t piece_bytes_;
  std::vector<uint8_t> scratch_;  // received pieces of the reduce-scatter
};

}  // namespace hvd
