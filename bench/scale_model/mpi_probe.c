/* Probes Open MPI's TCP path on the shaped cluster (bench/notebook/scaling-runs.md, "Open
 * MPI over TCP"); the model's "mpi_tcp" parameters come from it.
 *   mpi_probe p2p BYTES ITERS     rank 0 -> rank 1, one message per iteration
 *   mpi_probe bidir BYTES ITERS   ranks 2i <-> 2i+1 exchange (MPI_Sendrecv)
 *   mpi_probe xchgD BYTES ITERS   every rank exchanges with rank ^ D at once:
 *                                 one step of recursive halving/doubling
 *   mpi_probe dir2 BYTES ITERS    np=4, 2 per host: 0 -> 2 and 3 -> 1 at once
 *   mpi_probe ring BYTES ITERS    every rank sends to rank+1, from rank-1
 *   mpi_probe allreduce BYTES ITERS [CHUNK]  in-place float sum in CHUNK-byte
 *                                 calls (0: one call)
 * Rank 0 prints the median, min and max over ITERS (after one warm-up) of
 * the slowest rank's time, and BYTES / median.
 * Build: mpicc -O2 -o /tmp/mpi_probe bench/scale_model/mpi_probe.c
 * Run (cluster up): scripts/netns_cluster.sh run -t 120 sh -c 'mpirun
 *   --allow-run-as-root --oversubscribe --mca plm_rsh_agent "$HVDSC_RSH"
 *   --mca btl self,vader,tcp --mca btl_tcp_if_include $HVDSC_SUBNET
 *   --mca oob_tcp_if_include $HVDSC_SUBNET --mca btl_vader_single_copy_mechanism none
 *   --mca mpi_yield_when_idle 1 [--mca btl_tcp_flags send] -np 2
 *   -H hvdsc-h1:1,hvdsc-h2:1 /tmp/mpi_probe bidir 104857600 5' */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 4) {
    if (!rank) fprintf(stderr, "usage: mpi_probe p2p|bidir|allreduce BYTES ITERS [CHUNK]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const char* mode = argv[1];
  long bytes = atol(argv[2]);
  int iters = atoi(argv[3]);
  long chunk = argc > 4 ? atol(argv[4]) : 0;
  char* buf = malloc(bytes);
  char* rbuf = malloc(bytes);
  memset(buf, 1, bytes);
  memset(rbuf, 0, bytes);
  double* t = calloc(iters + 1, sizeof(double));
  for (int it = -1; it < iters; ++it) { /* it = -1: warm-up */
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (!strcmp(mode, "p2p")) {
      if (rank == 0)
        MPI_Send(buf, (int)bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
      else if (rank == 1)
        MPI_Recv(rbuf, (int)bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      char ack = 0;
      if (rank == 1)
        MPI_Send(&ack, 1, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
      else if (rank == 0)
        MPI_Recv(&ack, 1, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (!strcmp(mode, "dir2")) {
      /* np=4, 2 per host: 0 -> 2 and 3 -> 1 at once; every process only sends or only receives */
      if (rank == 0) MPI_Send(buf, (int)bytes, MPI_BYTE, 2, 0, MPI_COMM_WORLD);
      if (rank == 3) MPI_Send(buf, (int)bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
      if (rank == 2) MPI_Recv(rbuf, (int)bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (rank == 1) MPI_Recv(rbuf, (int)bytes, MPI_BYTE, 3, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (!strcmp(mode, "ring")) {
      MPI_Sendrecv(buf, (int)bytes, MPI_BYTE, (rank + 1) % size, 0, rbuf, (int)bytes, MPI_BYTE,
                   (rank + size - 1) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (!strncmp(mode, "xchg", 4)) {
      /* xchgD: every rank exchanges BYTES with rank ^ D at once (one step of
       * recursive halving/doubling; D >= ranks per host crosses hosts) */
      int peer = rank ^ atoi(mode + 4);
      MPI_Sendrecv(buf, (int)bytes, MPI_BYTE, peer, 0, rbuf, (int)bytes, MPI_BYTE, peer, 0,
                   MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (!strcmp(mode, "bidir")) {
      int peer = rank ^ 1;
      if (peer < size)
        MPI_Sendrecv(buf, (int)bytes, MPI_BYTE, peer, 0, rbuf, (int)bytes, MPI_BYTE, peer, 0,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      long n = bytes / 4, per = chunk > 0 ? chunk / 4 : n;
      for (long d = 0; d < n; d += per) {
        int c = (int)(n - d < per ? n - d : per);
        MPI_Allreduce(MPI_IN_PLACE, (float*)buf + d, c, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      }
    }
    double dt = MPI_Wtime() - t0;
    MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (it >= 0) t[it] = dt;
  }
  if (!rank) {
    qsort(t, iters, sizeof(double), cmp);
    double med = t[iters / 2];
    printf(
        "%s np=%d bytes=%ld chunk=%ld iters=%d: median %.1f ms (min %.1f max %.1f), %.1f MB/s of "
        "BYTES\n",
        mode, size, bytes, chunk, iters, 1e3 * med, 1e3 * t[0], 1e3 * t[iters - 1],
        bytes / med / 1e6);
  }
  MPI_Finalize();
  return 0;
}
