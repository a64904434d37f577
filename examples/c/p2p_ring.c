/* p2p_ring: point-to-point messages from the C ABI, checked.
 *
 *  1. A token travels once around the ring with single sends and receives:
 *     rank 0 starts it, every rank adds its rank and passes it on, and rank
 *     0 receives the sum 0 + 1 + ... + (size - 1).
 *  2. A ring exchange with hvd_batch_isend_irecv: every rank sends its block
 *     to the next rank and receives the previous rank's, both posted as one
 *     batch under one handle (no ordering of sends and receives to get right).
 *     Two messages per pair on one tag check that they arrive in order.
 *
 * Run: mpirun -np 3 ./p2p_ring   (or: hvdrun -np 3 ./p2p_ring)
 */
#include <hvd/hvd.h>
#include <stdio.h>
#include <string.h>

#define N 1000 /* elements per block */

static int fail(const char* what, hvd_status s) {
  fprintf(stderr, "rank %d: %s: %s %s\n", hvd_rank(), what, hvd_status_string(s), hvd_last_error());
  return 1;
}

static DLTensor int64_vector(int64_t* data, int64_t* shape) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = kDLCPU;
  t.ndim = 1;
  t.dtype.code = kDLInt;
  t.dtype.bits = 64;
  t.dtype.lanes = 1;
  t.shape = shape;
  return t;
}

/* Waits for and releases the handle of a submitted operation (read through a
 * pointer: it is set by the submission, an argument of the same call). */
static hvd_status finish(hvd_status submitted, const hvd_handle* h) {
  if (submitted != HVD_OK) return submitted;
  hvd_status s = hvd_wait(*h, -1);
  hvd_release(*h);
  return s;
}

static int token_ring(int rank, int size) {
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  int64_t token = 0, one[1] = {1};
  DLTensor t = int64_vector(&token, one);
  hvd_handle h;
  hvd_status s;
  if (rank != 0) {
    s = finish(hvd_recv_async(&t, prev, 7, NULL, &h), &h);
    if (s != HVD_OK) return fail("token: recv", s);
    token += rank;
  }
  s = finish(hvd_send_async(&t, next, 7, NULL, &h), &h);
  if (s != HVD_OK) return fail("token: send", s);
  if (rank == 0) {
    s = finish(hvd_recv_async(&t, prev, 7, NULL, &h), &h);
    if (s != HVD_OK) return fail("token: recv", s);
    if (token != (int64_t)size * (size - 1) / 2) {
      fprintf(stderr, "rank 0: token came back as %lld, expected %lld\n", (long long)token,
              (long long)size * (size - 1) / 2);
      return 1;
    }
  }
  return 0;
}

static int batch_ring(int rank, int size) {
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  static int64_t mine[2][N], theirs[2][N];
  int64_t shape[1] = {N};
  DLTensor out[2], in[2];
  hvd_p2p_op ops[4] = {HVD_P2P_OP_INIT, HVD_P2P_OP_INIT, HVD_P2P_OP_INIT, HVD_P2P_OP_INIT};
  for (int m = 0; m < 2; ++m) {
    for (int i = 0; i < N; ++i) {
      mine[m][i] = (int64_t)rank * 1000000 + m * 100000 + i;
      theirs[m][i] = -1;
    }
    out[m] = int64_vector(mine[m], shape);
    in[m] = int64_vector(theirs[m], shape);
    ops[2 * m].kind = HVD_P2P_SEND; /* message m to the next rank */
    ops[2 * m].tensor = &out[m];
    ops[2 * m].peer = next;
    ops[2 * m].tag = 3;
    ops[2 * m + 1].kind = HVD_P2P_RECV; /* message m from the previous rank */
    ops[2 * m + 1].tensor = &in[m];
    ops[2 * m + 1].peer = prev;
    ops[2 * m + 1].tag = 3;
  }
  hvd_handle h;
  hvd_status s = finish(hvd_batch_isend_irecv(ops, 4, NULL, &h), &h);
  if (s != HVD_OK) return fail("hvd_batch_isend_irecv", s);
  for (int m = 0; m < 2; ++m) {
    for (int i = 0; i < N; ++i) {
      const int64_t want = (int64_t)prev * 1000000 + m * 100000 + i;
      if (theirs[m][i] != want) {
        fprintf(stderr, "rank %d: message %d from rank %d, element %d: %lld, expected %lld\n", rank,
                m, prev, i, (long long)theirs[m][i], (long long)want);
        return 1;
      }
    }
  }
  return 0;
}

int main(void) {
  hvd_status s = hvd_init();
  if (s != HVD_OK) return fail("hvd_init", s);
  const int rank = hvd_rank(), size = hvd_size();
  if (size < 2) {
    fprintf(stderr, "p2p_ring needs at least 2 ranks\n");
    hvd_shutdown();
    return 2;
  }
  if (token_ring(rank, size) || batch_ring(rank, size)) return 1;
  printf("rank %d of %d: token ring and batched ring exchange OK\n", rank, size);
  return hvd_shutdown() == HVD_OK ? 0 : 1;
}
