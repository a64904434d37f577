/* One task of the Slurm test (slurm_test.sh). Allreduces a vector where rank
 * r contributes (r+1)*(i+1) at index i, checks every element against
 * size*(size+1)/2*(i+1) exactly, and prints one line:
 *   rank=R size=N local_rank=L backend=B elastic=E sum=S0,S1,S2,S3 ok
 * Modes (first argument):
 *   expect-init-error  hvd_init must fail: prints "init_error: <message>",
 *                      exit 3 (the PMI and store-directory checks).
 *   elastic-recover    an elastic worker under hvdrun --min-np 1 --max-np 2:
 *                      worker 1 SIGKILLs itself in its first round; the
 *                      others re-initialise (joining hvdrun's next round)
 *                      until a round of 2 workers newer than the first
 *                      allreduces, print the line above and
 *                      "worker=W round=R recovered", and exit 0.
 * Exit 1 on any other hvd error. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvd/hvd.h"

#define N 4

static int fail(const char* what, hvd_status s) {
  fprintf(stderr, "%s: %s %s\n", what, hvd_status_string(s), hvd_last_error());
  return 1;
}

/* The allreduce and its check; HVD_OK or the collective's status. */
static hvd_status allreduce_and_check(float* data) {
  const int rank = hvd_rank(), size = hvd_size();
  int64_t shape[1] = {N};
  for (int i = 0; i < N; ++i) data[i] = (float)((rank + 1) * (i + 1));
  DLTensor t = {
      .data = data, .device = {kDLCPU, 0}, .ndim = 1, .dtype = {kDLFloat, 32, 1}, .shape = shape};
  hvd_handle h;
  hvd_status s = hvd_allreduce_async("slurm.sum", &t, &t, HVD_OP_SUM, NULL, &h);
  if (s == HVD_OK) s = hvd_wait(h, -1);
  if (s != HVD_OK) return s;
  hvd_release(h);
  for (int i = 0; i < N; ++i) {
    const float want = (float)(size * (size + 1) / 2 * (i + 1));
    if (data[i] != want) {
      fprintf(stderr, "rank %d: sum[%d] = %g, expected %g\n", rank, i, data[i], want);
      exit(1);
    }
  }
  return HVD_OK;
}

static void print_line(const float* data) {
  printf("rank=%d size=%d local_rank=%d backend=%s elastic=%d sum=%g,%g,%g,%g ok\n", hvd_rank(),
         hvd_size(), hvd_local_rank(),
         hvd_mpi_enabled()    ? "mpi"
         : hvd_gloo_enabled() ? "gloo"
                              : "?",
         hvd_elastic_enabled(), data[0], data[1], data[2], data[3]);
  fflush(stdout);
}

/* Re-initialisations a worker may need: each one waits for hvdrun's next
 * round (up to a second when nothing changed). */
#define MAX_ROUNDS 60

static int elastic_recover(void) {
  const char* id = getenv("HVD_WORKER_ID");
  const int worker = id ? atoi(id) : -1;
  int64_t first_round = -1;
  float data[N];
  for (int attempt = 0; attempt < MAX_ROUNDS; ++attempt) {
    if (attempt > 0) hvd_shutdown();
    hvd_status s = hvd_init();
    if (s != HVD_OK) return fail("hvd_init", s);
    const int64_t round = hvd_elastic_round();
    if (first_round < 0) first_round = round;
    if (worker == 1 && round == first_round) raise(SIGKILL); /* a worker lost mid-job */
    s = allreduce_and_check(data);
    if (s != HVD_OK) continue; /* a peer was lost: join the next round */
    /* Worker 0 needs a round after worker 1's loss; a new worker's first is one. */
    if (hvd_size() == 2 && (worker >= 2 || round > first_round)) {
      print_line(data);
      printf("worker=%d round=%lld recovered\n", worker, (long long)round);
      fflush(stdout);
      s = hvd_shutdown();
      return s == HVD_OK ? 0 : fail("hvd_shutdown", s);
    }
  }
  fprintf(stderr, "worker %d: no round of 2 workers after %d rounds\n", worker, MAX_ROUNDS);
  return 1;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "elastic-recover") == 0) return elastic_recover();
  hvd_status s = hvd_init();
  if (strcmp(mode, "expect-init-error") == 0) {
    if (s == HVD_OK) return fail("hvd_init succeeded but an error was expected", HVD_OK);
    printf("init_error: %s\n", hvd_last_error());
    return 3;
  }
  if (s != HVD_OK) return fail("hvd_init", s);
  float data[N];
  s = allreduce_and_check(data);
  if (s != HVD_OK) return fail("allreduce", s);
  print_line(data);
  s = hvd_shutdown();
  return s == HVD_OK ? 0 : fail("hvd_shutdown", s);
}
