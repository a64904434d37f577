package org.hvd;

import java.util.ArrayList;
import java.util.List;
import org.hvd.jni.HvdNative;
import org.hvd.jni.hvd_status;

/**
 * A submitted operation. {@link #poll()} and {@link #await(long)} observe
 * completion; {@link #get()} waits and returns the result. Close it (try-with-
 * resources) to release the C handle.
 *
 * <p>hvd reads and writes the operation's native buffers until it completes,
 * so a handle keeps them reachable until then: a closed handle whose
 * operation is still running stays registered, and is released once it is
 * seen finished (on a later submission or at {@link Hvd#shutdown()}).
 */
public final class Handle<T> implements AutoCloseable {
  /** Turns the finished C operation into the Java result (copy-out, hvd_result). */
  interface Finisher<T> {
    T finish(long handle);
  }

  /** Handles whose buffers the background thread may still touch. */
  private static final List<Handle<?>> LIVE = new ArrayList<>();

  private final long id;
  private final Object[] keepAlive;
  private final Finisher<T> finisher;
  private boolean done;
  private boolean closed;
  private T result;
  private HvdException error;

  Handle(long id, Finisher<T> finisher, Object... keepAlive) {
    this.id = id;
    this.finisher = finisher;
    this.keepAlive = keepAlive;
    synchronized (LIVE) {
      LIVE.add(this);
    }
  }

  /** True once finished (the result is then ready); throws if it failed. */
  public synchronized boolean poll() {
    if (!done) {
      int st = HvdNative.hvd_poll(id);
      if (st == hvd_status.HVD_IN_PROGRESS) return false;
      complete(st);
    }
    return rethrow();
  }

  /**
   * Waits up to {@code timeoutMs} milliseconds (negative: no limit). True if
   * the operation finished, false if it is still running; throws if it failed.
   */
  public synchronized boolean await(long timeoutMs) {
    if (!done) {
      int st = HvdNative.hvd_wait(id, timeoutMs);
      // HVD_ERR_TIMEOUT means either "not yet" or "the operation timed out".
      if (st == hvd_status.HVD_ERR_TIMEOUT) {
        st = HvdNative.hvd_poll(id);
        if (st == hvd_status.HVD_IN_PROGRESS) return false;
      }
      complete(st);
    }
    return rethrow();
  }

  /** Waits without limit and returns the result. */
  public T get() {
    await(-1);
    return result;
  }

  /** Releases the C handle (idempotent). Does not cancel the operation. */
  @Override
  public synchronized void close() {
    if (closed) return;
    closed = true;
    if (!done && HvdNative.hvd_poll(id) == hvd_status.HVD_IN_PROGRESS) return; // reaped later
    release();
  }

  private void complete(int status) {
    done = true;
    if (status == hvd_status.HVD_OK) {
      try {
        result = finisher.finish(id);
      } catch (HvdException e) {
        error = e;
      }
    } else {
      error = new HvdException(status, HvdNative.hvd_last_error());
    }
  }

  private boolean rethrow() {
    if (error != null) throw error;
    return true;
  }

  private void release() {
    HvdNative.hvd_release(id); // an error here (e.g. after shutdown) leaves nothing to free
    synchronized (LIVE) {
      LIVE.remove(this);
    }
  }

  /** Releases closed handles whose operations have finished. */
  static void reap() {
    List<Handle<?>> closedOnes = new ArrayList<>();
    synchronized (LIVE) {
      for (Handle<?> h : LIVE) {
        if (h.closed) closedOnes.add(h);
      }
    }
    for (Handle<?> h : closedOnes) {
      synchronized (h) {
        if (HvdNative.hvd_poll(h.id) != hvd_status.HVD_IN_PROGRESS) h.release();
      }
    }
  }

  /** After hvd_shutdown nothing touches the buffers any more. */
  static void forgetAll() {
    synchronized (LIVE) {
      LIVE.clear();
    }
  }
}
