package org.hvd;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Copies Java primitive arrays to and from direct buffers: the JVM may move
 * heap arrays, so hvd's background thread can only be given native memory.
 */
final class HostArray {
  private HostArray() {}

  static ByteBuffer allocate(long bytes) {
    if (bytes > Integer.MAX_VALUE) {
      throw new HvdException(Status.INVALID_ARGUMENT, "buffer of " + bytes + " bytes is too large");
    }
    return ByteBuffer.allocateDirect((int) bytes).order(ByteOrder.nativeOrder());
  }

  static DType dtypeOf(Object array) {
    if (array instanceof float[]) return DType.FLOAT32;
    if (array instanceof double[]) return DType.FLOAT64;
    if (array instanceof int[]) return DType.INT32;
    if (array instanceof long[]) return DType.INT64;
    if (array instanceof byte[]) return DType.INT8;
    if (array instanceof short[]) return DType.INT16;
    if (array instanceof boolean[]) return DType.BOOL;
    throw new HvdException(Status.INVALID_ARGUMENT, "not a supported primitive array");
  }

  static int length(Object array) {
    return java.lang.reflect.Array.getLength(array);
  }

  /** A new native-order direct buffer holding a copy of the array. */
  static ByteBuffer toDirect(Object array) {
    DType t = dtypeOf(array); // first: rejects null and non-arrays
    ByteBuffer b = allocate((long) length(array) * t.size());
    if (array instanceof float[]) b.asFloatBuffer().put((float[]) array);
    else if (array instanceof double[]) b.asDoubleBuffer().put((double[]) array);
    else if (array instanceof int[]) b.asIntBuffer().put((int[]) array);
    else if (array instanceof long[]) b.asLongBuffer().put((long[]) array);
    else if (array instanceof short[]) b.asShortBuffer().put((short[]) array);
    else if (array instanceof boolean[]) {
      boolean[] a = (boolean[]) array;
      for (int i = 0; i < a.length; i++) b.put(i, (byte) (a[i] ? 1 : 0));
    } else b.duplicate().put((byte[]) array);
    return b;
  }

  /** Copies the buffer (from position 0) into the whole array. */
  static void copyInto(ByteBuffer src, Object array) {
    ByteBuffer b = src.duplicate().order(ByteOrder.nativeOrder());
    b.rewind();
    if (array instanceof float[]) b.asFloatBuffer().get((float[]) array);
    else if (array instanceof double[]) b.asDoubleBuffer().get((double[]) array);
    else if (array instanceof int[]) b.asIntBuffer().get((int[]) array);
    else if (array instanceof long[]) b.asLongBuffer().get((long[]) array);
    else if (array instanceof short[]) b.asShortBuffer().get((short[]) array);
    else if (array instanceof boolean[]) {
      boolean[] a = (boolean[]) array;
      for (int i = 0; i < a.length; i++) a[i] = b.get(i) != 0;
    } else b.get((byte[]) array);
  }

  /** A new array of the same type as {@code like} with the buffer's elements. */
  @SuppressWarnings("unchecked")
  static <A> A fromDirect(ByteBuffer src, A like) {
    DType t = dtypeOf(like);
    int n = src.capacity() / t.size();
    Object out = java.lang.reflect.Array.newInstance(like.getClass().getComponentType(), n);
    copyInto(src, out);
    return (A) out;
  }
}
