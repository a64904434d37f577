#include "core/ops/op.h"

#include "core/timeline.h"

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

std::string BackendActivity(const Comm& comm, OpType type) {
  return std::string(comm.backend_name()) + "_" + OpTypeUpperName(type);
}

Status ExecuteNothing(ExecContext&, const Response&, std::vector<TensorEntry*>&) {
  // Barrier and join: agreeing in negotiation already synchronised the ranks.
  return Status::OK();
}

Executor FindExecutor(OpType type) {
  switch (type) {
    case OpType::kAllreduce:
      return ExecuteAllreduce;
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
