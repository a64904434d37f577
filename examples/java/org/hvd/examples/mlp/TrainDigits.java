package org.hvd.examples.mlp;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.hvd.Hvd;
import org.hvd.ReduceOp;

/**
 * Data-parallel training of a small MLP ({@link Mlp}) on the digits in
 * examples/data/digits.txt (1797 8x8 images, 10 classes): every rank trains
 * on its own shard of each epoch's batches and {@link DistributedOptimizer}
 * averages the gradients, so all ranks keep identical weights. Rank 0 prints
 * the loss and held-out accuracy per epoch; the exit status is 1 on every
 * rank if the final accuracy is below the target or the replicas differ.
 *
 * <p>Run: hvdrun -np 2 java -cp BUILD/java/hvd.jar:hvd_example_mlp.jar
 * org.hvd.examples.mlp.TrainDigits examples/data/digits.txt [epochs]
 */
public final class TrainDigits {
  public static final int HIDDEN = 64;
  public static final int BATCH_PER_RANK = 32;
  public static final float LR_PER_RANK = 0.05f; // scaled by the number of ranks
  public static final float MOMENTUM = 0.9f;

  /** What training produced on this rank. */
  public static final class Result {
    public double loss;       // mean training loss of the last epoch, over all ranks
    public double accuracy;   // held-out accuracy at the end
    public float[][] params;  // the trained parameters
  }

  /** Images (pixels scaled to [0, 1]) and labels. */
  static final class Data {
    final float[][] x;
    final int[] y;

    Data(float[][] x, int[] y) {
      this.x = x;
      this.y = y;
    }
  }

  /** A label and 64 pixels (0..16 as 0-9a-g) per line; '#' starts a comment. */
  static Data read(Path path) throws IOException {
    List<float[]> xs = new ArrayList<>();
    List<Integer> ys = new ArrayList<>();
    for (String line : Files.readAllLines(path, StandardCharsets.US_ASCII)) {
      if (line.isEmpty() || line.charAt(0) == '#') continue;
      if (line.length() != 65) {
        throw new IOException(path + ": a line of " + line.length() + " characters, not 65");
      }
      float[] x = new float[64];
      for (int k = 0; k < 64; k++) x[k] = Character.digit(line.charAt(k + 1), 17) / 16f;
      xs.add(x);
      ys.add(line.charAt(0) - '0');
    }
    return new Data(xs.toArray(new float[0][]), ys.stream().mapToInt(Integer::intValue).toArray());
  }

  static int[] shuffled(int n, long seed) {
    int[] order = new int[n];
    for (int i = 0; i < n; i++) order[i] = i;
    Random rng = new Random(seed);
    for (int i = n - 1; i > 0; i--) {
      int j = rng.nextInt(i + 1);
      int t = order[i];
      order[i] = order[j];
      order[j] = t;
    }
    return order;
  }

  /** Trains on every rank of the running hvd job (hvd must be initialised). */
  public static Result train(Path dataFile, int epochs, boolean verbose) throws IOException {
    int rank = Hvd.rank(), size = Hvd.size();
    Data all = read(dataFile);
    // The same fixed split on every rank: 20% held out.
    int[] order = shuffled(all.y.length, 0);
    int nTest = all.y.length / 5, nTrain = all.y.length - nTest;

    Mlp model = new Mlp(64, HIDDEN, 10, 1000 + rank); // different per rank on purpose
    float[][] params = model.parameters();
    DistributedOptimizer.broadcastParameters(params, Mlp.NAMES, 0); // ...now equal
    DistributedOptimizer opt =
        new DistributedOptimizer(params, Mlp.NAMES, LR_PER_RANK * size, MOMENTUM);

    // Equal batch counts on all ranks: every rank takes part in every allreduce.
    int globalBatch = BATCH_PER_RANK * size;
    int steps = nTrain / globalBatch;
    Result result = new Result();
    for (int epoch = 0; epoch < epochs; epoch++) {
      int[] perm = shuffled(nTrain, 1 + epoch);
      double total = 0;
      for (int step = 0; step < steps; step++) {
        float[][] xs = new float[BATCH_PER_RANK][];
        int[] ys = new int[BATCH_PER_RANK];
        for (int b = 0; b < BATCH_PER_RANK; b++) {
          int sample = order[nTest + perm[step * globalBatch + b * size + rank]];
          xs[b] = all.x[sample];
          ys[b] = all.y[sample];
        }
        total += model.backward(xs, ys, opt);
        opt.step();
      }
      result.loss = Hvd.allreduce(new double[] {total / steps}, ReduceOp.AVERAGE)[0];
      int correct = 0;
      for (int t = 0; t < nTest; t++) {
        if (model.predict(all.x[order[t]]) == all.y[order[t]]) correct++;
      }
      result.accuracy = (double) correct / nTest;
      if (verbose && rank == 0) {
        System.out.printf("epoch %2d  loss %.4f  held-out accuracy %.4f%n", epoch + 1, result.loss,
            result.accuracy);
      }
    }
    result.params = params;
    return result;
  }

  /** 1 when every rank holds exactly these parameters, else 0 (same on all ranks). */
  public static boolean identicalAcrossRanks(float[][] params) {
    for (float[] p : params) {
      float[] max = Hvd.allreduce(p.clone(), ReduceOp.MAX);
      float[] min = Hvd.allreduce(p.clone(), ReduceOp.MIN);
      int same = java.util.Arrays.equals(max, min) && java.util.Arrays.equals(max, p) ? 1 : 0;
      if (Hvd.allreduce(new int[] {same}, ReduceOp.MIN)[0] == 0) return false;
    }
    return true;
  }

  public static void main(String[] args) throws IOException {
    if (args.length < 1) {
      System.err.println("usage: TrainDigits DIGITS_TXT [EPOCHS]");
      System.exit(2);
    }
    int epochs = args.length > 1 ? Integer.parseInt(args[1]) : 15;
    Hvd.init();
    Result r = train(Path.of(args[0]), epochs, true);
    boolean same = identicalAcrossRanks(r.params);
    boolean ok = same && r.accuracy >= 0.9;
    if (Hvd.rank() == 0) {
      System.out.printf("final held-out accuracy %.4f, replicas %s (%d ranks): %s%n", r.accuracy,
          same ? "identical" : "DIFFERENT", Hvd.size(), ok ? "converged" : "NOT converged");
    }
    Hvd.shutdown();
    System.exit(ok ? 0 : 1);
  }
}
