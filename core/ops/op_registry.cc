// Which executor runs which collective.
#include "core/ops/op.h"

namespace hvd {

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
