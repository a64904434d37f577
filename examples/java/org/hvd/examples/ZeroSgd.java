package org.hvd.examples;

import org.hvd.Hvd;
import org.hvd.ReduceOp;

/**
 * A sharded optimizer (ZeRO stage 2) in plain Java on org.hvd, checked
 * against the plain data-parallel optimizer.
 *
 * <p>The model's parameters are several arrays ("layers"); their gradients
 * are laid out one after another in one flat array. Each step:
 *
 * <ol>
 *   <li>reduce-scatter the flat gradient (AVERAGE): this rank receives the
 *       mean of its shard only, n / size elements, the first n % size ranks
 *       one more;
 *   <li>step that shard with SGD and momentum: the momentum exists for the
 *       shard only, so each rank holds 1/size of the optimizer state;
 *   <li>allgather the updated shards (rank order) into the flat parameters
 *       and copy them back into the layers.
 * </ol>
 *
 * <p>The same run with the plain optimizer (allreduce the gradient, SGD with
 * momentum on every parameter) must give the same parameters within float
 * tolerance on every rank, or the program exits with status 1.
 *
 * <pre>
 * mpirun -np 3 java -cp hvd.jar:hvd_example_zero.jar org.hvd.examples.ZeroSgd [steps]
 * </pre>
 */
public final class ZeroSgd {
  static final float LR = 0.05f;
  static final float MOMENTUM = 0.9f;
  /** Layer sizes: 1001 parameters, uneven shards at 2 and 3 ranks. */
  static final int[] LAYERS = {600, 1, 300, 100};

  private ZeroSgd() {}

  public static void main(String[] args) {
    int steps = args.length > 0 ? Integer.parseInt(args[0]) : 20;
    Hvd.init();
    int rank = Hvd.rank();
    int size = Hvd.size();

    float[][] zero = initialLayers();
    float[][] plain = initialLayers();
    int n = 0;
    for (int len : LAYERS) n += len;
    // This rank's shard of the flat parameters, as reducescatter splits them.
    int base = n / size;
    int extra = n % size;
    int shard = base + (rank < extra ? 1 : 0);
    int offset = rank * base + Math.min(rank, extra);

    float[] zeroMomentum = new float[shard]; // 1/size of the optimizer state
    float[] plainMomentum = new float[n];
    for (int step = 0; step < steps; step++) {
      // Sharded: reduce-scatter, step the shard, allgather.
      float[] meanShard = Hvd.reducescatter(flatten(gradients(zero, rank, step)), ReduceOp.AVERAGE);
      if (meanShard.length != shard) throw new IllegalStateException("shard of " + meanShard.length);
      float[] params = flatten(zero);
      float[] mine = java.util.Arrays.copyOfRange(params, offset, offset + shard);
      sgdMomentum(mine, zeroMomentum, meanShard);
      unflatten(Hvd.allgather(mine), zero);

      // Plain: allreduce the whole gradient, step every parameter.
      float[] mean = Hvd.allreduce(flatten(gradients(plain, rank, step)), ReduceOp.AVERAGE);
      float[] all = flatten(plain);
      sgdMomentum(all, plainMomentum, mean);
      unflatten(all, plain);
    }

    float[] a = flatten(zero);
    float[] b = flatten(plain);
    double worst = 0;
    int worstAt = 0;
    boolean ok = true;
    for (int i = 0; i < n; i++) {
      double rel = Math.abs(a[i] - b[i]) / (1.0 + Math.abs(b[i]));
      if (!(rel <= 1e-5)) ok = false; // NaN fails too
      if (!(rel <= worst)) {
        worst = rel;
        worstAt = i;
      }
    }
    // Every rank exits alike: the job passes only if all ranks agree.
    boolean allOk = Hvd.allreduce(new int[] {ok ? 1 : 0}, ReduceOp.MIN)[0] == 1;
    System.out.printf("rank %d of %d: %d parameters in %d layers, shard [%d, %d), %d steps: "
            + "max relative difference %.3g at %d; momentum %d floats here, %d unsharded%s%n",
        rank, size, n, LAYERS.length, offset, offset + shard, steps, worst, worstAt, shard, n,
        allOk ? "" : " (some rank disagrees)");
    Hvd.shutdown();
    if (!allOk) System.exit(1);
  }

  static float[][] initialLayers() {
    float[][] layers = new float[LAYERS.length][];
    int k = 0;
    for (int l = 0; l < LAYERS.length; l++) {
      layers[l] = new float[LAYERS[l]];
      for (int i = 0; i < LAYERS[l]; i++, k++) layers[l][i] = (k % 17) / 17.0f - 0.5f;
    }
    return layers;
  }

  /**
   * This rank's gradient of sum a_i (w_i - t_i)^2 / 2, with coefficients and
   * targets that differ per rank and step and a gradient that depends on w:
   * parameters that drift apart change every later step.
   */
  static float[][] gradients(float[][] w, int rank, int step) {
    float[][] g = new float[w.length][];
    int k = 0;
    for (int l = 0; l < w.length; l++) {
      g[l] = new float[w[l].length];
      for (int i = 0; i < w[l].length; i++, k++) {
        float a = 0.5f + ((k * 7 + rank * 3) % 11) / 10.0f;
        float target = ((k + rank + step) % 13) / 13.0f - 0.5f;
        g[l][i] = a * (w[l][i] - target);
      }
    }
    return g;
  }

  /** torch.optim.SGD's rule: buf = mu * buf + g; w -= lr * buf. */
  static void sgdMomentum(float[] w, float[] buf, float[] g) {
    for (int i = 0; i < w.length; i++) {
      buf[i] = MOMENTUM * buf[i] + g[i];
      w[i] -= LR * buf[i];
    }
  }

  static float[] flatten(float[][] layers) {
    int n = 0;
    for (float[] l : layers) n += l.length;
    float[] flat = new float[n];
    int k = 0;
    for (float[] l : layers) {
      System.arraycopy(l, 0, flat, k, l.length);
      k += l.length;
    }
    return flat;
  }

  static void unflatten(float[] flat, float[][] layers) {
    int k = 0;
    for (float[] l : layers) {
      System.arraycopy(flat, k, l, 0, l.length);
      k += l.length;
    }
    if (k != flat.length) throw new IllegalStateException(flat.length + " values for " + k);
  }
}
