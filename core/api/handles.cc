// Handles of submitted operations: polling, waiting, releasing, results.
#include <string>

#include "core/api/api.h"
#include "core/runtime/handle_table.h"

namespace hvd {
namespace api {
namespace {

// The state behind `handle`, or null (*error says why: a call failure).
std::shared_ptr<HandleState> Find(int64_t handle, Status* error, bool* call_failed) {
  auto state = HandleTable::Global().Find(handle, error);
  *call_failed = !state;
  return state;
}

// The state of a finished operation: call failures for unknown handles and
// operations still running, else the operation's own status.
Status Finished(int64_t handle, std::shared_ptr<HandleState>* out, bool* call_failed) {
  Status err;
  *out = Find(handle, &err, call_failed);
  if (!*out) return err;
  Status s = (*out)->Poll();
  if (s.code() == Code::kInProgress) {
    *call_failed = true;
    return Status::Invalid("the operation has not finished");
  }
  return s;
}

}  // namespace

Status Poll(int64_t handle, bool* call_failed) {
  Status err;
  auto state = Find(handle, &err, call_failed);
  return state ? state->Poll() : err;
}

// Inline-cheap for the common case after a batch: a finished handle is
// answered without taking a reference to its state.
Status Wait(int64_t handle, int64_t timeout_ms, bool* call_failed) {
  *call_failed = false;
  if (HandleTable::Global().FinishedOk(handle)) return Status::OK();
  Status err;
  auto state = Find(handle, &err, call_failed);
  if (!state) return err;
  return state->Wait(timeout_ms, call_failed);
}

Status Release(int64_t handle) {
  return HandleTable::Global().Release(handle);
}

Status Result(int64_t handle, int index, ResultView* out, bool* call_failed) {
  std::shared_ptr<HandleState> state;
  HVD_RETURN_IF_ERROR(Finished(handle, &state, call_failed));
  *call_failed = true;
  if (index < 0 || index >= state->num_results()) {
    return Status::Invalid("index " + std::to_string(index) + " is outside 0.." +
                           std::to_string(state->num_results() - 1) + " (this handle has " +
                           std::to_string(state->num_results()) + " result(s))");
  }
  OpResult& r = state->result(index);
  if (!r.data && r.shape.empty()) {
    return Status::Invalid(
        "this operation has no hvd-owned result (allreduce and broadcast "
        "write to the caller's tensor)");
  }
  *call_failed = false;
  out->data = r.data;
  out->shape = r.shape.data();
  out->ndim = static_cast<int>(r.shape.size());
  out->dtype = r.dtype;
  out->device = r.device;
  return Status::OK();
}

Status ResultSplits(int64_t handle, Span<int32_t>* out, bool* call_failed) {
  std::shared_ptr<HandleState> state;
  HVD_RETURN_IF_ERROR(Finished(handle, &state, call_failed));
  const auto& rs = state->result().recv_splits;
  if (rs.empty()) {
    *call_failed = true;
    return Status::Invalid("not an alltoall handle");
  }
  out->data = rs.data();
  out->size = rs.size();
  return Status::OK();
}

}  // namespace api
}  // namespace hvd
