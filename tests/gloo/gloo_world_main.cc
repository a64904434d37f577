// One rank of a Gloo job started by hvdrun: hvdrun -np N hvd_gloo_world_prog.
// Exit status 0 means every check passed on this rank.
#include <cstdio>
#include <cstdlib>

#include "tests/gloo/world_check.h"

int main() {
  const char* rank = std::getenv("HVD_RANK");
  const char* size = std::getenv("HVD_SIZE");
  if (rank == nullptr || size == nullptr) {
    std::fprintf(stderr, "hvd_gloo_world_prog: start me with hvdrun\n");
    return 2;
  }
  const int rc = hvd::testing::RunWorldChecks(std::atoi(rank), std::atoi(size));
  if (rc == 0) std::printf("rank %s of %s: gloo world checks passed\n", rank, size);
  return rc;
}
