#include "tools/hvd_bench/fail.h"

#include <cstdio>
#include <cstdlib>

#ifdef HVD_BENCH_HAVE_MPI
#include <mpi.h>
#endif

namespace hvdbench {
namespace {

int g_rank = -1;

bool MpiIsUp() {
#ifdef HVD_BENCH_HAVE_MPI
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
#else
  return false;
#endif
}

}  // namespace

void SetMessageRank(int rank) {
  g_rank = rank;
}

std::string MessageRank() {
  if (g_rank >= 0) return std::to_string(g_rank);
  for (const char* name : {"HVD_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK"}) {
    if (const char* v = std::getenv(name)) return v;
  }
  return "?";
}

void Die(const std::string& msg) {
  std::fprintf(stderr, "hvd_bench[rank %s]: %s\n", MessageRank().c_str(), msg.c_str());
  std::fflush(stderr);
#ifdef HVD_BENCH_HAVE_MPI
  if (MpiIsUp()) MPI_Abort(MPI_COMM_WORLD, 2);
#endif
  std::_Exit(2);
}

void Check(hvd_status s, const char* what) {
  if (s != HVD_OK) {
    Die(std::string(what) + ": " + hvd_status_string(s) + " (" + hvd_last_error() + ")");
  }
}

}  // namespace hvdbench
