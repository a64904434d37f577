/* Prints the topology hvd computed, through the C API, one line per rank:
 *   rank=R size=N local_rank=L local_size=LS cross_rank=C cross_size=CS homogeneous=H backend=B
 * Used by multihost_test.sh to check local/cross ranks across hosts (network
 * namespaces) under hvdrun (Gloo) and hvdrun --mpi. Exit 1 on any hvd error. */
#include <stdio.h>

#include "hvd/hvd.h"

int main(void) {
  if (hvd_init() != HVD_OK) {
    fprintf(stderr, "hvd_init: %s\n", hvd_last_error());
    return 1;
  }
  /* One collective so that a rank whose peers cannot be reached fails here. */
  if (hvd_barrier(0) != HVD_OK) {
    fprintf(stderr, "hvd_barrier: %s\n", hvd_last_error());
    return 1;
  }
  printf(
      "rank=%d size=%d local_rank=%d local_size=%d cross_rank=%d cross_size=%d homogeneous=%d "
      "backend=%s\n",
      hvd_rank(), hvd_size(), hvd_local_rank(), hvd_local_size(), hvd_cross_rank(),
      hvd_cross_size(), hvd_is_homogeneous(),
      hvd_mpi_enabled()    ? "mpi"
      : hvd_gloo_enabled() ? "gloo"
                           : "?");
  fflush(stdout);
  if (hvd_shutdown() != HVD_OK) {
    fprintf(stderr, "hvd_shutdown: %s\n", hvd_last_error());
    return 1;
  }
  return 0;
}
