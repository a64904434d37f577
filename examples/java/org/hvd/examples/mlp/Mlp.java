package org.hvd.examples.mlp;

import java.util.Random;

/**
 * A two-layer perceptron in plain float arrays: inputs -> hidden (ReLU) ->
 * classes (softmax), trained with the mean cross-entropy of a batch.
 * Parameters (row-major): w1[hidden][inputs], b1, w2[classes][hidden], b2.
 */
public final class Mlp {
  public static final String[] NAMES = {"w1", "b1", "w2", "b2"};
  public final int inputs;
  public final int hidden;
  public final int classes;
  public final float[] w1;
  public final float[] b1;
  public final float[] w2;
  public final float[] b2;

  /** Weights uniform in +-1/sqrt(fan_in) (as torch.nn.Linear), biases zero. */
  public Mlp(int inputs, int hidden, int classes, long seed) {
    this.inputs = inputs;
    this.hidden = hidden;
    this.classes = classes;
    Random rng = new Random(seed);
    w1 = uniform(rng, hidden * inputs, 1.0 / Math.sqrt(inputs));
    b1 = new float[hidden];
    w2 = uniform(rng, classes * hidden, 1.0 / Math.sqrt(hidden));
    b2 = new float[classes];
  }

  private static float[] uniform(Random rng, int n, double bound) {
    float[] a = new float[n];
    for (int i = 0; i < n; i++) a[i] = (float) ((2 * rng.nextDouble() - 1) * bound);
    return a;
  }

  /** The parameters in the order of {@link #NAMES}. */
  public float[][] parameters() {
    return new float[][] {w1, b1, w2, b2};
  }

  private float[] hiddenOf(float[] x, float[] h) {
    for (int j = 0; j < hidden; j++) {
      float s = b1[j];
      for (int k = 0; k < inputs; k++) s += w1[j * inputs + k] * x[k];
      h[j] = Math.max(s, 0f);
    }
    return h;
  }

  private void logitsOf(float[] h, float[] z) {
    for (int c = 0; c < classes; c++) {
      float s = b2[c];
      for (int j = 0; j < hidden; j++) s += w2[c * hidden + j] * h[j];
      z[c] = s;
    }
  }

  /** The most likely class of x. */
  public int predict(float[] x) {
    float[] z = new float[classes];
    logitsOf(hiddenOf(x, new float[hidden]), z);
    int best = 0;
    for (int c = 1; c < classes; c++) if (z[c] > z[best]) best = c;
    return best;
  }

  /**
   * Forward and backward pass over one batch: writes the gradients of the
   * mean cross-entropy into opt.grad(i) and reports each as soon as it is
   * complete (the output layer's first, as backpropagation produces them).
   * Returns the batch's mean loss.
   */
  public double backward(float[][] xs, int[] ys, DistributedOptimizer opt) {
    int n = xs.length;
    float[][] hs = new float[n][hidden];
    float[][] dz = new float[n][classes]; // dLoss/dlogits per sample
    double loss = 0;
    float[] z = new float[classes];
    for (int s = 0; s < n; s++) {
      hiddenOf(xs[s], hs[s]);
      logitsOf(hs[s], z);
      float max = z[0];
      for (int c = 1; c < classes; c++) max = Math.max(max, z[c]);
      double sum = 0;
      for (int c = 0; c < classes; c++) sum += Math.exp(z[c] - max);
      for (int c = 0; c < classes; c++) {
        double p = Math.exp(z[c] - max) / sum;
        dz[s][c] = (float) ((p - (c == ys[s] ? 1 : 0)) / n);
      }
      loss -= (z[ys[s]] - max - Math.log(sum)) / n;
    }
    // Output layer: its gradients are ready first.
    float[] gw2 = opt.grad(2), gb2 = opt.grad(3);
    for (int s = 0; s < n; s++) {
      for (int c = 0; c < classes; c++) {
        gb2[c] += dz[s][c];
        for (int j = 0; j < hidden; j++) gw2[c * hidden + j] += dz[s][c] * hs[s][j];
      }
    }
    opt.gradientReady(2);
    opt.gradientReady(3);
    // Hidden layer, through the ReLU.
    float[] gw1 = opt.grad(0), gb1 = opt.grad(1);
    float[] dh = new float[hidden];
    for (int s = 0; s < n; s++) {
      for (int j = 0; j < hidden; j++) {
        float d = 0;
        if (hs[s][j] > 0) {
          for (int c = 0; c < classes; c++) d += dz[s][c] * w2[c * hidden + j];
        }
        dh[j] = d;
      }
      for (int j = 0; j < hidden; j++) {
        if (dh[j] == 0) continue;
        gb1[j] += dh[j];
        for (int k = 0; k < inputs; k++) gw1[j * inputs + k] += dh[j] * xs[s][k];
      }
    }
    opt.gradientReady(0);
    opt.gradientReady(1);
    return loss;
  }
}
