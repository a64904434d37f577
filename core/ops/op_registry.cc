#include <cstring>

#include "core/common/reduce.h"
#include "core/observability/timeline.h"
#include "core/ops/op.h"

namespace hvd {

ScopedActivity::ScopedActivity(Timeline* timeline, const Response& r, const std::string& activity)
    : timeline_(timeline && timeline->active() ? timeline : nullptr), response_(r) {
  if (!timeline_) return;
  for (const auto& name : response_.names) timeline_->ActivityStart(name, activity);
}

ScopedActivity::~ScopedActivity() {
  if (!timeline_) return;
  for (const auto& name : response_.names) timeline_->ActivityEnd(name);
}

Status HostMemOps::ScaleCopy(void* dst, const void* src, int64_t count, DataType dt,
                             double factor) {
  ::hvd::ScaleCopy(dst, src, count, dt, factor);
  return Status::OK();
}

Status HostMemOps::Zero(void* buf, int64_t count, DataType dt) {
  ZeroBuffer(buf, count, dt);
  return Status::OK();
}

Status HostMemOps::CopyRegions(const std::vector<Region>& regions) {
  for (const auto& r : regions) {
    if (r.bytes > 0) std::memcpy(r.dst, r.src, static_cast<size_t>(r.bytes));
  }
  return Status::OK();
}

Status HostMemOps::Fusion(int64_t bytes, void** out) {
  if (!fusion_) return Status::Internal("no fusion buffer in this execution context");
  *out = fusion_->Get(bytes);
  return Status::OK();
}

std::string BackendActivity(const Comm& comm, OpType type) {
  return std::string(comm.backend_name()) + "_" + OpTypeUpperName(type);
}

Status ExecuteNothing(ExecContext&, const Response&, std::vector<TensorEntry*>&) {
  // Barrier and join: agreeing in negotiation already synchronised the ranks.
  return Status::OK();
}

Executor FindExecutor(const Response& response) {
  switch (response.type) {
    case OpType::kAllreduce:
      return response.reduce_op == ReduceOp::kAdasum ? ExecuteAdasum : ExecuteAllreduce;
    case OpType::kAllgather:
      return ExecuteAllgather;
    case OpType::kBroadcast:
      return ExecuteBroadcast;
    case OpType::kAlltoall:
      return ExecuteAlltoall;
    case OpType::kReducescatter:
      return ExecuteReducescatter;
    case OpType::kBarrier:
    case OpType::kJoin:
      return ExecuteNothing;
    default:
      return nullptr;
  }
}

}  // namespace hvd
