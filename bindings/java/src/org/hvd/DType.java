package org.hvd;

import org.hvd.jni.DLDataTypeCode;

/** Element types hvd supports, as DLPack (code, bits) pairs. */
public enum DType {
  UINT8(DLDataTypeCode.kDLUInt, 8),
  INT8(DLDataTypeCode.kDLInt, 8),
  INT32(DLDataTypeCode.kDLInt, 32),
  INT64(DLDataTypeCode.kDLInt, 64),
  FLOAT16(DLDataTypeCode.kDLFloat, 16),
  BFLOAT16(DLDataTypeCode.kDLBfloat, 16),
  FLOAT32(DLDataTypeCode.kDLFloat, 32),
  FLOAT64(DLDataTypeCode.kDLFloat, 64),
  INT16(DLDataTypeCode.kDLInt, 16),
  /** One byte per element, 0 false; reduced logically (SUM/MAX: or, MIN/PRODUCT: and). */
  BOOL(6 /* DLPack's kDLBool */, 8);

  final int code;
  final int bits;

  DType(int code, int bits) {
    this.code = code;
    this.bits = bits;
  }

  /** Bytes per element. */
  public int size() {
    return bits / 8;
  }
}
