package org.hvd;

import java.nio.ByteBuffer;
import org.hvd.jni.HvdNative;

/**
 * Submits operations on direct buffers through the JNI glue. Each call gets
 * its own scratch buffer for the C tensor descriptors (see hvd_jni_glue.h);
 * the returned Handle keeps it and the data buffers alive.
 */
final class Ops {
  private static final int MAX_DIMS = 32; // far above any real tensor rank

  private Ops() {}

  static <T> Handle<T> allreduce(String name, ByteBuffer in, ByteBuffer out, DType t, ReduceOp op,
      long[] shape, Handle.Finisher<T> fin) {
    long[] s = shapeOf(in, t, shape);
    ByteBuffer inView = view(in, s, t, false);
    ByteBuffer outView = out == in ? inView : view(out, s, t, true);
    ByteBuffer scratch = scratch(s.length);
    long[] h = new long[1];
    HvdException.check(HvdNative.hvdj_allreduce_async(scratch, name, inView, outView, s, s.length,
        t.code, t.bits, op.code, 1.0, 1.0, 0, h));
    return new Handle<>(h[0], fin, scratch, inView, outView);
  }

  static <T> Handle<T> allgather(String name, ByteBuffer in, DType t, long[] shape,
      Handle.Finisher<T> fin) {
    long[] s = shapeOf(in, t, shape);
    ByteBuffer inView = view(in, s, t, false);
    ByteBuffer scratch = scratch(s.length);
    long[] h = new long[1];
    HvdException.check(HvdNative.hvdj_allgather_async(scratch, name, inView, s, s.length, t.code,
        t.bits, 0, h));
    return new Handle<>(h[0], fin, scratch, inView);
  }

  static <T> Handle<T> broadcast(String name, ByteBuffer data, DType t, int root, long[] shape,
      Handle.Finisher<T> fin) {
    long[] s = shapeOf(data, t, shape);
    ByteBuffer view = view(data, s, t, true);
    ByteBuffer scratch = scratch(s.length);
    long[] h = new long[1];
    HvdException.check(HvdNative.hvdj_broadcast_async(scratch, name, view, s, s.length, t.code,
        t.bits, root, 0, h));
    return new Handle<>(h[0], fin, scratch, view);
  }

  /** splits null: equal splits. */
  static <T> Handle<T> alltoall(String name, ByteBuffer in, DType t, int[] splits,
      long[] shape, Handle.Finisher<T> fin) {
    long[] s = shapeOf(in, t, shape);
    ByteBuffer inView = view(in, s, t, false);
    ByteBuffer scratch = scratch(s.length);
    long[] h = new long[1];
    int n = splits == null ? 0 : splits.length;
    HvdException.check(HvdNative.hvdj_alltoall_async(scratch, name, inView, s, s.length, t.code,
        t.bits, splits, n, 0, h));
    return new Handle<>(h[0], fin, scratch, inView);
  }

  static <T> Handle<T> reducescatter(String name, ByteBuffer in, DType t, ReduceOp op,
      long[] shape, Handle.Finisher<T> fin) {
    long[] s = shapeOf(in, t, shape);
    ByteBuffer inView = view(in, s, t, false);
    ByteBuffer scratch = scratch(s.length);
    long[] h = new long[1];
    HvdException.check(HvdNative.hvdj_reducescatter_async(scratch, name, inView, s, s.length,
        t.code, t.bits, op.code, 0, h));
    return new Handle<>(h[0], fin, scratch, inView);
  }

  /**
   * A grouped allgather (op null) or reducescatter of {@code lengths.length}
   * 1-D tensors of one dtype, one after another in {@code data}.
   */
  static <T> Handle<T> grouped(ByteBuffer data, DType t, long[] lengths, ReduceOp op,
      Handle.Finisher<T> fin) {
    long total = 0;
    for (long n : lengths) {
      if (n < 0) throw invalid("negative length " + n);
      total += n;
    }
    ByteBuffer view = view(data, new long[] {total}, t, false);
    Handle.reap();
    ByteBuffer scratch = HostArray.allocate(HvdNative.hvdj_grouped_scratch_bytes(lengths.length));
    long[] len = lengths.clone();
    long[] h = new long[1];
    int st = op == null
        ? HvdNative.hvdj_grouped_allgather_async(scratch, view, len, len.length, t.code, t.bits,
            0, h)
        : HvdNative.hvdj_grouped_reducescatter_async(scratch, view, len, len.length, t.code,
            t.bits, op.code, 0, h);
    HvdException.check(st);
    return new Handle<>(h[0], fin, scratch, view, len);
  }

  /** Point to point: sends {@code data} to rank {@code peer}, or receives into it. */
  static <T> Handle<T> p2p(boolean recv, ByteBuffer data, DType t, int peer, int tag,
      long[] shape, Handle.Finisher<T> fin) {
    long[] s = shapeOf(data, t, shape);
    ByteBuffer view = view(data, s, t, recv);
    ByteBuffer scratch = scratch(s.length);
    long[] h = new long[1];
    HvdException.check(recv
        ? HvdNative.hvdj_recv_async(scratch, view, s, s.length, t.code, t.bits, peer, tag, 0, h)
        : HvdNative.hvdj_send_async(scratch, view, s, s.length, t.code, t.bits, peer, tag, 0, h));
    return new Handle<>(h[0], fin, scratch, view);
  }

  /**
   * Batched point to point: {@code staged[i]} is the native memory of
   * {@code ops[i]}; all are posted in order under one handle.
   */
  static <T> Handle<T> batch(P2POp[] ops, ByteBuffer[] staged, Handle.Finisher<T> fin) {
    Handle.reap();
    int n = ops.length;
    ByteBuffer scratch = HostArray.allocate(HvdNative.hvdj_batch_scratch_bytes(n));
    for (int i = 0; i < n; i++) {
      P2POp op = ops[i];
      HvdException.check(HvdNative.hvdj_batch_set(scratch, n, i, op.recv ? 1 : 0, staged[i],
          op.elements, op.dtype.code, op.dtype.bits, op.peer, op.tag));
    }
    long[] h = new long[1];
    HvdException.check(HvdNative.hvdj_batch_isend_irecv(scratch, n, 0, h));
    return new Handle<>(h[0], fin, scratch, staged);
  }

  /** Copies an hvd-owned result into a new native-order direct buffer. */
  static ByteBuffer result(long handle) {
    return result(handle, 0);
  }

  /** Result {@code index} of a grouped operation, copied like {@link #result(long)}. */
  static ByteBuffer result(long handle, int index) {
    long[] shape = new long[MAX_DIMS];
    int[] ndim = new int[1];
    long[] nbytes = new long[1];
    HvdException.check(
        HvdNative.hvdj_result_shape_at(handle, index, shape, MAX_DIMS, ndim, nbytes));
    ByteBuffer out = HostArray.allocate(nbytes[0]);
    HvdException.check(HvdNative.hvdj_result_copy_at(handle, index, out, nbytes[0]));
    return out;
  }

  /** The explicit shape, or the buffer's remaining elements as one dimension. */
  private static long[] shapeOf(ByteBuffer b, DType t, long[] shape) {
    if (b == null) throw invalid("buffer is null");
    if (shape != null && shape.length > 0) return shape.clone();
    if (b.remaining() % t.size() != 0) {
      throw invalid(b.remaining() + " bytes is not a whole number of " + t + " elements");
    }
    return new long[] {b.remaining() / t.size()};
  }

  /** A zero-copy view of the buffer from its position, checked to cover the shape. */
  private static ByteBuffer view(ByteBuffer b, long[] shape, DType t, boolean written) {
    if (b == null || !b.isDirect()) throw invalid("buffers must be direct (ByteBuffer.allocateDirect)");
    if (written && b.isReadOnly()) throw invalid("output buffer is read-only");
    long bytes = t.size();
    for (long d : shape) {
      if (d < 0) throw invalid("negative dimension " + d);
      bytes *= d;
    }
    if (bytes > b.remaining()) {
      throw invalid("shape needs " + bytes + " bytes, buffer has " + b.remaining());
    }
    return b.slice();
  }

  private static ByteBuffer scratch(int ndim) {
    Handle.reap(); // every submission gives finished, closed handles back to C
    return HostArray.allocate(HvdNative.hvdj_scratch_bytes(ndim));
  }

  static HvdException invalid(String message) {
    return new HvdException(Status.INVALID_ARGUMENT, message);
  }
}
