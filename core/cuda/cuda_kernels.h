// The few device kernels hvd needs (kernels.cu): scaling for pre/post-scale
// and Average, and batched copies into/out of the fusion buffer. All are
// queued on `stream` and return launch errors only; execution errors show
// up when the stream is waited on.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "core/common/status.h"
#include "core/common/types.h"

namespace hvd {

// dst[i] = src[i] * factor for i < count, dst == src allowed. Arithmetic as
// on the host (core/common/reduce.h): float for 16/32-bit floats, double for
// float64, integers rounded to nearest. factor 1 is a plain copy (or nothing).
Status ScaleCopyAsync(void* dst, const void* src, int64_t count, DataType dt, double factor,
                      cudaStream_t stream);

struct CopyRegion {
  void* dst;
  const void* src;
  int64_t bytes;
};

// Every region copied device-to-device in one launch per kMaxRegionsPerLaunch
// regions (instead of one cudaMemcpyAsync per tensor, whose launch overhead
// dominates for the many small tensors fusion packs together).
Status BatchedCopyAsync(const CopyRegion* regions, size_t n, cudaStream_t stream);
constexpr size_t kMaxRegionsPerLaunch = 64;

}  // namespace hvd
