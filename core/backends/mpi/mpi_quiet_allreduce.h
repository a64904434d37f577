// The hook through which MpiComm runs its quiet allreduce
// (CommTuning::quiet_allreduce): an algorithm hvd runs itself over the MPI
// communicator instead of MPI_Allreduce, which busy-polls. The algorithm
// lives above the transport (core/algorithms/mpi/mpi_ring_allreduce.h) and
// registers its maker here at start-up, since a transport does not include
// the layers above it.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>

#include "core/common/status.h"
#include "core/common/types.h"

namespace hvd {

class MpiAllreduceAlgorithm {
 public:
  virtual ~MpiAllreduceAlgorithm() = default;
  // Over `comm` (every member calls it with the same count, type and op).
  // `in` may equal `out`; otherwise they do not overlap.
  virtual Status Run(MPI_Comm comm, const void* in, void* out, int64_t count, DataType dt,
                     ReduceOp op) = 0;
};

// Makes the quiet allreduce for one communicator; `rank` is this process's
// rank in it (rank 0 logs what it chose).
using MpiQuietAllreduceMaker = std::unique_ptr<MpiAllreduceAlgorithm> (*)(int rank);

// Registers the maker; returns true (for a static initializer).
bool RegisterMpiQuietAllreduce(MpiQuietAllreduceMaker maker);
// The registered maker, or null.
MpiQuietAllreduceMaker MpiQuietAllreduce();

}  // namespace hvd
