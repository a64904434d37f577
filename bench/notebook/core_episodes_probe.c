/* Slow episodes of one core (docs/benchmarks.md, "W4's middle state"):
 * times two kinds of work in turn, in 100 ms blocks, for SECONDS seconds:
 * an ALU chain (multiply and xor, no memory) and a pointer chase over 1 MiB
 * (fits the 2 MiB L2). Prints the mean of each per block, in microseconds
 * per 20,000 steps. Run one per core at the same time, nothing else running:
 *
 *   gcc -O2 -o /tmp/core_episodes_probe bench/notebook/core_episodes_probe.c
 *   taskset -c 0 /tmp/core_episodes_probe 40 core0 & \
 *     taskset -c 1 /tmp/core_episodes_probe 40 core1; wait
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static volatile size_t sink;

int main(int argc, char** argv) {
  const int seconds = argc > 1 ? atoi(argv[1]) : 10;
  const char* tag = argc > 2 ? argv[2] : "core";
  enum { kSteps = 20000, kLine = 8 };  // a step of the chase: one 64-byte line
  const size_t lines = (1u << 20) / 64;
  size_t* next = malloc(lines * 64);
  if (seconds < 1 || !next) return 1;
  for (size_t i = 0; i < lines; i++) next[i * kLine] = ((i * 7919 + 1) % lines) * kLine;
  printf("%s alu/chase us per block:", tag);
  const double start = now_ms();
  while (now_ms() - start < seconds * 1000.0) {
    const double end = now_ms() + 100;
    double alu = 0, chase = 0;
    int n = 0;
    while (now_ms() < end) {
      const double t0 = now_ms();
      unsigned x = 1;
      for (int i = 0; i < kSteps; i++) {
        x = x * 1664525u + 1013904223u;
        x ^= x >> 13;
      }
      sink = x;
      const double t1 = now_ms();
      size_t p = 0;
      for (int i = 0; i < kSteps; i++) p = next[p];
      sink = p;
      alu += t1 - t0;
      chase += now_ms() - t1;
      n++;
    }
    printf(" %.0f/%.0f", alu / n * 1e3, chase / n * 1e3);
  }
  printf("\n");
  free(next);
  return 0;
}
