package org.hvd;

import java.nio.ByteBuffer;
import org.hvd.jni.HvdNative;

/**
 * The Java API of hvd: lifecycle, topology and collectives.
 *
 * <p>Arrays (float[], double[], int[], long[], byte[]) are copied into native
 * memory and back; direct ByteBuffers are used in place (zero-copy), from
 * their position, with an explicit dtype and an optional shape (default: the
 * remaining bytes as one dimension). Collectives without a name get an
 * automatic one, which matches across ranks only if every rank submits its
 * operations in the same order. Every error is an {@link HvdException}.
 */
public final class Hvd {
  static {
    NativeLoader.load();
  }

  private Hvd() {}

  // ------------------------------------------------------------ lifecycle

  /** Starts hvd (collective: every rank calls it). */
  public static void init() {
    HvdException.check(HvdNative.hvd_init());
  }

  /** Finishes pending work with SHUT_DOWN and stops hvd; init may follow. */
  public static void shutdown() {
    int st = HvdNative.hvd_shutdown();
    Handle.forgetAll();
    HvdException.check(st);
  }

  public static boolean isInitialized() {
    return HvdNative.hvd_is_initialized() != 0;
  }

  public static String version() {
    return HvdNative.hvd_version();
  }

  // ------------------------------------------------------------- topology

  public static int rank() {
    return topology(HvdNative.hvd_rank());
  }

  public static int size() {
    return topology(HvdNative.hvd_size());
  }

  public static int localRank() {
    return topology(HvdNative.hvd_local_rank());
  }

  public static int localSize() {
    return topology(HvdNative.hvd_local_size());
  }

  public static int crossRank() {
    return topology(HvdNative.hvd_cross_rank());
  }

  public static int crossSize() {
    return topology(HvdNative.hvd_cross_size());
  }

  /** True when every host runs the same number of ranks. */
  public static boolean isHomogeneous() {
    return topology(HvdNative.hvd_is_homogeneous()) == 1;
  }

  public static boolean mpiEnabled() {
    return HvdNative.hvd_mpi_enabled() != 0;
  }

  public static boolean glooEnabled() {
    return HvdNative.hvd_gloo_enabled() != 0;
  }

  public static boolean mpiBuilt() {
    return HvdNative.hvd_mpi_built() != 0;
  }

  public static boolean glooBuilt() {
    return HvdNative.hvd_gloo_built() != 0;
  }

  public static boolean ncclBuilt() {
    return HvdNative.hvd_nccl_built() != 0;
  }

  public static boolean cudaBuilt() {
    return HvdNative.hvd_cuda_built() != 0;
  }

  // ------------------------------------------------------ synchronisation

  /** Blocks until every rank reaches the barrier. */
  public static void barrier() {
    HvdException.check(HvdNative.hvd_barrier(0));
  }

  /** Declares this rank out of data; returns the rank that joined last. */
  public static int join() {
    int[] last = new int[1];
    HvdException.check(HvdNative.hvd_join(0, last));
    return last[0];
  }

  // ------------------------------------------------ collectives on arrays

  /** Reduces the array across ranks into a new array (the input is unchanged). */
  public static float[] allreduce(float[] x, ReduceOp op) { return sync(allreduceAsync(x, op)); }
  public static double[] allreduce(double[] x, ReduceOp op) { return sync(allreduceAsync(x, op)); }
  public static int[] allreduce(int[] x, ReduceOp op) { return sync(allreduceAsync(x, op)); }
  public static long[] allreduce(long[] x, ReduceOp op) { return sync(allreduceAsync(x, op)); }
  public static byte[] allreduce(byte[] x, ReduceOp op) { return sync(allreduceAsync(x, op)); }

  public static Handle<float[]> allreduceAsync(float[] x, ReduceOp op) { return allreduceArray(x, op); }
  public static Handle<double[]> allreduceAsync(double[] x, ReduceOp op) { return allreduceArray(x, op); }
  public static Handle<int[]> allreduceAsync(int[] x, ReduceOp op) { return allreduceArray(x, op); }
  public static Handle<long[]> allreduceAsync(long[] x, ReduceOp op) { return allreduceArray(x, op); }
  public static Handle<byte[]> allreduceAsync(byte[] x, ReduceOp op) { return allreduceArray(x, op); }

  /** Concatenates every rank's array in rank order (lengths may differ per rank). */
  public static float[] allgather(float[] x) { return sync(allgatherAsync(x)); }
  public static double[] allgather(double[] x) { return sync(allgatherAsync(x)); }
  public static int[] allgather(int[] x) { return sync(allgatherAsync(x)); }
  public static long[] allgather(long[] x) { return sync(allgatherAsync(x)); }
  public static byte[] allgather(byte[] x) { return sync(allgatherAsync(x)); }

  public static Handle<float[]> allgatherAsync(float[] x) { return allgatherArray(x); }
  public static Handle<double[]> allgatherAsync(double[] x) { return allgatherArray(x); }
  public static Handle<int[]> allgatherAsync(int[] x) { return allgatherArray(x); }
  public static Handle<long[]> allgatherAsync(long[] x) { return allgatherArray(x); }
  public static Handle<byte[]> allgatherAsync(byte[] x) { return allgatherArray(x); }

  /** Overwrites {@code x} on every rank with root's {@code x}. */
  public static void broadcast(float[] x, int root) { sync(broadcastAsync(x, root)); }
  public static void broadcast(double[] x, int root) { sync(broadcastAsync(x, root)); }
  public static void broadcast(int[] x, int root) { sync(broadcastAsync(x, root)); }
  public static void broadcast(long[] x, int root) { sync(broadcastAsync(x, root)); }
  public static void broadcast(byte[] x, int root) { sync(broadcastAsync(x, root)); }

  /** {@code x} is written when the handle is first seen finished. */
  public static Handle<float[]> broadcastAsync(float[] x, int root) { return broadcastArray(x, root); }
  public static Handle<double[]> broadcastAsync(double[] x, int root) { return broadcastArray(x, root); }
  public static Handle<int[]> broadcastAsync(int[] x, int root) { return broadcastArray(x, root); }
  public static Handle<long[]> broadcastAsync(long[] x, int root) { return broadcastArray(x, root); }
  public static Handle<byte[]> broadcastAsync(byte[] x, int root) { return broadcastArray(x, root); }

  /**
   * Sends {@code splits[i]} elements to rank i (null: equal parts) and
   * returns what every rank sent here, in rank order.
   */
  public static float[] alltoall(float[] x, int[] splits) { return sync(alltoallArray(x, splits)); }
  public static double[] alltoall(double[] x, int[] splits) { return sync(alltoallArray(x, splits)); }
  public static int[] alltoall(int[] x, int[] splits) { return sync(alltoallArray(x, splits)); }
  public static long[] alltoall(long[] x, int[] splits) { return sync(alltoallArray(x, splits)); }
  public static byte[] alltoall(byte[] x, int[] splits) { return sync(alltoallArray(x, splits)); }

  /** Reduces across ranks and returns this rank's part (op SUM or AVERAGE). */
  public static float[] reducescatter(float[] x, ReduceOp op) { return sync(reducescatterArray(x, op)); }
  public static double[] reducescatter(double[] x, ReduceOp op) { return sync(reducescatterArray(x, op)); }
  public static int[] reducescatter(int[] x, ReduceOp op) { return sync(reducescatterArray(x, op)); }
  public static long[] reducescatter(long[] x, ReduceOp op) { return sync(reducescatterArray(x, op)); }
  public static byte[] reducescatter(byte[] x, ReduceOp op) { return sync(reducescatterArray(x, op)); }

  /** int16 and bool arrays: the same collectives (bool reduces with SUM/MAX as or, MIN as and). */
  public static short[] allreduce(short[] x, ReduceOp op) { return sync(allreduceArray(x, op)); }
  public static boolean[] allreduce(boolean[] x, ReduceOp op) { return sync(allreduceArray(x, op)); }
  public static short[] allgather(short[] x) { return sync(allgatherArray(x)); }
  public static boolean[] allgather(boolean[] x) { return sync(allgatherArray(x)); }
  public static void broadcast(short[] x, int root) { sync(broadcastArray(x, root)); }
  public static void broadcast(boolean[] x, int root) { sync(broadcastArray(x, root)); }
  public static short[] reducescatter(short[] x, ReduceOp op) { return sync(reducescatterArray(x, op)); }
  public static boolean[] reducescatter(boolean[] x, ReduceOp op) { return sync(reducescatterArray(x, op)); }

  /**
   * Gathers every array of the group as one negotiated, fused operation:
   * result i is every rank's {@code xs[i]} concatenated in rank order
   * (lengths may differ per rank).
   */
  public static float[][] groupedAllgather(float[][] xs) { return sync(groupedAllgatherAsync(xs)); }
  public static double[][] groupedAllgather(double[][] xs) { return sync(groupedAllgatherAsync(xs)); }
  public static int[][] groupedAllgather(int[][] xs) { return sync(groupedAllgatherAsync(xs)); }
  public static long[][] groupedAllgather(long[][] xs) { return sync(groupedAllgatherAsync(xs)); }
  public static byte[][] groupedAllgather(byte[][] xs) { return sync(groupedAllgatherAsync(xs)); }

  public static Handle<float[][]> groupedAllgatherAsync(float[][] xs) { return groupedArrays(xs, null); }
  public static Handle<double[][]> groupedAllgatherAsync(double[][] xs) { return groupedArrays(xs, null); }
  public static Handle<int[][]> groupedAllgatherAsync(int[][] xs) { return groupedArrays(xs, null); }
  public static Handle<long[][]> groupedAllgatherAsync(long[][] xs) { return groupedArrays(xs, null); }
  public static Handle<byte[][]> groupedAllgatherAsync(byte[][] xs) { return groupedArrays(xs, null); }

  /**
   * Reduces every array of the group across ranks as one negotiated, fused
   * operation and returns this rank's part of each (op SUM or AVERAGE).
   */
  public static float[][] groupedReducescatter(float[][] xs, ReduceOp op) { return sync(groupedReducescatterAsync(xs, op)); }
  public static double[][] groupedReducescatter(double[][] xs, ReduceOp op) { return sync(groupedReducescatterAsync(xs, op)); }
  public static int[][] groupedReducescatter(int[][] xs, ReduceOp op) { return sync(groupedReducescatterAsync(xs, op)); }
  public static long[][] groupedReducescatter(long[][] xs, ReduceOp op) { return sync(groupedReducescatterAsync(xs, op)); }
  public static byte[][] groupedReducescatter(byte[][] xs, ReduceOp op) { return sync(groupedReducescatterAsync(xs, op)); }

  public static Handle<float[][]> groupedReducescatterAsync(float[][] xs, ReduceOp op) { return groupedArrays(xs, requireOp(op)); }
  public static Handle<double[][]> groupedReducescatterAsync(double[][] xs, ReduceOp op) { return groupedArrays(xs, requireOp(op)); }
  public static Handle<int[][]> groupedReducescatterAsync(int[][] xs, ReduceOp op) { return groupedArrays(xs, requireOp(op)); }
  public static Handle<long[][]> groupedReducescatterAsync(long[][] xs, ReduceOp op) { return groupedArrays(xs, requireOp(op)); }
  public static Handle<byte[][]> groupedReducescatterAsync(byte[][] xs, ReduceOp op) { return groupedArrays(xs, requireOp(op)); }

  // ---------------------------------------- collectives on direct buffers

  /** Reduces {@code in} into {@code out} (may be the same buffer), zero-copy. */
  public static Handle<ByteBuffer> allreduceAsync(String name, ByteBuffer in, ByteBuffer out,
      DType dtype, ReduceOp op, long... shape) {
    return Ops.allreduce(name, in, out, dtype, op, shape, h -> out);
  }

  public static void allreduce(String name, ByteBuffer in, ByteBuffer out, DType dtype,
      ReduceOp op, long... shape) {
    sync(allreduceAsync(name, in, out, dtype, op, shape));
  }

  /** Returns the gathered rows in a new native-order direct buffer. */
  public static Handle<ByteBuffer> allgatherAsync(String name, ByteBuffer in, DType dtype,
      long... shape) {
    return Ops.allgather(name, in, dtype, shape, Ops::result);
  }

  public static ByteBuffer allgather(String name, ByteBuffer in, DType dtype, long... shape) {
    return sync(allgatherAsync(name, in, dtype, shape));
  }

  /** Broadcasts in place, zero-copy. */
  public static Handle<ByteBuffer> broadcastAsync(String name, ByteBuffer data, DType dtype,
      int root, long... shape) {
    return Ops.broadcast(name, data, dtype, root, shape, h -> data);
  }

  public static void broadcast(String name, ByteBuffer data, DType dtype, int root,
      long... shape) {
    sync(broadcastAsync(name, data, dtype, root, shape));
  }

  /** splits counts rows of dimension 0 (null: equal splits). */
  public static Handle<ByteBuffer> alltoallAsync(String name, ByteBuffer in, DType dtype,
      int[] splits, long... shape) {
    return Ops.alltoall(name, in, dtype, splits, shape, Ops::result);
  }

  public static Handle<ByteBuffer> reducescatterAsync(String name, ByteBuffer in, DType dtype,
      ReduceOp op, long... shape) {
    return Ops.reducescatter(name, in, dtype, op, shape, Ops::result);
  }

  // ------------------------------------------------------- point to point

  /**
   * Sends {@code x} to rank {@code dest} and waits until it has gone. Messages
   * to one rank on one tag arrive in order; the receiver's array must have
   * the same length and type. Outside the negotiation of collectives.
   */
  public static void send(float[] x, int dest, int tag) { sync(isend(x, dest, tag)); }
  public static void send(double[] x, int dest, int tag) { sync(isend(x, dest, tag)); }
  public static void send(int[] x, int dest, int tag) { sync(isend(x, dest, tag)); }
  public static void send(long[] x, int dest, int tag) { sync(isend(x, dest, tag)); }
  public static void send(byte[] x, int dest, int tag) { sync(isend(x, dest, tag)); }

  public static Handle<float[]> isend(float[] x, int dest, int tag) { return sendArray(x, dest, tag); }
  public static Handle<double[]> isend(double[] x, int dest, int tag) { return sendArray(x, dest, tag); }
  public static Handle<int[]> isend(int[] x, int dest, int tag) { return sendArray(x, dest, tag); }
  public static Handle<long[]> isend(long[] x, int dest, int tag) { return sendArray(x, dest, tag); }
  public static Handle<byte[]> isend(byte[] x, int dest, int tag) { return sendArray(x, dest, tag); }

  /** Receives the next message from rank {@code src} on {@code tag} into {@code x}. */
  public static void recv(float[] x, int src, int tag) { sync(irecv(x, src, tag)); }
  public static void recv(double[] x, int src, int tag) { sync(irecv(x, src, tag)); }
  public static void recv(int[] x, int src, int tag) { sync(irecv(x, src, tag)); }
  public static void recv(long[] x, int src, int tag) { sync(irecv(x, src, tag)); }
  public static void recv(byte[] x, int src, int tag) { sync(irecv(x, src, tag)); }

  /** {@code x} is written when the handle is first seen finished. */
  public static Handle<float[]> irecv(float[] x, int src, int tag) { return recvArray(x, src, tag); }
  public static Handle<double[]> irecv(double[] x, int src, int tag) { return recvArray(x, src, tag); }
  public static Handle<int[]> irecv(int[] x, int src, int tag) { return recvArray(x, src, tag); }
  public static Handle<long[]> irecv(long[] x, int src, int tag) { return recvArray(x, src, tag); }
  public static Handle<byte[]> irecv(byte[] x, int src, int tag) { return recvArray(x, src, tag); }

  /** Zero-copy forms on direct buffers. */
  public static Handle<ByteBuffer> isend(ByteBuffer data, DType dtype, int dest, int tag,
      long... shape) {
    return Ops.p2p(false, data, dtype, dest, tag, shape, h -> data);
  }

  public static Handle<ByteBuffer> irecv(ByteBuffer data, DType dtype, int src, int tag,
      long... shape) {
    return Ops.p2p(true, data, dtype, src, tag, shape, h -> data);
  }

  /**
   * Posts every op in order as one operation (hvd_batch_isend_irecv): done
   * when all are, the first error wins. Posting a ring's send and receive
   * together needs no ordering of sends against receives to avoid a
   * deadlock. {@code get()} returns the ops, received arrays written.
   */
  public static Handle<P2POp[]> batchIsendIrecv(P2POp... ops) {
    if (ops == null || ops.length == 0) throw Ops.invalid("batchIsendIrecv needs at least one op");
    P2POp[] list = ops.clone();
    ByteBuffer[] staged = new ByteBuffer[list.length];
    for (int i = 0; i < list.length; i++) {
      if (list[i] == null) throw Ops.invalid("op " + i + " of the batch is null");
      staged[i] = list[i].stage();
    }
    return Ops.batch(list, staged, h -> {
      for (int i = 0; i < list.length; i++) list[i].unstage(staged[i]);
      return list;
    });
  }

  // ---------------------------------------------------------------- glue

  private static int topology(int value) {
    if (value < 0) throw new HvdException(Status.NOT_INITIALIZED, HvdNative.hvd_last_error());
    return value;
  }

  private static <T> T sync(Handle<T> handle) {
    try (Handle<T> h = handle) {
      return h.get();
    }
  }

  private static <A> Handle<A> allreduceArray(A x, ReduceOp op) {
    ByteBuffer b = HostArray.toDirect(x);
    return Ops.allreduce(null, b, b, HostArray.dtypeOf(x), op, null, h -> HostArray.fromDirect(b, x));
  }

  private static <A> Handle<A> allgatherArray(A x) {
    return Ops.allgather(null, HostArray.toDirect(x), HostArray.dtypeOf(x), null,
        h -> HostArray.fromDirect(Ops.result(h), x));
  }

  private static <A> Handle<A> broadcastArray(A x, int root) {
    ByteBuffer b = HostArray.toDirect(x);
    return Ops.broadcast(null, b, HostArray.dtypeOf(x), root, null, h -> {
      HostArray.copyInto(b, x);
      return x;
    });
  }

  private static <A> Handle<A> sendArray(A x, int dest, int tag) {
    return Ops.p2p(false, HostArray.toDirect(x), HostArray.dtypeOf(x), dest, tag, null, h -> x);
  }

  private static <A> Handle<A> recvArray(A x, int src, int tag) {
    ByteBuffer b = HostArray.toDirect(x);
    return Ops.p2p(true, b, HostArray.dtypeOf(x), src, tag, null, h -> {
      HostArray.copyInto(b, x);
      return x;
    });
  }

  private static <A> Handle<A> alltoallArray(A x, int[] splits) {
    return Ops.alltoall(null, HostArray.toDirect(x), HostArray.dtypeOf(x), splits, null,
        h -> HostArray.fromDirect(Ops.result(h), x));
  }

  private static ReduceOp requireOp(ReduceOp op) {
    if (op == null) throw Ops.invalid("op is null");
    return op;
  }

  /** Allgather (op null) or reducescatter of arrays of one type, copied into one buffer. */
  private static <A> Handle<A[]> groupedArrays(A[] xs, ReduceOp op) {
    if (xs == null || xs.length == 0) throw Ops.invalid("grouped operations need at least one array");
    DType t = HostArray.dtypeOf(xs[0]);
    long[] lengths = new long[xs.length];
    long total = 0;
    for (int i = 0; i < xs.length; i++) {
      if (xs[i] == null) throw Ops.invalid("array " + i + " of the group is null");
      lengths[i] = HostArray.length(xs[i]);
      total += lengths[i];
    }
    ByteBuffer all = HostArray.allocate(total * t.size());
    for (int i = 0; i < xs.length; i++) all.put(HostArray.toDirect(xs[i]));
    all.rewind();
    return Ops.grouped(all, t, lengths, op, h -> {
      @SuppressWarnings("unchecked")
      A[] out = (A[]) java.lang.reflect.Array.newInstance(xs.getClass().getComponentType(), xs.length);
      for (int i = 0; i < xs.length; i++) out[i] = HostArray.fromDirect(Ops.result(h, i), xs[0]);
      return out;
    });
  }

  private static <A> Handle<A> reducescatterArray(A x, ReduceOp op) {
    return Ops.reducescatter(null, HostArray.toDirect(x), HostArray.dtypeOf(x), op, null,
        h -> HostArray.fromDirect(Ops.result(h), x));
  }
}
