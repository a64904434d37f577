// Raw MPI baseline: the bench initialises MPI itself (MPI_THREAD_MULTIPLE,
// before hvd_init, which then uses the initialised MPI) and calls
// MPI_Allreduce on MPI_COMM_WORLD; hvd works on its own duplicate.
#pragma once

#include <memory>
#include <string>

#include "tools/hvd_bench/raw_baseline.h"

namespace hvdbench {

// Null, with *why, when this process is an MPI singleton of a larger
// launch (hvdrun without --mpi); MPI stays initialised, and hvd_init
// then refuses with its own message.
std::unique_ptr<RawComm> CreateRawMpi(std::string* why);

}  // namespace hvdbench
