package org.hvd;

import org.hvd.jni.hvd_reduce_op;

/** How allreduce and reducescatter combine the ranks' values. */
public enum ReduceOp {
  SUM(hvd_reduce_op.HVD_OP_SUM),
  AVERAGE(hvd_reduce_op.HVD_OP_AVERAGE),
  MIN(hvd_reduce_op.HVD_OP_MIN),
  MAX(hvd_reduce_op.HVD_OP_MAX),
  PRODUCT(hvd_reduce_op.HVD_OP_PRODUCT),
  /** Adaptive summation (allreduce of float/double over any number of ranks). */
  ADASUM(hvd_reduce_op.HVD_OP_ADASUM);

  final int code;

  ReduceOp(int code) {
    this.code = code;
  }
}
