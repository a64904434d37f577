// Handles of submitted operations: polling, waiting, releasing, results.
#include <algorithm>
#include <string>

#include "capi/capi_internal.h"

namespace hvd {
namespace capi {
namespace {

// An operation's own status as it is; a failure of the call itself (unknown
// handle, timed out, not finished) as "fn: message".
hvd_status ReportOutcome(const char* fn, const Status& s, bool call_failed) {
  return call_failed ? ReportFrom(fn, s) : Report(s);
}

hvd_status Result(const char* fn, hvd_handle handle, int index, DLTensor* result) {
  if (!result) return Fail(Code::kInvalidArgument, std::string(fn) + ": result is NULL");
  api::ResultView r;
  bool call_failed = false;
  Status s = api::Result(handle, index, &r, &call_failed);
  if (!s.ok()) return ReportOutcome(fn, s, call_failed);
  result->data = r.data;
  result->device = ToDLDevice(r.device);
  result->ndim = static_cast<int32_t>(r.ndim);
  result->dtype = ToDLDataType(r.dtype);
  result->shape = r.shape;
  result->strides = nullptr;
  result->byte_offset = 0;
  return HVD_OK;
}

hvd_status ResultSplits(hvd_handle handle, int32_t* splits, int n, int* count) {
  api::Span<int32_t> rs;
  bool call_failed = false;
  Status s = api::ResultSplits(handle, &rs, &call_failed);
  if (!s.ok()) return ReportOutcome("hvd_result_splits", s, call_failed);
  if (count) *count = static_cast<int>(rs.size);
  if (splits) {
    if (n < static_cast<int>(rs.size)) {
      return Fail(Code::kInvalidArgument, "hvd_result_splits: room for " + std::to_string(n) +
                                              " splits, " + std::to_string(rs.size) + " needed");
    }
    std::copy(rs.begin(), rs.end(), splits);
  }
  return HVD_OK;
}

}  // namespace
}  // namespace capi
}  // namespace hvd

extern "C" {

hvd_status hvd_poll(hvd_handle handle) {
  return hvd::capi::Guard("hvd_poll", [handle] {
    bool call_failed = false;
    hvd::Status s = hvd::api::Poll(handle, &call_failed);
    return hvd::capi::ReportOutcome("hvd_poll", s, call_failed);
  });
}

hvd_status hvd_wait(hvd_handle handle, int64_t timeout_ms) {
  return hvd::capi::Guard("hvd_wait", [handle, timeout_ms] {
    bool call_failed = false;
    hvd::Status s = hvd::api::Wait(handle, timeout_ms, &call_failed);
    return s.ok() ? HVD_OK : hvd::capi::ReportOutcome("hvd_wait", s, call_failed);
  });
}

hvd_status hvd_release(hvd_handle handle) {
  return hvd::capi::Guard("hvd_release", [handle] {
    return hvd::capi::ReportFrom("hvd_release", hvd::api::Release(handle));
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
