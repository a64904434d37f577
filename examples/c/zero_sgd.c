/* zero_sgd: a sharded optimizer (ZeRO stages 1 and 2) built from the C ABI
 * alone, checked against the plain data-parallel optimizer.
 *
 * Each step of the sharded optimizer:
 *   1. reduce-scatter the flat gradient (AVERAGE): rank r receives the mean
 *      of its shard only, n / size elements, the first n % size ranks one
 *      more (hvd_reducescatter_async's split);
 *   2. step that shard with SGD and momentum: the momentum buffer exists
 *      for the shard only, so each rank holds 1/size of the optimizer state;
 *   3. allgather the updated shards (rank order) back into the full
 *      parameters, written in place through an allocator.
 * Stage 1 would allreduce the full gradient and use its slice; stage 2 (this
 * program) never materialises the full averaged gradient.
 *
 * The program also runs the unsharded optimizer (allreduce the gradient,
 * SGD with momentum on every parameter) on a second copy of the parameters
 * and exits 1 on every rank unless both agree within float tolerance on
 * every rank.
 *
 * Run: mpirun -np 3 ./zero_sgd [params] [steps]   (or: hvdrun -np 3 ...)
 */
#include <hvd/hvd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const float kLr = 0.05f, kMomentum = 0.9f;

static int fail(const char* what, hvd_status s) {
  fprintf(stderr, "rank %d: %s: %s %s\n", hvd_rank(), what, hvd_status_string(s), hvd_last_error());
  return 1;
}

static DLTensor vector_f32(float* data, int64_t* shape) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = kDLCPU;
  t.ndim = 1;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = shape;
  return t;
}

/* Waits for a submitted operation; the caller releases the handle. It is read
 * through a pointer: the submission, an argument of the same call, sets it. */
static hvd_status await(hvd_status submitted, const hvd_handle* h) {
  return submitted == HVD_OK ? hvd_wait(*h, -1) : submitted;
}

/* Each rank's loss is sum_i a_i (w_i - t_i)^2 / 2 with coefficients that
 * depend on the rank, so gradients differ per rank and depend on w: a
 * rank whose parameters drift apart from the others' changes every later
 * step. */
static void gradient(const float* w, float* g, int64_t n, int rank, int step) {
  for (int64_t i = 0; i < n; ++i) {
    const float a = 0.5f + (float)((i * 7 + rank * 3) % 11) / 10.0f;
    const float target = (float)((i + rank + step) % 13) / 13.0f - 0.5f;
    g[i] = a * (w[i] - target);
  }
}

/* SGD with momentum (torch.optim.SGD's rule): buf = mu * buf + g; w -= lr * buf. */
static void sgd_momentum(float* w, float* buf, const float* g, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    buf[i] = kMomentum * buf[i] + g[i];
    w[i] -= kLr * buf[i];
  }
}

/* Allgather's result goes straight into the full parameter vector. */
struct params_target {
  float* w;
  int64_t n;
};

static void* into_params(size_t bytes, const int64_t* shape, int ndim, DLDataType dtype,
                         DLDevice device, void* user_data) {
  (void)shape;
  (void)ndim;
  (void)dtype;
  (void)device;
  const struct params_target* t = user_data;
  return bytes == (size_t)t->n * sizeof(float) ? t->w : NULL; /* NULL fails the allgather */
}

/* One sharded step: w (all n parameters, identical on every rank) is
 * updated in place; shard_buf is this rank's momentum, shard_w scratch. */
static int zero_step(float* w, float* g, float* shard_w, float* shard_buf, int64_t n,
                     int64_t offset, int64_t shard, int rank, int step) {
  gradient(w, g, n, rank, step);
  int64_t n_shape[1] = {n}, shard_shape[1] = {shard};
  DLTensor grad = vector_f32(g, n_shape);

  hvd_handle h;
  hvd_status s = await(hvd_reducescatter_async("zero.grad", &grad, HVD_OP_AVERAGE, NULL, &h), &h);
  if (s != HVD_OK) return fail("reducescatter", s);
  DLTensor mean; /* hvd-owned, valid until hvd_release */
  s = hvd_result(h, &mean);
  if (s != HVD_OK) return fail("hvd_result", s);
  if (mean.shape[0] != shard) return fail("reducescatter returned a shard of another size", s);
  memcpy(shard_w, w + offset, (size_t)shard * sizeof(float));
  sgd_momentum(shard_w, shard_buf, (const float*)((char*)mean.data + mean.byte_offset), shard);
  hvd_release(h);

  struct params_target target = {w, n};
  hvd_op_options opts = HVD_OP_OPTIONS_INIT;
  opts.allocator = into_params;
  opts.allocator_user_data = &target;
  DLTensor part = vector_f32(shard_w, shard_shape);
  s = await(hvd_allgather_async("zero.params", &part, &opts, &h), &h);
  if (s != HVD_OK) return fail("allgather", s);
  hvd_release(h);
  return 0;
}

/* The plain optimizer: average the full gradient, step every parameter. */
static int plain_step(float* w, float* g, float* buf, int64_t n, int rank, int step) {
  gradient(w, g, n, rank, step);
  int64_t shape[1] = {n};
  DLTensor grad = vector_f32(g, shape);
  hvd_handle h;
  hvd_status s =
      await(hvd_allreduce_async("plain.grad", &grad, &grad, HVD_OP_AVERAGE, NULL, &h), &h);
  if (s != HVD_OK) return fail("allreduce", s);
  hvd_release(h);
  sgd_momentum(w, buf, g, n);
  return 0;
}

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? atoll(argv[1]) : 1001;
  const int steps = argc > 2 ? atoi(argv[2]) : 20;
  hvd_status s = hvd_init();
  if (s != HVD_OK) return fail("hvd_init", s);
  const int rank = hvd_rank(), size = hvd_size();
  if (n < size || steps < 1) {
    fprintf(stderr, "usage: zero_sgd [params >= ranks] [steps >= 1]\n");
    return 2;
  }

  /* This rank's shard, as hvd_reducescatter_async splits dimension 0. */
  const int64_t base = n / size, extra = n % size;
  const int64_t shard = base + (rank < extra ? 1 : 0);
  const int64_t offset = rank * base + (rank < extra ? rank : extra);

  float* w_zero = calloc((size_t)n, sizeof(float));
  float* w_plain = calloc((size_t)n, sizeof(float));
  float* g = calloc((size_t)n, sizeof(float));
  float* buf_plain = calloc((size_t)n, sizeof(float));    /* full momentum */
  float* buf_zero = calloc((size_t)shard, sizeof(float)); /* 1/size of it */
  float* shard_w = calloc((size_t)shard, sizeof(float));
  if (!w_zero || !w_plain || !g || !buf_plain || !buf_zero || !shard_w) {
    return fail("out of memory", HVD_ERR_INTERNAL);
  }
  for (int64_t i = 0; i < n; ++i) w_zero[i] = w_plain[i] = (float)(i % 17) / 17.0f - 0.5f;

  for (int step = 0; step < steps; ++step) {
    if (zero_step(w_zero, g, shard_w, buf_zero, n, offset, shard, rank, step)) return 1;
    if (plain_step(w_plain, g, buf_plain, n, rank, step)) return 1;
  }

  /* Compare on this rank, then agree on the verdict so every rank exits alike. */
  double worst = 0;
  int64_t worst_i = 0;
  int32_t ok = 1;
  for (int64_t i = 0; i < n; ++i) {
    const double d = w_zero[i] > w_plain[i] ? w_zero[i] - w_plain[i] : w_plain[i] - w_zero[i];
    const double rel = d / (1.0 + (w_plain[i] < 0 ? -w_plain[i] : w_plain[i]));
    if (!(rel <= 1e-5)) ok = 0; /* NaN fails too */
    if (!(rel <= worst)) {
      worst = rel;
      worst_i = i;
    }
  }
  int64_t one[1] = {1};
  DLTensor verdict = {
      .data = &ok, .device = {kDLCPU, 0}, .ndim = 1, .dtype = {kDLInt, 32, 1}, .shape = one};
  hvd_handle h;
  s = await(hvd_allreduce_async("verdict", &verdict, &verdict, HVD_OP_MIN, NULL, &h), &h);
  if (s != HVD_OK) return fail("allreduce of the verdict", s);
  hvd_release(h);

  printf(
      "rank %d of %d: %lld parameters, shard [%lld, %lld), %d steps: max relative "
      "difference %.3g at %lld (w = %.6f vs %.6f); momentum %lld floats here, %lld unsharded%s\n",
      rank, size, (long long)n, (long long)offset, (long long)(offset + shard), steps, worst,
      (long long)worst_i, w_zero[worst_i], w_plain[worst_i], (long long)shard, (long long)n,
      ok ? "" : " (some rank disagrees)");
  free(w_zero);
  free(w_plain);
  free(g);
  free(buf_plain);
  free(buf_zero);
  free(shard_w);
  s = hvd_shutdown();
  if (!ok) return 1;
  return s == HVD_OK ? 0 : 1;
}
