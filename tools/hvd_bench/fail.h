// Fatal errors of hvd_bench: one line naming the rank, then exit code 2
// (MPI_Abort when MPI is up, so no rank is left waiting in a collective).
#pragma once

#include <string>

#include "hvd/hvd.h"

namespace hvdbench {

// The rank named in messages: set once it is known; before that, the
// launcher's variable (or "?").
void SetMessageRank(int rank);
std::string MessageRank();

[[noreturn]] void Die(const std::string& msg);

// Dies with hvd's status and last error when s is not HVD_OK.
void Check(hvd_status s, const char* what);

}  // namespace hvdbench
