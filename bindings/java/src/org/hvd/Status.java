package org.hvd;

import org.hvd.jni.hvd_status;

/** The C API's {@code hvd_status} codes; values come from the generated bindings. */
public enum Status {
  OK(hvd_status.HVD_OK),
  IN_PROGRESS(hvd_status.HVD_IN_PROGRESS),
  NOT_INITIALIZED(hvd_status.HVD_ERR_NOT_INITIALIZED),
  INVALID_ARGUMENT(hvd_status.HVD_ERR_INVALID_ARGUMENT),
  MISMATCH(hvd_status.HVD_ERR_MISMATCH),
  SHUT_DOWN(hvd_status.HVD_ERR_SHUT_DOWN),
  BACKEND(hvd_status.HVD_ERR_BACKEND),
  PEER_LOST(hvd_status.HVD_ERR_PEER_LOST),
  TIMEOUT(hvd_status.HVD_ERR_TIMEOUT),
  UNSUPPORTED(hvd_status.HVD_ERR_UNSUPPORTED),
  INTERNAL(hvd_status.HVD_ERR_INTERNAL),
  ALREADY_INITIALIZED(hvd_status.HVD_ERR_ALREADY_INITIALIZED);

  /** The C value. */
  public final int code;

  Status(int code) {
    this.code = code;
  }

  /** The constant for a C value; INTERNAL for a code this binding does not know. */
  public static Status of(int code) {
    for (Status s : values()) {
      if (s.code == code) return s;
    }
    return INTERNAL;
  }
}
