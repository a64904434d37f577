package org.hvd.examples;

import java.util.Random;
import org.hvd.Hvd;
import org.hvd.ReduceOp;

/**
 * Data-parallel training of y = w·x + b on synthetic data: each rank owns a
 * shard, computes the gradient of the mean squared error on it, and the
 * ranks average their gradients with allreduce — the replicas stay identical.
 * Exits with status 1 if the model did not converge.
 *
 * <p>Run: mpirun -np 2 java -Djava.library.path=BUILD/java -cp BUILD/java/hvd.jar:linear.jar
 * org.hvd.examples.LinearRegression
 */
public final class LinearRegression {
  static final double[] TRUE_W = {2.0, -3.0, 0.5};
  static final double TRUE_B = 1.0;
  static final int SAMPLES_PER_RANK = 256;
  static final int STEPS = 300;
  static final double LEARNING_RATE = 0.1;

  public static void main(String[] args) {
    Hvd.init();
    int rank = Hvd.rank();
    int dims = TRUE_W.length;

    // This rank's shard: a different seed per rank.
    Random rng = new Random(1234 + rank);
    double[][] x = new double[SAMPLES_PER_RANK][dims];
    double[] y = new double[SAMPLES_PER_RANK];
    for (int n = 0; n < SAMPLES_PER_RANK; n++) {
      y[n] = TRUE_B + 0.01 * rng.nextGaussian();
      for (int d = 0; d < dims; d++) {
        x[n][d] = 2 * rng.nextDouble() - 1;
        y[n] += TRUE_W[d] * x[n][d];
      }
    }

    // Parameters [w..., b]: random on rank 0, broadcast so all replicas start equal.
    double[] params = new double[dims + 1];
    if (rank == 0) for (int i = 0; i < params.length; i++) params[i] = new Random(7).nextGaussian();
    Hvd.broadcast(params, 0);

    double loss = Double.NaN;
    for (int step = 0; step <= STEPS; step++) {
      double[] grad = new double[dims + 2]; // [dL/dw..., dL/db, local loss]
      for (int n = 0; n < SAMPLES_PER_RANK; n++) {
        double err = params[dims] - y[n];
        for (int d = 0; d < dims; d++) err += params[d] * x[n][d];
        for (int d = 0; d < dims; d++) grad[d] += 2 * err * x[n][d] / SAMPLES_PER_RANK;
        grad[dims] += 2 * err / SAMPLES_PER_RANK;
        grad[dims + 1] += err * err / SAMPLES_PER_RANK;
      }
      grad = Hvd.allreduce(grad, ReduceOp.AVERAGE); // the one line of distribution
      loss = grad[dims + 1];
      for (int i = 0; i <= dims; i++) params[i] -= LEARNING_RATE * grad[i];
      if (rank == 0 && step % 50 == 0) System.out.printf("step %3d  loss %.6f%n", step, loss);
    }

    // The replicas must agree exactly, and match the generating model.
    double[] max = Hvd.allreduce(params, ReduceOp.MAX);
    double[] min = Hvd.allreduce(params, ReduceOp.MIN);
    boolean ok = loss < 1e-3 && java.util.Arrays.equals(max, min);
    for (int d = 0; d < dims; d++) ok &= Math.abs(params[d] - TRUE_W[d]) < 0.05;
    ok &= Math.abs(params[dims] - TRUE_B) < 0.05;
    if (rank == 0) {
      System.out.printf("w = %s  b = %.4f  loss %.6f  %s%n",
          java.util.Arrays.toString(java.util.Arrays.copyOf(params, dims)),
          params[dims], loss, ok ? "converged" : "NOT converged");
    }
    Hvd.shutdown();
    System.exit(ok ? 0 : 1);
  }
}
