package org.hvd;

import java.nio.ByteBuffer;

/**
 * One message of {@link Hvd#batchIsendIrecv(P2POp...)}: a send of an array
 * (or direct buffer) to a rank, or a receive into one from a rank, on a tag.
 * An array to send is copied when the batch is posted; an array to receive
 * into is written when the batch's handle is first seen finished.
 */
public final class P2POp {
  final boolean recv;
  final Object array; // a primitive array, or null for the buffer form
  final ByteBuffer buffer; // direct, or null for the array form
  final DType dtype;
  final long elements;
  final int peer;
  final int tag;

  private P2POp(boolean recv, Object array, ByteBuffer buffer, DType dtype, long elements,
      int peer, int tag) {
    this.recv = recv;
    this.array = array;
    this.buffer = buffer;
    this.dtype = dtype;
    this.elements = elements;
    this.peer = peer;
    this.tag = tag;
  }

  private static P2POp ofArray(boolean recv, Object x, int peer, int tag) {
    DType t = HostArray.dtypeOf(x); // rejects null
    return new P2POp(recv, x, null, t, HostArray.length(x), peer, tag);
  }

  /** Sends {@code x} to rank {@code peer} on {@code tag}. */
  public static P2POp isend(float[] x, int peer, int tag) { return ofArray(false, x, peer, tag); }
  public static P2POp isend(double[] x, int peer, int tag) { return ofArray(false, x, peer, tag); }
  public static P2POp isend(int[] x, int peer, int tag) { return ofArray(false, x, peer, tag); }
  public static P2POp isend(long[] x, int peer, int tag) { return ofArray(false, x, peer, tag); }
  public static P2POp isend(byte[] x, int peer, int tag) { return ofArray(false, x, peer, tag); }
  public static P2POp isend(short[] x, int peer, int tag) { return ofArray(false, x, peer, tag); }
  public static P2POp isend(boolean[] x, int peer, int tag) { return ofArray(false, x, peer, tag); }

  /** Receives the next message from rank {@code peer} on {@code tag} into {@code x}. */
  public static P2POp irecv(float[] x, int peer, int tag) { return ofArray(true, x, peer, tag); }
  public static P2POp irecv(double[] x, int peer, int tag) { return ofArray(true, x, peer, tag); }
  public static P2POp irecv(int[] x, int peer, int tag) { return ofArray(true, x, peer, tag); }
  public static P2POp irecv(long[] x, int peer, int tag) { return ofArray(true, x, peer, tag); }
  public static P2POp irecv(byte[] x, int peer, int tag) { return ofArray(true, x, peer, tag); }
  public static P2POp irecv(short[] x, int peer, int tag) { return ofArray(true, x, peer, tag); }
  public static P2POp irecv(boolean[] x, int peer, int tag) { return ofArray(true, x, peer, tag); }

  /**
   * Zero-copy forms: {@code elements} elements of {@code dtype} from the
   * direct buffer's position (the buffer must stay untouched until the
   * batch has finished).
   */
  public static P2POp isend(ByteBuffer data, DType dtype, long elements, int peer, int tag) {
    return ofBuffer(false, data, dtype, elements, peer, tag);
  }

  public static P2POp irecv(ByteBuffer data, DType dtype, long elements, int peer, int tag) {
    return ofBuffer(true, data, dtype, elements, peer, tag);
  }

  private static P2POp ofBuffer(boolean recv, ByteBuffer data, DType dtype, long elements,
      int peer, int tag) {
    if (dtype == null) throw Ops.invalid("dtype is null");
    if (data == null || !data.isDirect()) {
      throw Ops.invalid("buffers must be direct (ByteBuffer.allocateDirect)");
    }
    if (recv && data.isReadOnly()) throw Ops.invalid("receive buffer is read-only");
    if (elements < 0 || elements * dtype.size() > data.remaining()) {
      throw Ops.invalid(elements + " " + dtype + " elements do not fit the buffer's "
          + data.remaining() + " bytes");
    }
    return new P2POp(recv, null, data.slice(), dtype, elements, peer, tag);
  }

  /** True for a receive. */
  public boolean isRecv() {
    return recv;
  }

  public int peer() {
    return peer;
  }

  public int tag() {
    return tag;
  }

  /** The native memory hvd works on: the buffer, or a fresh copy of the array. */
  ByteBuffer stage() {
    if (buffer != null) return buffer;
    return recv ? HostArray.allocate(elements * dtype.size()) : HostArray.toDirect(array);
  }

  /** After completion: a received array gets the staged bytes. */
  void unstage(ByteBuffer staged) {
    if (recv && array != null) HostArray.copyInto(staged, array);
  }

  @Override
  public String toString() {
    return "P2POp(" + (recv ? "irecv from " : "isend to ") + peer + ", tag " + tag + ", "
        + elements + " " + dtype + ")";
  }
}
