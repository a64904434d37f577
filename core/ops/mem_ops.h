// The memory work of an executor (scaling, zeroing, packing the fusion
// buffer), done where the response's tensors live: plain loops on the host
// (host_mem_ops.h), kernels on hvd's CUDA stream for GPU responses (core/gpu).
// The executors are written once against this and the Comm interface.
#pragma once

#include <cstdint>
#include <vector>

#include "core/common/status.h"
#include "core/common/types.h"

namespace hvd {

class MemOps {
 public:
  struct Region {
    void* dst;
    const void* src;
    int64_t bytes;
  };
  virtual ~MemOps() = default;
  // dst[i] = src[i] * factor (dst == src allowed; factor 1: copy or nothing).
  virtual Status ScaleCopy(void* dst, const void* src, int64_t count, DataType dt,
                           double factor) = 0;
  virtual Status Zero(void* buf, int64_t count, DataType dt) = 0;
  // Copies every region (pack/unpack of the fusion buffer).
  virtual Status CopyRegions(const std::vector<Region>& regions) = 0;
  // The process set's fusion buffer on this memory, at least `bytes` long.
  virtual Status Fusion(int64_t bytes, void** out) = 0;
};

}  // namespace hvd
