/* W4 through the C API, iteration by iteration (docs/benchmarks.md, "CPU
 * steal"): NT tensors (default 1000, at most 4000) of ELEMS floats (default
 * 256: 1 KiB), submitted async in place, then waited for. Prints per rank
 * the median time to submit them, to the first completion and to the last,
 * over N iterations. NT above HVD_CACHE_CAPACITY: docs/tuning.md.
 * BLOCK=K also prints the median submission time of every K iterations in
 * turn: a core's slow episodes (core_episodes_probe.c) show up there.
 *
 *   gcc -O2 -o /tmp/w4_wait_probe bench/notebook/w4_wait_probe.c -Icapi/include \
 *       -Lbuild/capi -lhvd -Wl,-rpath,$PWD/build/capi
 *   mpirun -np 2 /tmp/w4_wait_probe 400      # HVD_WAIT_SPIN_US=0: sleep at once
 */
#include <hvd/hvd.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { kMaxTensors = 4000 };

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static int by_value(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double median(double* v, int n) {
  qsort(v, n, sizeof *v, by_value);
  return v[n / 2];
}

int main(int argc, char** argv) {
  const int iters = argc > 1 ? atoi(argv[1]) : 200;
  int64_t elems = getenv("ELEMS") ? atoll(getenv("ELEMS")) : 256;
  const int kTensors = getenv("NT") ? atoi(getenv("NT")) : 1000;
  if (iters < 1 || elems < 1 || kTensors < 1 || kTensors > kMaxTensors || hvd_init() != HVD_OK) {
    fprintf(stderr, "usage: w4_wait_probe [iterations] (under mpirun): %s\n", hvd_last_error());
    return 1;
  }
  float* buf = calloc(kTensors * elems, sizeof(float));
  static char names[kMaxTensors][16];
  static DLTensor t[kMaxTensors];
  static hvd_handle h[kMaxTensors];
  for (int i = 0; i < kTensors; i++) {
    DLTensor x = {0};
    x.device.device_type = kDLCPU;
    x.ndim = 1;
    x.dtype.code = kDLFloat;
    x.dtype.bits = 32;
    x.dtype.lanes = 1;
    x.shape = &elems;
    x.data = buf + i * elems;
    t[i] = x;
    snprintf(names[i], sizeof names[i], "t%d", i);
  }
  double* submit = malloc(iters * sizeof(double));
  double* first = malloc(iters * sizeof(double));
  double* last = malloc(iters * sizeof(double));
  for (int it = 0; it < iters; it++) {
    const double a = now_ms();
    for (int i = 0; i < kTensors; i++) {
      if (hvd_allreduce_async(names[i], &t[i], &t[i], HVD_OP_SUM, NULL, &h[i]) != HVD_OK) {
        fprintf(stderr, "hvd_allreduce_async: %s\n", hvd_last_error());
        return 1;
      }
    }
    submit[it] = now_ms() - a;
    hvd_wait(h[0], -1);
    first[it] = now_ms() - a;
    for (int i = 0; i < kTensors; i++) {
      hvd_wait(h[i], -1);
      hvd_release(h[i]);
    }
    last[it] = now_ms() - a;
  }
  const int block = getenv("BLOCK") ? atoi(getenv("BLOCK")) : 0;
  if (block > 0 && block <= iters) {
    printf("rank %d: submit per %d iterations:", hvd_rank(), block);
    for (int b = 0; b + block <= iters; b += block) {
      double* v = malloc(block * sizeof(double));
      for (int i = 0; i < block; i++) v[i] = submit[b + i];
      printf(" %.3f", median(v, block));
      free(v);
    }
    printf("\n");
  }
  printf("rank %d: median submit %.3f ms, first done %.3f, all done %.3f (%d iterations)\n",
         hvd_rank(), median(submit, iters), median(first, iters), median(last, iters), iters);
  hvd_shutdown();
  return 0;
}
