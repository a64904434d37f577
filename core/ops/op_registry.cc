// Which executor runs which collective.
#include "core/ops/op.h"

namespace hvd {

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
