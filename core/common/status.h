// Internal status: a code (same values as the public hvd_status) and a
// one-line message. The C layer turns it into hvd_status + hvd_last_error.
#pragma once

#include <memory>
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

// Every call on the submit path returns one, so the common case is cheap: an
// OK status is a code and a null pointer (no string to build, copy or
// free); the message lives on the heap only when there is one.
class Status {
 public:
  Status() = default;
  Status(Code code, std::string message)
      : code_(code),
        message_(message.empty() ? nullptr : std::make_unique<std::string>(std::move(message))) {}
  Status(const Status& o)
      : code_(o.code_),
        message_(o.message_ ? std::make_unique<std::string>(*o.message_) : nullptr) {}
  Status& operator=(const Status& o) {
    if (this != &o) *this = Status(o);
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

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
  const std::string& message() const { return message_ ? *message_ : Empty(); }

 private:
  static const std::string& Empty() {
    static const std::string empty;
    return empty;
  }

  Code code_ = Code::kOk;
  std::unique_ptr<std::string> message_;
};

// Propagate a non-OK status to the caller.
#define HVD_RETURN_IF_ERROR(expr)    \
  do {                               \
    ::hvd::Status _hvd_s = (expr);   \
    if (!_hvd_s.ok()) return _hvd_s; \
  } while (0)

}  // namespace hvd
