// Internal status: a code (same values as the public hvd_status) and a
// one-line message. The C layer turns it into hvd_status + hvd_last_error.
#pragma once

#include <string>
#include <utility>

namespace hvd {

enum class Code : int {
  kOk = 0,
  kInProgress = 1,
  kNotInitialized = -1,
  kInvalidArgument = -2,
  kMismatch = -3,
  kShutDown = -4,
  kBackend = -5,
  kPeerLost = -6,
  kTimeout = -7,
  kUnsupported = -8,
  kInternal = -9,
  kAlreadyInitialized = -10,
};

class Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status OK() { return Status(); }
  static Status InProgress() { return Status(Code::kInProgress, ""); }
  static Status Invalid(std::string m) { return Status(Code::kInvalidArgument, std::move(m)); }
  static Status ShutDown(std::string m) { return Status(Code::kShutDown, std::move(m)); }
  static Status Backend(std::string m) { return Status(Code::kBackend, std::move(m)); }
  static Status PeerLost(std::string m) { return Status(Code::kPeerLost, std::move(m)); }
  static Status Timeout(std::string m) { return Status(Code::kTimeout, std::move(m)); }
  static Status Unsupported(std::string m) { return Status(Code::kUnsupported, std::move(m)); }
  static Status Internal(std::string m) { return Status(Code::kInternal, std::move(m)); }
  static Status NotInitialized() { return Status(Code::kNotInitialized, "hvd is not initialized"); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

// Propagate a non-OK status to the caller.
#define HVD_RETURN_IF_ERROR(expr)    \
  do {                               \
    ::hvd::Status _hvd_s = (expr);   \
    if (!_hvd_s.ok()) return _hvd_s; \
  } while (0)

}  // namespace hvd
