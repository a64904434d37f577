// Status codes, the thread-local last error and the library's version.
#include <string>

#include "capi/capi_internal.h"

namespace hvd {
namespace capi {

static_assert(static_cast<int>(Code::kOk) == HVD_OK, "status codes must match");
static_assert(static_cast<int>(Code::kInProgress) == HVD_IN_PROGRESS, "status codes must match");
static_assert(static_cast<int>(Code::kNotInitialized) == HVD_ERR_NOT_INITIALIZED, "");
static_assert(static_cast<int>(Code::kInvalidArgument) == HVD_ERR_INVALID_ARGUMENT, "");
static_assert(static_cast<int>(Code::kMismatch) == HVD_ERR_MISMATCH, "");
static_assert(static_cast<int>(Code::kShutDown) == HVD_ERR_SHUT_DOWN, "");
static_assert(static_cast<int>(Code::kBackend) == HVD_ERR_BACKEND, "");
static_assert(static_cast<int>(Code::kPeerLost) == HVD_ERR_PEER_LOST, "");
static_assert(static_cast<int>(Code::kTimeout) == HVD_ERR_TIMEOUT, "");
static_assert(static_cast<int>(Code::kUnsupported) == HVD_ERR_UNSUPPORTED, "");
static_assert(static_cast<int>(Code::kInternal) == HVD_ERR_INTERNAL, "");
static_assert(static_cast<int>(Code::kAlreadyInitialized) == HVD_ERR_ALREADY_INITIALIZED, "");

namespace {

thread_local std::string t_last_error;

}  // namespace

hvd_status Report(const Status& s) {
  if (!s.ok() && s.code() != Code::kInProgress) t_last_error = s.message();
  return static_cast<hvd_status>(s.code());
}

hvd_status Fail(Code code, const std::string& message) {
  return Report(Status(code, message));
}

Status Prefixed(const char* fn, const Status& s) {
  return Status(s.code(), std::string(fn) + ": " + s.message());
}

hvd_status ReportFrom(const char* fn, const Status& s) {
  return s.ok() ? static_cast<hvd_status>(Code::kOk) : Report(Prefixed(fn, s));
}

Status CheckInit(const char* fn) {
  if (api::Initialized()) return Status::OK();
  return Prefixed(fn, api::CheckInitialized());
}

void ReportException(const char* fn, const char* what) noexcept {
  try {
    t_last_error = std::string(fn) + ": " + what;
  } catch (...) {
    t_last_error.clear();  // no memory even for the message
  }
}

}  // namespace capi
}  // namespace hvd

extern "C" {

const char* hvd_status_string(hvd_status s) {
  return hvd::capi::Guarded("hvd_status_string", "unknown hvd_status", [s]() -> const char* {
    switch (s) {
      case HVD_OK:
        return "HVD_OK: success";
      case HVD_IN_PROGRESS:
        return "HVD_IN_PROGRESS: the operation is still running";
      case HVD_ERR_NOT_INITIALIZED:
        return "HVD_ERR_NOT_INITIALIZED: hvd is not initialized";
      case HVD_ERR_INVALID_ARGUMENT:
        return "HVD_ERR_INVALID_ARGUMENT: invalid argument";
      case HVD_ERR_MISMATCH:
        return "HVD_ERR_MISMATCH: ranks disagree about a tensor";
      case HVD_ERR_SHUT_DOWN:
        return "HVD_ERR_SHUT_DOWN: hvd has been shut down";
      case HVD_ERR_BACKEND:
        return "HVD_ERR_BACKEND: the communication backend failed";
      case HVD_ERR_PEER_LOST:
        return "HVD_ERR_PEER_LOST: a peer rank was lost";
      case HVD_ERR_TIMEOUT:
        return "HVD_ERR_TIMEOUT: timed out";
      case HVD_ERR_UNSUPPORTED:
        return "HVD_ERR_UNSUPPORTED: not supported by this build or backend";
      case HVD_ERR_INTERNAL:
        return "HVD_ERR_INTERNAL: internal error in hvd";
      case HVD_ERR_ALREADY_INITIALIZED:
        return "HVD_ERR_ALREADY_INITIALIZED: hvd is already initialized";
    }
    return "unknown hvd_status";
  });
}

const char* hvd_last_error(void) {
  return hvd::capi::Guarded("hvd_last_error", "", [] { return hvd::capi::t_last_error.c_str(); });
}

const char* hvd_version(void) {
  return hvd::capi::Guarded("hvd_version", HVD_VERSION_STRING, [] { return HVD_VERSION_STRING; });
}

}  // extern "C"
