// Running a response whose tensors are on a CUDA device. The runtime calls
// ExecuteOnGpu instead of the executor directly; this:
//  1. picks the device of this rank's tensors and hvd's stream on it;
//  2. orders that stream after the caller's (an event recorded on
//     hvd_op_options.cuda_stream, or on the legacy default stream);
//  3. gives the executor the set's GPU communicator (NCCL, hierarchical
//     NCCL, or host staging over the CPU backend) and device memory ops
//     (scale kernels, batched fusion copies, a device fusion buffer);
//  4. waits for the stream before the handles complete.
// The per-set state (GpuSet) is created on the first CUDA response of the
// set: every member executes that response, so creating the NCCL
// communicator there is collective-safe.
#pragma once

#include <memory>
#include <vector>

#include "core/common/config.h"
#include "core/ops/op.h"
#include "core/runtime/process_set.h"

namespace hvd {

class GpuSet;

// How GPU data moves, from HVD_GPU_OPERATIONS: "nccl" (default when built)
// or "mpi"/"gloo" (staging through pinned host memory over the set's CPU
// operations backend; the value only selects staging, the backend is
// HVD_CPU_OPERATIONS's).
enum class GpuOperations { kNccl, kStaging };
Status ParseGpuOperations(const char* value, bool nccl_built, GpuOperations* out);

Status ExecuteOnGpu(ProcessSet& ps, const Config& config, const Response& r,
                    std::vector<TensorEntry*>& entries, ExecContext& ctx, Executor exec);

}  // namespace hvd
