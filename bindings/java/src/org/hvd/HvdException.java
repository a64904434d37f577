package org.hvd;

import org.hvd.jni.HvdNative;

/**
 * An error reported by hvd: the status code and the one-line message of the
 * C API ({@code hvd_last_error}), or a Java-side argument check.
 */
public class HvdException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final int code;

  static {
    NativeLoader.load(); // the message text comes from the C library
  }

  public HvdException(int code, String message) {
    super(HvdNative.hvd_status_string(code) + (message.isEmpty() ? "" : ": " + message));
    this.code = code;
  }

  public HvdException(Status status, String message) {
    this(status.code, message);
  }

  /** The raw {@code hvd_status} value (negative). */
  public int code() {
    return code;
  }

  public Status status() {
    return Status.of(code);
  }

  /**
   * Throws for an error status, with the calling thread's last C error. Must
   * run right after the failing call, before any other hvd call on the thread.
   */
  static int check(int status) {
    if (status < 0) throw new HvdException(status, HvdNative.hvd_last_error());
    return status;
  }
}
