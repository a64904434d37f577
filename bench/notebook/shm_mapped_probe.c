/* What an allreduce could cost if every rank's tensors lay in shared memory
 * that the other ranks have mapped (issue 32 item 2: "registering the
 * user's tensors in the segment"). A probe, not the product: each rank
 * maps every rank's buffer; after a barrier each reduces its share of all
 * of them straight into all of them (read every byte once, write every byte
 * once), then a barrier. Timed iteration by iteration against raw
 * MPI_Allreduce in place (one call; 4 MiB pieces), hvd in place on the
 * same buffer and hvd in place on a buffer from hvd_alloc_shared, in turn, forward and backward, every buffer refilled before
 * each timed call, the first call of each checked exactly.
 *
 *   mpicc -O2 -o /tmp/shm_mapped_probe bench/notebook/shm_mapped_probe.c -Icapi/include \
 *       -Lbuild/capi -lhvd -Wl,-rpath,$PWD/build/capi -lrt
 *   mpirun -np 2 /tmp/shm_mapped_probe 64 20     # MiB, rounds
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <hvd/hvd.h>
#include <mpi.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

enum { kImpls = 5, kBlock = 4096 /* floats: 16 KiB, in L1 */ };
static const char* kNames[kImpls] = {"mapped", "raw one call", "raw 4 MiB", "hvd",
                                     "hvd, shared"};

static int rank, size;
static float** bufs;             /* every rank's buffer, mapped here */
static float* shared;            /* from hvd_alloc_shared */
static volatile uint64_t* arrive; /* one cache line per rank */
static uint64_t barriers;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static void* map_shared(const char* name, size_t bytes, int create) {
  int fd = shm_open(name, create ? O_CREAT | O_RDWR : O_RDWR, 0600);
  if (fd < 0 || (create && ftruncate(fd, (off_t)bytes) != 0)) {
    perror(name);
    exit(1);
  }
  void* p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    perror("mmap");
    exit(1);
  }
  return p;
}

static void shm_barrier(void) {
  const uint64_t target = ++barriers;
  __atomic_store_n(&arrive[rank * 8], target, __ATOMIC_RELEASE);
  for (int r = 0; r < size; ++r) {
    for (int spins = 0; __atomic_load_n(&arrive[r * 8], __ATOMIC_ACQUIRE) < target; ++spins) {
      if (spins > 1000) sched_yield();
    }
  }
}

/* My share of every buffer, reduced in L1-sized blocks and written back to all. */
static void mapped_allreduce(int64_t count) {
  static float acc[kBlock];
  const int64_t per = (count + size - 1) / size, lo = rank * per;
  const int64_t hi = lo + per < count ? lo + per : count;
  shm_barrier();
  for (int64_t b = lo; b < hi; b += kBlock) {
    const int64_t m = hi - b < kBlock ? hi - b : kBlock;
    memcpy(acc, bufs[rank] + b, (size_t)m * sizeof(float));
    for (int r = 0; r < size; ++r) {
      if (r == rank) continue;
      const float* x = bufs[r] + b;
      for (int64_t i = 0; i < m; ++i) acc[i] += x[i];
    }
    for (int r = 0; r < size; ++r) memcpy(bufs[r] + b, acc, (size_t)m * sizeof(float));
  }
  shm_barrier();
}

static void run(int impl, int64_t count) {
  float* mine = impl == 4 ? shared : bufs[rank];
  if (impl == 0) return mapped_allreduce(count);
  if (impl == 1) {
    MPI_Allreduce(MPI_IN_PLACE, mine, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  } else if (impl == 2) {
    const int64_t piece = (4 << 20) / sizeof(float);
    for (int64_t at = 0; at < count; at += piece) {
      const int n = (int)(count - at < piece ? count - at : piece);
      MPI_Allreduce(MPI_IN_PLACE, mine + at, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
  } else {
    DLTensor t = {0};
    t.data = mine;
    t.device.device_type = kDLCPU;
    t.ndim = 1;
    t.shape = &count;
    t.dtype.code = kDLFloat;
    t.dtype.bits = 32;
    t.dtype.lanes = 1;
    hvd_handle h;
    if (hvd_allreduce_async("probe", &t, &t, HVD_OP_SUM, NULL, &h) != HVD_OK ||
        hvd_wait(h, -1) != HVD_OK || hvd_release(h) != HVD_OK) {
      fprintf(stderr, "hvd: %s\n", hvd_last_error());
      exit(1);
    }
  }
}

static int by_value(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int64_t mib = argc > 1 ? atoll(argv[1]) : 64;
  const int rounds = argc > 2 ? atoi(argv[2]) : 20;
  const int64_t count = mib * (1 << 20) / (int64_t)sizeof(float);
  const size_t bytes = (size_t)count * sizeof(float);
  int job = (int)getpid();
  MPI_Bcast(&job, 1, MPI_INT, 0, MPI_COMM_WORLD);
  char name[64];
  snprintf(name, sizeof name, "/hvdprobe.%d.ctl", job);
  if (rank == 0) arrive = map_shared(name, 4096, 1);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank != 0) arrive = map_shared(name, 4096, 0);
  bufs = calloc((size_t)size, sizeof *bufs);
  snprintf(name, sizeof name, "/hvdprobe.%d.%d", job, rank);
  bufs[rank] = map_shared(name, bytes, 1);
  MPI_Barrier(MPI_COMM_WORLD);
  for (int r = 0; r < size; ++r) {
    snprintf(name, sizeof name, "/hvdprobe.%d.%d", job, r);
    if (r != rank) bufs[r] = map_shared(name, bytes, 0);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  snprintf(name, sizeof name, "/hvdprobe.%d.%d", job, rank);
  shm_unlink(name); /* every rank has it mapped */
  if (rank == 0) {
    snprintf(name, sizeof name, "/hvdprobe.%d.ctl", job);
    shm_unlink(name);
  }
  if (hvd_init_mpi_comm((int)MPI_Comm_c2f(MPI_COMM_WORLD)) != HVD_OK) {
    fprintf(stderr, "hvd_init_mpi_comm: %s\n", hvd_last_error());
    return 1;
  }
  if (hvd_alloc_shared(bytes, (void**)&shared) != HVD_OK) {
    fprintf(stderr, "hvd_alloc_shared: %s\n", hvd_last_error());
    return 1;
  }
  double* ms = calloc((size_t)(kImpls * rounds), sizeof *ms);
  const float want = (float)(size * (size + 1) / 2);
  for (int k = -1; k < rounds; ++k) { /* round -1: warm-up, checked */
    for (int j = 0; j < kImpls; ++j) {
      const int impl = k % 2 ? kImpls - 1 - j : j;
      float* data = impl == 4 ? shared : bufs[rank];
      for (int64_t i = 0; i < count; ++i) data[i] = (float)(rank + 1);
      MPI_Barrier(MPI_COMM_WORLD);
      const double a = now_ms();
      run(impl, count);
      const double t = now_ms() - a;
      double worst;
      MPI_Allreduce(&t, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (k < 0) {
        for (int64_t i = 0; i < count; i += 997) {
          if (data[i] != want) {
            fprintf(stderr, "rank %d: %s wrong at %lld: %g, not %g\n", rank, kNames[impl],
                    (long long)i, data[i], want);
            return 1;
          }
        }
      } else {
        ms[impl * rounds + k] = worst;
      }
    }
  }
  if (rank == 0) {
    printf("%lld MiB, np %d, %d rounds (ms, slowest rank; min / median / max):\n",
           (long long)mib, size, rounds);
    for (int j = 0; j < kImpls; ++j) {
      double* v = ms + j * rounds;
      qsort(v, (size_t)rounds, sizeof *v, by_value);
      printf("  %-13s %8.3f %8.3f %8.3f\n", kNames[j], v[0], v[rounds / 2], v[rounds - 1]);
    }
  }
  hvd_shutdown();
  hvd_free_shared(shared);
  MPI_Finalize();
  return 0;
}
