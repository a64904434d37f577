/* The memory's floor for an in-place allreduce at np=2 (issue 32, 12-05
 * evening): both ranks at once read and write their own 528 MiB (VGG-16's
 * gradients) once, x[i] += 1, which any in-place allreduce must at least do.
 * Also a memcpy of the same size. Prints the best of 8, rank 0's clock.
 *
 *   mpicc -O3 -march=native -o /tmp/floor bench/notebook/memory_floor_probe.c
 *   mpirun --allow-run-as-root --oversubscribe -np 2 /tmp/floor
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const size_t n = (size_t)528 << 18; /* floats: 528 MiB */
  float* a = aligned_alloc(64, n * sizeof(float));
  float* b = aligned_alloc(64, n * sizeof(float));
  for (size_t i = 0; i < n; i++) a[i] = b[i] = 1.0f;
  double rmw = 1e9, copy = 1e9;
  for (int it = 0; it < 8; it++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now();
    for (size_t i = 0; i < n; i++) a[i] += 1.0f;
    double t1 = now();
    MPI_Barrier(MPI_COMM_WORLD);
    double t2 = now();
    memcpy(b, a, n * sizeof(float));
    double t3 = now();
    if (t1 - t0 < rmw) rmw = t1 - t0;
    if (t3 - t2 < copy) copy = t3 - t2;
  }
  if (rank == 0) {
    printf(
        "528 MiB per rank, both ranks at once, best of 8: x[i] += 1 %.1f ms (%.1f GB/s read "
        "+ written per rank), memcpy %.1f ms (check %.0f)\n",
        rmw * 1e3, 2.0 * n * sizeof(float) / rmw / 1e9, copy * 1e3, (double)b[n - 1]);
  }
  free(a);
  free(b);
  MPI_Finalize();
  return 0;
}
