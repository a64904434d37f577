// Open MPI's TCP transport, as shipped, moves large messages with an
// emulated RDMA put that runs one direction of an exchange between two
// ranks at a time. hvd's hierarchical cross step and Open MPI's own
// allreduce exchange both ways between the same ranks, so across hosts they
// get half of each link (docs/scaling.md). Its send protocol runs both
// directions at once: hvdrun --mpi passes it on mpirun's command line, and
// when hvd initialises MPI itself (under a plain mpirun) it sets the same
// default in its own environment first, by the same rule.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace hvd {

// Whether to ask for btl_tcp_flags=send: not where the user chose the flags,
// or several links per pair (with which it hangs), in the environment or in
// an MCA parameter file (OMPI_MCA_mca_param_files, or the system's and the
// user's default files). `getenv` and `read_file` (a file's text, empty when
// absent) are injected for tests.
bool WantDuplexTcp(const std::function<const char*(const char*)>& getenv,
                   const std::function<std::string(const std::string&)>& read_file);

// Before MPI_Init (Open MPI only): sets OMPI_MCA_btl_tcp_flags=send in this
// process's environment where WantDuplexTcp says so. Returns whether it did.
bool PreferDuplexTcp();

// Where MPI was initialised by someone else (mpi4py) the flags are Open
// MPI's default, put included. Messages within its eager limit go by send
// even so, both ways at once: pieces that small (61440 bytes of the default
// 65536) run the hierarchy's ring as fast as with `send` (docs/scaling.md).
//
// The piece size for hvd's cross-host ring given Open MPI's btl_tcp_flags
// and btl_tcp_eager_limit (negative: unknown): eager-sized when the flags
// have put (0x2), else `preferred`.
int64_t RingPieceBytesFor(long long tcp_flags, long long eager_limit, int64_t preferred);
// The same for the values this process's Open MPI runs with, read through
// the MPI tool interface (after MPI_Init).
int64_t RingPieceBytes(int64_t preferred);

}  // namespace hvd
