// An executor runs one (possibly fused) response on this rank. Each
// collective is one file in core/ops/ plus a line in op_registry.cc.
#pragma once

#include <vector>

#include "core/comm.h"
#include "core/fusion.h"
#include "core/message.h"
#include "core/tensor_entry.h"

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

struct ExecContext {
  Comm* comm = nullptr;  // data backend of the process set
  FusionBuffer* fusion = nullptr;
  Timeline* timeline = nullptr;  // may be null
  int32_t set_id = 0;
};

// entries[i] belongs to response.names[i]; nullptr where this rank has no
// entry (it has joined). The executor fills results but does not complete
// handles: the caller completes every entry with the returned status.
using Executor = Status (*)(ExecContext& ctx, const Response& response,
                            std::vector<TensorEntry*>& entries);

Executor FindExecutor(OpType type);

// Executors, one per file.
Status ExecuteAllreduce(ExecContext& ctx, const Response& r, std::vector<TensorEntry*>& entries);
Status ExecuteAllgather(ExecContext& ctx, const Response& r, std::vector<TensorEntry*>& entries);
Status ExecuteBroadcast(ExecContext& ctx, const Response& r, std::vector<TensorEntry*>& entries);
Status ExecuteAlltoall(ExecContext& ctx, const Response& r, std::vector<TensorEntry*>& entries);
Status ExecuteReducescatter(ExecContext& ctx, const Response& r,
                            std::vector<TensorEntry*>& entries);
Status ExecuteNothing(ExecContext& ctx, const Response& r, std::vector<TensorEntry*>& entries);

}  // namespace hvd
