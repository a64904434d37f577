// Element-wise reduction and scaling kernels on host memory, for every
// DataType. Backends use them where the transport has no native op (16-bit
// floats, Gloo), the executors for pre/post scaling and fused copies.
#pragma once

#include <cstdint>

#include "core/common/types.h"

namespace hvd {

// dst[i] = dst[i] (op) src[i] for i < count. op: kSum, kMin, kMax, kProduct.
void ReduceInto(void* dst, const void* src, int64_t count, DataType dt, ReduceOp op);

// buf[i] *= factor, computed in double (float for 16-bit and 32-bit floats);
// integers are truncated toward zero (Horovod's rule).
void ScaleBuffer(void* buf, int64_t count, DataType dt, double factor);

// dst[i] = src[i] * factor; dst and src may be the same.
void ScaleCopy(void* dst, const void* src, int64_t count, DataType dt, double factor);

// Fills with zeros (the contribution of a joined rank).
void ZeroBuffer(void* buf, int64_t count, DataType dt);

}  // namespace hvd
