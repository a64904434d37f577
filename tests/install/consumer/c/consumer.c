/* Built against an installed hvd (find_package or pkg-config): every rank
 * sums {r+1, 10(r+1)} and checks the exact result. */
#include <hvd/hvd.h>
#include <stdio.h>

int main(void) {
  if (hvd_init() != HVD_OK) {
    fprintf(stderr, "hvd_init: %s\n", hvd_last_error());
    return 1;
  }
  int r = hvd_rank(), n = hvd_size();
  float x[2] = {(float)(r + 1), (float)(10 * (r + 1))};
  int64_t shape[1] = {2};
  DLTensor t = {x, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, NULL, 0};
  hvd_handle h;
  if (hvd_allreduce_async("x", &t, &t, HVD_OP_SUM, NULL, &h) != HVD_OK || hvd_wait(h, -1) != HVD_OK) {
    fprintf(stderr, "rank %d: allreduce: %s\n", r, hvd_last_error());
    return 1;
  }
  hvd_release(h);
  float want = (float)(n * (n + 1) / 2);
  if (x[0] != want || x[1] != 10 * want) {
    fprintf(stderr, "rank %d: got %g %g, want %g %g\n", r, x[0], x[1], want, 10 * want);
    return 1;
  }
  printf("rank %d of %d: hvd %s sum %g %g\n", r, n, hvd_version(), x[0], x[1]);
  return hvd_shutdown() == HVD_OK ? 0 : 1;
}
