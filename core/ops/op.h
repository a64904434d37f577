// An executor runs one (possibly fused) response on this rank. Each
// collective is one file in core/ops/ plus a line in op_registry.cc.
#pragma once

#include <vector>

#include "core/backends/comm.h"
#include "core/coordination/fusion.h"
#include "core/coordination/message.h"
#include "core/runtime/tensor_entry.h"

namespace hvd {

class Timeline;

// Records one timeline activity for every tensor of a response while in
// scope (nothing when the timeline is off).
class ScopedActivity {
 public:
  ScopedActivity(Timeline* timeline, const Response& r, const std::string& activity);
  ~ScopedActivity();
  ScopedActivity(const ScopedActivity&) = delete;
  ScopedActivity& operator=(const ScopedActivity&) = delete;

 private:
  Timeline* timeline_;
  const Response& response_;
};

// "MPI_ALLREDUCE", "GLOO_ALLGATHER", ...
std::string BackendActivity(const Comm& comm, OpType type);

// The memory work of an executor (scaling, zeroing, packing the fusion
// buffer), done where the response's tensors live: plain loops on the host,
// kernels on hvd's CUDA stream for GPU responses (core/backends/cuda). The
// executors are written once against this and the Comm interface.
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

class HostMemOps : public MemOps {
 public:
  explicit HostMemOps(FusionBuffer* fusion = nullptr) : fusion_(fusion) {}
  void set_fusion(FusionBuffer* f) { fusion_ = f; }
  Status ScaleCopy(void* dst, const void* src, int64_t count, DataType dt, double factor) override;
  Status Zero(void* buf, int64_t count, DataType dt) override;
  Status CopyRegions(const std::vector<Region>& regions) override;
  Status Fusion(int64_t bytes, void** out) override;

 private:
  FusionBuffer* fusion_;
};

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
