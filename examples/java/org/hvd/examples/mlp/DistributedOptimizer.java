package org.hvd.examples.mlp;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import org.hvd.DType;
import org.hvd.Handle;
import org.hvd.Hvd;
import org.hvd.ReduceOp;

/**
 * SGD with momentum whose gradients are averaged across ranks by hvd.
 *
 * <p>The model computes the gradient of parameter i into {@link #grad(int)}
 * and calls {@link #gradientReady(int)} as soon as it is complete: its
 * allreduce starts in the background at once (a named, zero-copy allreduce
 * of a direct buffer), while the backward pass goes on with the layers
 * below. {@link #step()} waits for every allreduce, then updates the
 * parameters with the averaged gradients, so all ranks apply the same update
 * and their replicas stay identical.
 */
public final class DistributedOptimizer {
  private final float[][] params;
  private final String[] names;
  private final float[][] grads;
  private final float[][] velocity;
  private final ByteBuffer[] buffers; // native memory that hvd reduces in place
  private final Handle<?>[] pending;
  private final float lr;
  private final float momentum;

  /** params[i] is updated in place; names[i] must be the same on every rank. */
  public DistributedOptimizer(float[][] params, String[] names, float lr, float momentum) {
    if (params.length != names.length) {
      throw new IllegalArgumentException("DistributedOptimizer: " + params.length
          + " parameters but " + names.length + " names");
    }
    this.params = params;
    this.names = names.clone();
    this.lr = lr;
    this.momentum = momentum;
    int n = params.length;
    grads = new float[n][];
    velocity = new float[n][];
    buffers = new ByteBuffer[n];
    pending = new Handle<?>[n];
    for (int i = 0; i < n; i++) {
      grads[i] = new float[params[i].length];
      velocity[i] = new float[params[i].length];
      buffers[i] = ByteBuffer.allocateDirect(4 * params[i].length).order(ByteOrder.nativeOrder());
    }
  }

  /** The gradient buffer of parameter i, for the backward pass to fill. */
  public float[] grad(int i) {
    return grads[i];
  }

  /** Gradient i is complete: start averaging it across ranks. */
  public void gradientReady(int i) {
    if (pending[i] != null) {
      throw new IllegalStateException("DistributedOptimizer: gradient of " + names[i]
          + " reported twice before step()");
    }
    FloatBuffer view = buffers[i].asFloatBuffer();
    view.put(grads[i]);
    pending[i] = Hvd.allreduceAsync("grad." + names[i], buffers[i], buffers[i], DType.FLOAT32,
        ReduceOp.AVERAGE, grads[i].length);
  }

  /**
   * Waits for the averaged gradients (starting any the model did not report:
   * they count as zeros, so that every rank reduces the same tensors), takes
   * one SGD step with momentum and zeroes the gradients.
   */
  public void step() {
    for (int i = 0; i < params.length; i++) {
      if (pending[i] == null) gradientReady(i);
    }
    for (int i = 0; i < params.length; i++) {
      try (Handle<?> h = pending[i]) {
        h.get();
      }
      pending[i] = null;
      buffers[i].asFloatBuffer().get(grads[i]);
      float[] p = params[i], g = grads[i], v = velocity[i];
      for (int k = 0; k < p.length; k++) {
        v[k] = momentum * v[k] + g[k];
        p[k] -= lr * v[k];
        g[k] = 0f;
      }
    }
  }

  /** Copies root's parameters to every rank (before training). */
  public static void broadcastParameters(float[][] params, String[] names, int root) {
    for (int i = 0; i < params.length; i++) {
      ByteBuffer b = ByteBuffer.allocateDirect(4 * params[i].length).order(ByteOrder.nativeOrder());
      b.asFloatBuffer().put(params[i]);
      Hvd.broadcast("broadcast." + names[i], b, DType.FLOAT32, root, params[i].length);
      b.asFloatBuffer().get(params[i]);
    }
  }
}
