/* A program built against an installed hvd: one rank, one allreduce. */
#include <hvd/hvd.h>
#include <stdio.h>

int main(void) {
  float x[2] = {1.0f, 2.0f};
  int64_t shape[1] = {2};
  DLTensor t = {x, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, NULL, 0};
  hvd_handle h;
  if (hvd_init() != HVD_OK || hvd_allreduce_async("x", &t, &t, HVD_OP_SUM, NULL, &h) != HVD_OK ||
      hvd_wait(h, -1) != HVD_OK) {
    fprintf(stderr, "failed: %s\n", hvd_last_error());
    return 1;
  }
  hvd_release(h);
  printf("hvd %s size %d sum %g\n", hvd_version(), hvd_size(), x[0] + x[1]);
  return hvd_shutdown() == HVD_OK ? 0 : 1;
}
