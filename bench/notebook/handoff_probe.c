/* The "slow mode" probe (docs/benchmarks.md, issue 32): two processes
 * pinned to cores 0 and 1 hand 1 MiB back and forth through shared memory,
 * the producer writing it with memcpy on even blocks and with streaming
 * stores on odd ones. Prints GB/s per block of 400 handoffs.
 *
 *   gcc -O2 -o /tmp/handoff bench/notebook/handoff_probe.c && /tmp/handoff 20
 */
#define _GNU_SOURCE
#include <emmintrin.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static void stream_copy(char* d, const char* s, size_t n) {
  for (size_t i = 0; i < n; i += 16) _mm_stream_si128((__m128i*)(d + i), _mm_loadu_si128((const __m128i*)(s + i)));
  _mm_sfence();
}

int main(int argc, char** argv) {
  const size_t n = 1 << 20;
  const int iters = 400, blocks = argc > 1 ? atoi(argv[1]) : 20;
  char* shm = mmap(0, n + 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  atomic_int* flag = (atomic_int*)(shm + n);
  memset(shm, 0, n + 4096);
  char* mine = aligned_alloc(64, n);
  memset(mine, 3, n);
  const pid_t child = fork();
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  CPU_SET(child == 0 ? 1 : 0, &cpus);
  sched_setaffinity(0, sizeof cpus, &cpus);
  if (child == 0) { /* consumer: copies each handoff out */
    char* out = malloc(n);
    for (int i = 0; i < iters * blocks; ++i) {
      while (atomic_load(flag) != 2 * i + 1) {}
      memcpy(out, shm, n);
      atomic_store(flag, 2 * i + 2);
    }
    _exit(0);
  }
  for (int b = 0, k = 0; b < blocks; ++b) {
    const double t = now();
    for (int i = 0; i < iters; ++i, ++k) {
      while (atomic_load(flag) != 2 * k) {}
      if (b & 1) stream_copy(shm, mine, n); else memcpy(shm, mine, n);
      atomic_store(flag, 2 * k + 1);
    }
    while (atomic_load(flag) != 2 * k) {}
    printf("%s %.0f  ", b & 1 ? "stream" : "memcpy", 2.0 * n * iters / (now() - t) / 1e9);
    fflush(stdout);
  }
  wait(0);
  printf("\n");
  return 0;
}
