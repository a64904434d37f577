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
// integers are truncated toward zero (Horovod's rule). See ScaleIsDivision.
void ScaleBuffer(void* buf, int64_t count, DataType dt, double factor);

// dst[i] = src[i] * factor; dst and src may be the same.
void ScaleCopy(void* dst, const void* src, int64_t count, DataType dt, double factor);

// True when floats are scaled by `factor` as a division by *n: an average's
// 1/n with n not a power of two (3 ranks, 6, ...). The correctly rounded
// quotient is what torch's DDP (`div_`) computes and Horovod's own tests
// expect; x * fl(1/3) differs from x / 3 in the last bit for about a third
// of the values. For a power of two both are exact and the same, and the
// cheaper multiply is kept. Integers are always computed in double.
bool ScaleIsDivision(double factor, double* n);

// Fills with zeros (the contribution of a joined rank).
void ZeroBuffer(void* buf, int64_t count, DataType dt);

}  // namespace hvd
