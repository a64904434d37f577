/* One task of the Slurm test (slurm_test.sh). Allreduces a vector where rank
 * r contributes (r+1)*(i+1) at index i, checks every element against
 * size*(size+1)/2*(i+1) exactly, and prints one line:
 *   rank=R size=N local_rank=L backend=B elastic=E sum=S0,S1,S2,S3 ok
 * With an argument, hvd_init must fail: the line is "init_error: <message>"
 * and the exit code 3 (the PMI check). Exit 1 on any other hvd error. */
#include <stdio.h>
#include <string.h>

#include "hvd/hvd.h"

#define N 4

static int fail(const char* what, hvd_status s) {
  fprintf(stderr, "%s: %s %s\n", what, hvd_status_string(s), hvd_last_error());
  return 1;
}

int main(int argc, char** argv) {
  hvd_status s = hvd_init();
  if (argc > 1 && strcmp(argv[1], "expect-init-error") == 0) {
    if (s == HVD_OK) return fail("hvd_init succeeded but an error was expected", HVD_OK);
    printf("init_error: %s\n", hvd_last_error());
    return 3;
  }
  if (s != HVD_OK) return fail("hvd_init", s);
  const int rank = hvd_rank(), size = hvd_size();
  float data[N];
  int64_t shape[1] = {N};
  for (int i = 0; i < N; ++i) data[i] = (float)((rank + 1) * (i + 1));
  DLTensor t = {
      .data = data, .device = {kDLCPU, 0}, .ndim = 1, .dtype = {kDLFloat, 32, 1}, .shape = shape};
  hvd_handle h;
  s = hvd_allreduce_async("slurm.sum", &t, &t, HVD_OP_SUM, NULL, &h);
  if (s == HVD_OK) s = hvd_wait(h, -1);
  if (s != HVD_OK) return fail("allreduce", s);
  hvd_release(h);
  for (int i = 0; i < N; ++i) {
    const float want = (float)(size * (size + 1) / 2 * (i + 1));
    if (data[i] != want) {
      fprintf(stderr, "rank %d: sum[%d] = %g, expected %g\n", rank, i, data[i], want);
      return 1;
    }
  }
  printf("rank=%d size=%d local_rank=%d backend=%s elastic=%d sum=%g,%g,%g,%g ok\n", rank, size,
         hvd_local_rank(),
         hvd_mpi_enabled()    ? "mpi"
         : hvd_gloo_enabled() ? "gloo"
                              : "?",
         hvd_elastic_enabled(), data[0], data[1], data[2], data[3]);
  fflush(stdout);
  s = hvd_shutdown();
  return s == HVD_OK ? 0 : fail("hvd_shutdown", s);
}
