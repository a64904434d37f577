/* hello_allreduce: every rank contributes rank+1; the sum is size*(size+1)/2.
 * Run: mpirun -np 2 ./hello_allreduce   (or: hvdrun -np 2 ./hello_allreduce) */
#include <hvd/hvd.h>
#include <stdio.h>

#define N 4

static int fail(const char* what, hvd_status s) {
  fprintf(stderr, "%s: %s %s\n", what, hvd_status_string(s), hvd_last_error());
  return 1;
}

int main(void) {
  hvd_status s = hvd_init();
  if (s != HVD_OK) return fail("hvd_init", s);
  int rank = hvd_rank(), size = hvd_size();

  float data[N];
  int64_t shape[1] = {N};
  for (int i = 0; i < N; ++i) data[i] = (float)(rank + 1);
  DLTensor t = {.data = data, .device = {kDLCPU, 0}, .ndim = 1,
                .dtype = {kDLFloat, 32, 1}, .shape = shape};

  hvd_handle h;
  s = hvd_allreduce_async("hello", &t, &t, HVD_OP_SUM, NULL, &h); /* in place */
  if (s == HVD_OK) s = hvd_wait(h, -1);
  if (s != HVD_OK) return fail("allreduce", s);
  hvd_release(h);

  float expected = size * (size + 1) / 2.0f;
  for (int i = 0; i < N; ++i)
    if (data[i] != expected) return fail("wrong sum", HVD_ERR_INTERNAL);
  printf("rank %d of %d: sum = %g\n", rank, size, data[0]);
  return hvd_shutdown() == HVD_OK ? 0 : 1;
}
