// Running a response whose tensors are on a CUDA device. The runtime calls
// ExecuteOnGpu instead of the executor directly; this:
//  1. picks the device of this rank's tensors and hvd's stream on it;
//  2. orders that stream after the caller's (an event recorded on
//     hvd_op_options.cuda_stream, or on the legacy default stream);
//  3. gives the executor the set's GPU communicator (NCCL, hierarchical
//     NCCL, or host staging over the CPU backend) and device memory ops
//     (scale kernels, batched fusion copies, a device fusion buffer);
//  4. waits for the stream before the handles complete.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/backends/comm.h"
#include "core/common/config.h"
#include "core/ops/op.h"

namespace hvd {

// The GPU state of one process set: per device, hvd's stream, a device
// fusion buffer and the GPU communicator. Empty until the set's first CUDA
// response: every member executes that response, so creating the NCCL
// communicator there is collective-safe. `controller` and `data` are the
// set's host communicators (negotiation, CPU operations); they must outlive
// the GpuSet. `config` gives HVD_GPU_OPERATIONS, HVD_GPU_TIMEOUT_SECONDS,
// HVD_HIERARCHICAL_ALLREDUCE and this rank's host.
class GpuSet;
std::shared_ptr<GpuSet> MakeGpuSet(int32_t set_id, Comm* controller, Comm* data,
                                   const Config& config);

Status ExecuteOnGpu(GpuSet& gpu, const Response& r, std::vector<TensorEntry*>& entries,
                    ExecContext& ctx, Executor exec);

}  // namespace hvd
