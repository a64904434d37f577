// An executor runs one (possibly fused) response on this rank. Each
// collective is one file in core/ops/ plus a line in op_registry.cc.
#pragma once

#include <vector>

#include "core/backends/comm.h"
#include "core/coordination/fusion.h"
#include "core/coordination/message.h"
#include "core/ops/host_mem_ops.h"
#include "core/ops/scoped_activity.h"
#include "core/tensor/tensor_entry.h"

namespace hvd {

class Timeline;

struct ExecContext {
  Comm* comm = nullptr;  // data backend of the process set (for GPU: NCCL or staging)
  FusionBuffer* fusion = nullptr;
  Timeline* timeline = nullptr;  // may be null
  int32_t set_id = 0;
  MemOps* mem = nullptr;  // null: host memory through `fusion`

  MemOps& ops() {
    if (mem) return *mem;
    host_.set_fusion(fusion);
    return host_;
  }

 private:
  HostMemOps host_;
};

// entries[i] belongs to response.names[i]; nullptr where this rank has no
// entry (it has joined). The executor fills results but does not complete
// handles: the caller completes every entry with the returned status.
using Executor = Status (*)(ExecContext& ctx, const Response& response,
                            std::vector<TensorEntry*>& entries);

// The executor of a response: by operation type, and for allreduce by op
// (Adasum has its own algorithm).
Executor FindExecutor(const Response& response);

// Executors, one per file.
Status ExecuteAllreduce(ExecContext& ctx, const Response& r, std::vector<TensorEntry*>& entries);
Status ExecuteAllgather(ExecContext& ctx, const Response& r, std::vector<TensorEntry*>& entries);
Status ExecuteBroadcast(ExecContext& ctx, const Response& r, std::vector<TensorEntry*>& entries);
Status ExecuteAlltoall(ExecContext& ctx, const Response& r, std::vector<TensorEntry*>& entries);
Status ExecuteReducescatter(ExecContext& ctx, const Response& r,
                            std::vector<TensorEntry*>& entries);
Status ExecuteAdasum(ExecContext& ctx, const Response& r, std::vector<TensorEntry*>& entries);
Status ExecuteNothing(ExecContext& ctx, const Response& r, std::vector<TensorEntry*>& entries);

}  // namespace hvd
