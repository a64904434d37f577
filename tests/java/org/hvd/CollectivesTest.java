package org.hvd;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Runs on every rank of a 2-process job. The tests are collective, so they
 * run in a fixed order (the same on every rank); shutdown is tested last.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class CollectivesTest {
  static int rank;
  static int size;

  @BeforeAll
  static void init() {
    Hvd.init();
    rank = Hvd.rank();
    size = Hvd.size();
  }

  @AfterAll
  static void finish() {
    if (Hvd.isInitialized()) Hvd.shutdown();
  }

  /** 1 + 2 + ... + size. */
  static int triangle() {
    return size * (size + 1) / 2;
  }

  @Test
  @Order(1)
  void topology() {
    assertEquals(2, size, "the ctest starts 2 ranks");
    assertTrue(rank >= 0 && rank < size);
    assertEquals(rank, Hvd.localRank(), "one host: local rank = rank");
    assertEquals(size, Hvd.localSize());
    assertTrue(Hvd.isHomogeneous(), "one host: homogeneous");
    assertTrue(Hvd.isInitialized());
    assertEquals("1.0.0", Hvd.version());
  }

  @Test
  @Order(2)
  void allreduceFloatSum() {
    float[] x = {1, 2, 3, 4, 5};
    for (int i = 0; i < x.length; i++) x[i] *= rank + 1;
    float[] y = Hvd.allreduce(x, ReduceOp.SUM);
    for (int i = 0; i < x.length; i++) assertEquals((i + 1) * triangle(), y[i], 0f);
    assertEquals((rank + 1) * 1f, x[0], 0f, "the input array is left unchanged");
  }

  @Test
  @Order(3)
  void allreduceEveryTypeAndOp() {
    double[] avg = Hvd.allreduce(new double[] {rank + 1, 10 * (rank + 1)}, ReduceOp.AVERAGE);
    assertArrayEquals(new double[] {triangle() / (double) size, 10.0 * triangle() / size}, avg, 1e-12);
    assertArrayEquals(new int[] {1, -size}, Hvd.allreduce(new int[] {rank + 1, -(rank + 1)}, ReduceOp.MIN));
    assertArrayEquals(new long[] {size, 1L << 40}, Hvd.allreduce(new long[] {rank + 1, 1L << 40}, ReduceOp.MAX));
    long product = 1;
    for (int r = 1; r <= size; r++) product *= r;
    assertArrayEquals(new long[] {product}, Hvd.allreduce(new long[] {rank + 1}, ReduceOp.PRODUCT));
    assertArrayEquals(new byte[] {(byte) triangle(), 0}, Hvd.allreduce(new byte[] {(byte) (rank + 1), 0}, ReduceOp.SUM));
  }

  @Test
  @Order(3)
  void adasumOrthogonalAddIdenticalAverage() {
    // Rank r holds r + 1 at position r: orthogonal vectors, whose Adasum is their sum.
    double[] orthogonal = new double[size];
    orthogonal[rank] = rank + 1;
    double[] added = Hvd.allreduce(orthogonal, ReduceOp.ADASUM);
    for (int i = 0; i < size; i++) assertEquals(i + 1.0, added[i], 0.0, "element " + i);
    // The same vector everywhere: Adasum of equal vectors is that vector.
    float[] same = {0.5f, -1.25f, 3f};
    assertArrayEquals(same, Hvd.allreduce(same.clone(), ReduceOp.ADASUM), 0f);
    HvdException ints = assertThrows(HvdException.class, () -> Hvd.allreduce(new int[] {1}, ReduceOp.ADASUM));
    assertEquals(Status.INVALID_ARGUMENT, ints.status());
    assertTrue(ints.getMessage().contains("floating-point"), ints.getMessage());
  }

  @Test
  @Order(4)
  void allgatherDifferentLengthsPerRank() {
    int[] mine = new int[rank + 1]; // rank r sends r + 1 values r*10, r*10+1, ...
    for (int i = 0; i <= rank; i++) mine[i] = rank * 10 + i;
    int[] all = Hvd.allgather(mine);
    int k = 0;
    int[] expected = new int[triangle()];
    for (int r = 0; r < size; r++) for (int i = 0; i <= r; i++) expected[k++] = r * 10 + i;
    assertArrayEquals(expected, all);
    double[] d = Hvd.allgather(new double[] {rank + 0.5});
    assertArrayEquals(new double[] {0.5, 1.5}, d, 0.0);
  }

  @Test
  @Order(5)
  void broadcastFromRankOne() {
    float[] f = rank == 1 ? new float[] {7, 8, 9} : new float[3];
    Hvd.broadcast(f, 1);
    assertArrayEquals(new float[] {7, 8, 9}, f, 0f);
    long[] l = {rank == 1 ? 42L : -1L};
    Hvd.broadcast(l, 1);
    assertArrayEquals(new long[] {42L}, l);
    byte[] b = rank == 0 ? new byte[] {3, 1, 4} : new byte[3];
    Hvd.broadcast(b, 0);
    assertArrayEquals(new byte[] {3, 1, 4}, b);
  }

  @Test
  @Order(6)
  void directBufferZeroCopy() {
    // Data starts at position 8 to check that the view honours the position.
    ByteBuffer in = ByteBuffer.allocateDirect(8 + 4 * 4).order(ByteOrder.nativeOrder());
    ByteBuffer out = ByteBuffer.allocateDirect(4 * 4).order(ByteOrder.nativeOrder());
    for (int i = 0; i < 4; i++) in.putFloat(8 + 4 * i, (rank + 1) * (i + 1));
    in.position(8);
    Hvd.allreduce("direct.sum", in, out, DType.FLOAT32, ReduceOp.SUM, 2, 2);
    for (int i = 0; i < 4; i++) assertEquals((i + 1) * triangle(), out.getFloat(4 * i), 0f);
    // In place: the same buffer as input and output.
    Hvd.allreduce("direct.inplace", out, out, DType.FLOAT32, ReduceOp.AVERAGE);
    for (int i = 0; i < 4; i++) assertEquals((i + 1) * triangle(), out.getFloat(4 * i), 0f);
    // Allgather into a new buffer: rank r sends r + 1 int64 rows.
    ByteBuffer rows = ByteBuffer.allocateDirect(8 * (rank + 1)).order(ByteOrder.nativeOrder());
    for (int i = 0; i <= rank; i++) rows.putLong(8 * i, 100 * rank + i);
    ByteBuffer gathered = Hvd.allgather("direct.gather", rows, DType.INT64);
    assertEquals(8 * triangle(), gathered.capacity());
    assertEquals(0L, gathered.getLong(0));
    assertEquals(100L, gathered.getLong(8));
    assertEquals(101L, gathered.getLong(16));
  }

  @Test
  @Order(7)
  void asyncHandles() {
    try (Handle<double[]> a = Hvd.allreduceAsync(new double[] {rank}, ReduceOp.SUM);
        Handle<int[]> b = Hvd.allgatherAsync(new int[] {rank});
        Handle<float[]> c = Hvd.broadcastAsync(new float[] {rank}, 1)) {
      assertTrue(c.await(60_000), "finished within the timeout");
      assertArrayEquals(new float[] {1f}, c.get(), 0f);
      while (!b.poll()) Thread.onSpinWait();
      assertArrayEquals(new int[] {0, 1}, b.get());
      assertArrayEquals(new double[] {triangle() - size}, a.get(), 0.0);
      assertTrue(a.poll(), "poll stays true after completion");
    }
  }

  @Test
  @Order(8)
  void alltoallAndReducescatter() {
    int[] send = new int[size]; // element j goes to rank j
    for (int j = 0; j < size; j++) send[j] = 10 * rank + j;
    int[] got = Hvd.alltoall(send, null);
    int[] expected = new int[size];
    for (int j = 0; j < size; j++) expected[j] = 10 * j + rank;
    assertArrayEquals(expected, got);

    float[] x = new float[2 * size];
    for (int i = 0; i < x.length; i++) x[i] = (rank + 1) * (i + 1);
    float[] part = Hvd.reducescatter(x, ReduceOp.SUM);
    assertArrayEquals(new float[] {(2 * rank + 1) * triangle(), (2 * rank + 2) * triangle()}, part, 0f);
  }

  @Test
  @Order(9)
  void errorsCarryCodeAndMessage() {
    HvdException heap = assertThrows(HvdException.class,
        () -> Hvd.allreduce("heap", ByteBuffer.allocate(8), ByteBuffer.allocate(8), DType.FLOAT32, ReduceOp.SUM));
    assertEquals(Status.INVALID_ARGUMENT, heap.status());

    HvdException stale = assertThrows(HvdException.class,
        () -> HvdException.check(org.hvd.jni.HvdNative.hvd_release(987654321L)));
    assertEquals(Status.INVALID_ARGUMENT, stale.status());
    assertEquals(org.hvd.jni.hvd_status.HVD_ERR_INVALID_ARGUMENT, stale.code());
    assertTrue(stale.getMessage().startsWith("HVD_ERR_INVALID_ARGUMENT"), stale.getMessage());
    assertTrue(stale.getMessage().length() > "HVD_ERR_INVALID_ARGUMENT".length() + 2,
        "carries hvd_last_error: " + stale.getMessage());

    HvdException badRoot = assertThrows(HvdException.class, () -> Hvd.broadcast(new int[1], size));
    assertEquals(Status.INVALID_ARGUMENT, badRoot.status(), badRoot.getMessage());

    HvdException twice = assertThrows(HvdException.class, Hvd::init);
    assertEquals(Status.ALREADY_INITIALIZED, twice.status());
  }

  @Test
  @Order(10)
  void mismatchedShapesFailOnEveryRank() {
    HvdException e = assertThrows(HvdException.class,
        () -> Hvd.allreduce("mismatch", HostArray.toDirect(new float[rank + 1]),
            HostArray.toDirect(new float[rank + 1]), DType.FLOAT32, ReduceOp.SUM));
    assertEquals(Status.MISMATCH, e.status(), e.getMessage());
    assertTrue(e.getMessage().contains("mismatch"), "names the tensor: " + e.getMessage());
  }

  @Test
  @Order(11)
  void groupedAllgatherAndReducescatter() {
    // Uneven lengths per rank and per array; one handle for the group.
    int[][] g = Hvd.groupedAllgather(new int[][] {new int[rank + 1], {10 * rank, 10 * rank + 1}});
    int[] first = new int[triangle()];
    int[] second = new int[2 * size];
    for (int r = 0; r < size; r++) {
      second[2 * r] = 10 * r;
      second[2 * r + 1] = 10 * r + 1;
    }
    assertEquals(2, g.length);
    assertArrayEquals(first, g[0]);
    assertArrayEquals(second, g[1]);

    // Rank r's arrays hold (r + 1) * (i + 1); odd lengths split unevenly.
    double[][] xs = {new double[2 * size + 1], new double[size]};
    for (double[] x : xs) {
      for (int i = 0; i < x.length; i++) x[i] = (rank + 1) * (i + 1);
    }
    try (Handle<double[][]> h = Hvd.groupedReducescatterAsync(xs, ReduceOp.AVERAGE)) {
      double[][] parts = h.get();
      int rows0 = 2 + (rank == 0 ? 1 : 0);
      int start0 = rank == 0 ? 0 : 2 * rank + 1;
      assertEquals(rows0, parts[0].length);
      for (int i = 0; i < rows0; i++) {
        assertEquals((start0 + i + 1) * triangle() / (double) size, parts[0][i], 1e-12);
      }
      assertArrayEquals(new double[] {(rank + 1) * triangle() / (double) size}, parts[1], 1e-12);
    }
    HvdException bad = assertThrows(HvdException.class,
        () -> Hvd.groupedReducescatter(new float[][] {{1f}}, ReduceOp.MIN));
    assertEquals(Status.INVALID_ARGUMENT, bad.status(), bad.getMessage());
  }

  @Test
  @Order(12)
  void int16AndBool() {
    short[] s = Hvd.allreduce(new short[] {(short) (1000 * (rank + 1)), -1}, ReduceOp.SUM);
    assertArrayEquals(new short[] {(short) (1000 * triangle()), (short) -size}, s);
    boolean[] any = Hvd.allreduce(new boolean[] {rank == 0, false, true}, ReduceOp.SUM);
    assertArrayEquals(new boolean[] {true, false, true}, any);
    boolean[] all = Hvd.allreduce(new boolean[] {rank == 0, true}, ReduceOp.MIN);
    assertArrayEquals(new boolean[] {size == 1, true}, all);
    boolean[] gathered = Hvd.allgather(new boolean[] {rank % 2 == 1});
    for (int r = 0; r < size; r++) assertEquals(r % 2 == 1, gathered[r]);
  }

  @Test
  @Order(13)
  void pointToPointRing() {
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    double[] got = new double[3];
    try (Handle<double[]> r = Hvd.irecv(got, prev, 4);
        Handle<double[]> s = Hvd.isend(new double[] {rank, rank + 0.5, -rank}, next, 4)) {
      assertArrayEquals(new double[] {prev, prev + 0.5, -prev}, r.get(), 0.0);
      s.get();
    }
    // Blocking forms, two messages on one tag arrive in order; and a
    // receive buffer of the wrong size is a MISMATCH error.
    if (rank == 0) {
      Hvd.send(new int[] {1, 2}, 1, 5);
      Hvd.send(new int[] {3, 4}, 1, 5);
      Hvd.send(new long[] {9, 9, 9}, 1, 6);
    } else if (rank == 1) {
      int[] a = new int[2], b = new int[2];
      Hvd.recv(a, 0, 5);
      Hvd.recv(b, 0, 5);
      assertArrayEquals(new int[] {1, 2}, a);
      assertArrayEquals(new int[] {3, 4}, b);
      HvdException e = assertThrows(HvdException.class, () -> Hvd.recv(new long[2], 0, 6));
      assertEquals(Status.MISMATCH, e.status());
    }
    Hvd.barrier();
  }

  @Test
  @Order(100)
  void afterShutdown() {
    Hvd.shutdown();
    assertFalse(Hvd.isInitialized());
    HvdException q = assertThrows(HvdException.class, Hvd::rank);
    assertEquals(Status.NOT_INITIALIZED, q.status());
    HvdException op = assertThrows(HvdException.class, () -> Hvd.allreduce(new float[1], ReduceOp.SUM));
    assertEquals(Status.NOT_INITIALIZED, op.status(), op.getMessage());
  }
}
