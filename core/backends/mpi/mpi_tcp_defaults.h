// Open MPI's TCP transport, as shipped, moves large messages with an
// emulated RDMA put that runs one direction of an exchange between two
// ranks at a time. hvd's hierarchical cross step and Open MPI's own
// allreduce exchange both ways between the same ranks, so across hosts they
// get half of each link (docs/scaling.md). Its send protocol runs both
// directions at once: hvdrun --mpi passes it on mpirun's command line, and
// when hvd initialises MPI itself (under a plain mpirun) it sets the same
// default in its own environment first, by the same rule.
#pragma once

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

}  // namespace hvd
