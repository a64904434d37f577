// Element-wise reduction functions in the shape Gloo's new API expects:
// fn(out, in1, in2, n) computes out[i] = in1[i] (op) in2[i]; out may alias in1.
// The arithmetic itself is the core's (core/common/reduce.h), so Gloo and MPI give
// bit-identical results, 16-bit floats included.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "core/backends/comm.h"
#include "core/common/status.h"
#include "core/common/types.h"

namespace hvd {
namespace gloo_backend {

using ReduceFn = std::function<void(void*, const void*, const void*, size_t)>;

// The reduction for (dt, op); op must be kSum, kMin, kMax or kProduct.
Status GetReduceFunction(DataType dt, ReduceOp op, ReduceFn* out);

}  // namespace gloo_backend
}  // namespace hvd
