package org.hvd.p2p;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.hvd.Handle;
import org.hvd.Hvd;
import org.hvd.HvdException;
import org.hvd.P2POp;
import org.hvd.DType;
import org.hvd.Status;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Hvd.batchIsendIrecv on every rank of a job of 2 or more ranks (ctest runs
 * it at np 3): ring exchanges with exact values per rank. The tests
 * exchange messages, so they run in a fixed order on every rank.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class BatchP2PTest {
  static int rank;
  static int size;
  static int next;
  static int prev;

  @BeforeAll
  static void init() {
    Hvd.init();
    rank = Hvd.rank();
    size = Hvd.size();
    next = (rank + 1) % size;
    prev = (rank + size - 1) % size;
    assertTrue(size >= 2, "needs at least 2 ranks");
  }

  @AfterAll
  static void finish() {
    if (Hvd.isInitialized()) Hvd.shutdown();
  }

  @Test
  @Order(1)
  void ringOfArrays() {
    // Send to the next rank and receive from the previous one in one batch;
    // two messages on one tag arrive in order, a third on another tag.
    float[] first = new float[1001];
    float[] second = new float[1001];
    long[] other = new long[3];
    try (Handle<P2POp[]> h = Hvd.batchIsendIrecv(
             P2POp.irecv(first, prev, 7),
             P2POp.isend(block(rank, 0), next, 7),
             P2POp.isend(block(rank, 1), next, 7),
             P2POp.irecv(second, prev, 7),
             P2POp.isend(new long[] {rank, -rank, 1L << 40}, next, 8),
             P2POp.irecv(other, prev, 8))) {
      P2POp[] ops = h.get();
      assertEquals(6, ops.length);
      assertTrue(ops[0].isRecv());
    }
    assertArrayEquals(block(prev, 0), first, 0f);
    assertArrayEquals(block(prev, 1), second, 0f);
    assertArrayEquals(new long[] {prev, -prev, 1L << 40}, other);
  }

  @Test
  @Order(2)
  void bothWaysWithOtherTypes() {
    // Every rank exchanges with both neighbours at once (at np 2 they are
    // the same rank: two messages per direction on two tags).
    int[] fromPrev = new int[4];
    double[] fromNext = new double[2];
    boolean[] flags = new boolean[3];
    try (Handle<P2POp[]> h = Hvd.batchIsendIrecv(
             P2POp.isend(new int[] {rank, rank + 1, rank + 2, rank + 3}, next, 1),
             P2POp.isend(new double[] {rank * 0.5, -rank}, prev, 2),
             P2POp.isend(new boolean[] {rank % 2 == 0, true, false}, next, 3),
             P2POp.irecv(fromPrev, prev, 1),
             P2POp.irecv(fromNext, next, 2),
             P2POp.irecv(flags, prev, 3))) {
      h.get();
    }
    assertArrayEquals(new int[] {prev, prev + 1, prev + 2, prev + 3}, fromPrev);
    assertArrayEquals(new double[] {next * 0.5, -next}, fromNext, 0.0);
    assertArrayEquals(new boolean[] {prev % 2 == 0, true, false}, flags);
  }

  @Test
  @Order(3)
  void ringOfDirectBuffers() {
    // Zero-copy: the receive buffer is written in place, from its position.
    ByteBuffer out = ByteBuffer.allocateDirect(8 * 100).order(ByteOrder.nativeOrder());
    for (int i = 0; i < 100; i++) out.putLong(8 * i, 1000L * rank + i);
    ByteBuffer in = ByteBuffer.allocateDirect(8 + 8 * 100).order(ByteOrder.nativeOrder());
    in.position(8);
    try (Handle<P2POp[]> h = Hvd.batchIsendIrecv(P2POp.isend(out, DType.INT64, 100, next, 9),
             P2POp.irecv(in, DType.INT64, 100, prev, 9))) {
      h.get();
    }
    assertEquals(0L, in.getLong(0));
    for (int i = 0; i < 100; i++) assertEquals(1000L * prev + i, in.getLong(8 + 8 * i));
  }

  @Test
  @Order(4)
  void errors() {
    HvdException empty = assertThrows(HvdException.class, () -> Hvd.batchIsendIrecv());
    assertEquals(Status.INVALID_ARGUMENT, empty.status());
    HvdException nul = assertThrows(HvdException.class,
        () -> Hvd.batchIsendIrecv(P2POp.isend(new int[1], next, 0), null));
    assertEquals(Status.INVALID_ARGUMENT, nul.status());
    // Every op is checked before any is posted: a send to oneself in second
    // place refuses the batch and leaves nothing posted.
    HvdException self = assertThrows(HvdException.class,
        () -> Hvd.batchIsendIrecv(P2POp.isend(new int[1], next, 0), P2POp.isend(new int[1], rank, 0)));
    assertEquals(Status.INVALID_ARGUMENT, self.status(), self.getMessage());
    assertTrue(self.getMessage().contains("peer " + rank), self.getMessage());
    HvdException tag = assertThrows(HvdException.class,
        () -> Hvd.batchIsendIrecv(P2POp.irecv(new int[1], prev, -1)));
    assertEquals(Status.INVALID_ARGUMENT, tag.status(), tag.getMessage());
    // A receive of the wrong size fails the batch with MISMATCH once all its
    // messages are done; the next message of the stream is received
    // normally (into a direct buffer: a failed batch copies no arrays back).
    ByteBuffer after = ByteBuffer.allocateDirect(4).order(ByteOrder.nativeOrder());
    Handle<P2POp[]> h = Hvd.batchIsendIrecv(P2POp.isend(new long[] {1, 2, 3}, next, 4),
        P2POp.isend(new int[] {rank}, next, 4), P2POp.irecv(new long[2], prev, 4),
        P2POp.irecv(after, DType.INT32, 1, prev, 4));
    HvdException mismatch = assertThrows(HvdException.class, h::get);
    assertEquals(Status.MISMATCH, mismatch.status(), mismatch.getMessage());
    h.close();
    assertEquals(prev, after.getInt(0));
    Hvd.barrier();
  }

  @Test
  @Order(5)
  void resultIsTheSameOps() {
    int[] got = new int[1];
    P2POp recv = P2POp.irecv(got, prev, 11);
    try (Handle<P2POp[]> h = Hvd.batchIsendIrecv(P2POp.isend(new int[] {rank}, next, 11), recv)) {
      assertSame(recv, h.get()[1]);
    }
    assertEquals(prev, got[0]);
  }

  /** 1001 values that name the rank and the message. */
  static float[] block(int r, int message) {
    float[] b = new float[1001];
    for (int i = 0; i < b.length; i++) b[i] = 10000f * r + 1000f * message + i;
    return b;
  }
}
