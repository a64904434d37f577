// Handles of submitted operations: polling, waiting, releasing, results.
#include <algorithm>
#include <string>

#include "capi/capi_internal.h"
#include "core/runtime/handle_table.h"

namespace hvd {
namespace capi {
namespace {

// The state of a finished operation: errors for unknown handles ("fn: ..."),
// for operations still running, and the operation's own error.
Status Finished(const char* fn, hvd_handle handle, std::shared_ptr<HandleState>* out) {
  Status err;
  *out = FindHandle(fn, handle, &err);
  if (!*out) return err;
  Status s = (*out)->Poll();
  if (s.code() == Code::kInProgress) {
    return Status::Invalid(std::string(fn) + ": the operation has not finished");
  }
  return s;
}

hvd_status Wait(hvd_handle handle, int64_t timeout_ms) {
  if (HandleTable::Global().FinishedOk(handle)) return HVD_OK;
  Status err;
  auto state = FindHandle("hvd_wait", handle, &err);
  if (!state) return Report(err);
  bool timed_out = false;
  Status s = state->Wait(timeout_ms, &timed_out);
  return timed_out ? ReportFrom("hvd_wait", s) : Report(s);
}

hvd_status Result(const char* fn, hvd_handle handle, int index, DLTensor* result) {
  if (!result) return Fail(Code::kInvalidArgument, std::string(fn) + ": result is NULL");
  std::shared_ptr<HandleState> state;
  Status s = Finished(fn, handle, &state);
  if (!s.ok()) return Report(s);
  if (index < 0 || index >= state->num_results()) {
    return Fail(Code::kInvalidArgument,
                std::string(fn) + ": index " + std::to_string(index) + " is outside 0.." +
                    std::to_string(state->num_results() - 1) + " (this handle has " +
                    std::to_string(state->num_results()) + " result(s))");
  }
  OpResult& r = state->result(index);
  if (!r.data && r.shape.empty()) {
    return Fail(Code::kInvalidArgument,
                std::string(fn) +
                    ": this operation has no hvd-owned result (allreduce and broadcast "
                    "write to the caller's tensor)");
  }
  result->data = r.data;
  result->device = ToDLDevice(r.device);
  result->ndim = static_cast<int32_t>(r.shape.size());
  result->dtype = ToDLDataType(r.dtype);
  result->shape = r.shape.data();
  result->strides = nullptr;
  result->byte_offset = 0;
  return Report(Status::OK());
}

hvd_status ResultSplits(hvd_handle handle, int32_t* splits, int n, int* count) {
  std::shared_ptr<HandleState> state;
  Status s = Finished("hvd_result_splits", handle, &state);
  if (!s.ok()) return Report(s);
  const auto& rs = state->result().recv_splits;
  if (rs.empty()) return Fail(Code::kInvalidArgument, "hvd_result_splits: not an alltoall handle");
  if (count) *count = static_cast<int>(rs.size());
  if (splits) {
    if (n < static_cast<int>(rs.size())) {
      return Fail(Code::kInvalidArgument, "hvd_result_splits: room for " + std::to_string(n) +
                                              " splits, " + std::to_string(rs.size()) + " needed");
    }
    std::copy(rs.begin(), rs.end(), splits);
  }
  return Report(Status::OK());
}

}  // namespace
}  // namespace capi
}  // namespace hvd

extern "C" {

hvd_status hvd_poll(hvd_handle handle) {
  return hvd::capi::Guard("hvd_poll", [handle] {
    hvd::Status err;
    auto state = hvd::capi::FindHandle("hvd_poll", handle, &err);
    return state ? hvd::capi::Report(state->Poll()) : hvd::capi::Report(err);
  });
}

hvd_status hvd_wait(hvd_handle handle, int64_t timeout_ms) {
  return hvd::capi::Guard("hvd_wait", [&] { return hvd::capi::Wait(handle, timeout_ms); });
}

hvd_status hvd_release(hvd_handle handle) {
  return hvd::capi::Guard("hvd_release", [handle] {
    hvd::Status s = hvd::HandleTable::Global().Release(handle);
    return hvd::capi::ReportFrom("hvd_release", s);
  });
}

hvd_status hvd_result(hvd_handle handle, DLTensor* result) {
  return hvd::capi::Guard("hvd_result",
                          [&] { return hvd::capi::Result("hvd_result", handle, 0, result); });
}

hvd_status hvd_result_at(hvd_handle handle, int index, DLTensor* result) {
  return hvd::capi::Guard(
      "hvd_result_at", [&] { return hvd::capi::Result("hvd_result_at", handle, index, result); });
}

hvd_status hvd_result_splits(hvd_handle handle, int32_t* splits, int n, int* count) {
  return hvd::capi::Guard("hvd_result_splits",
                          [&] { return hvd::capi::ResultSplits(handle, splits, n, count); });
}

}  // extern "C"
