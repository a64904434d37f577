// Turns exceptions thrown by Gloo (or by hvd's store adapter inside Gloo)
// into a Status, so no exception ever crosses the Comm interface.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>

#include "core/status.h"

namespace hvd {
namespace gloo_backend {

// Thrown by hvd code that runs inside Gloo callbacks (the KV store adapter)
// to carry an hvd Status through Gloo's stack unchanged.
class StatusError : public std::runtime_error {
 public:
  explicit StatusError(Status s) : std::runtime_error(s.message()), status_(std::move(s)) {}
  const Status& status() const { return status_; }

 private:
  Status status_;
};

// Runs `fn`; any exception becomes a Status whose message reads
// "Gloo <op> (<where>): <what happened>: <gloo's message>".
// I/O errors and closed connections -> kPeerLost, timeouts -> kTimeout,
// failed Gloo sanity checks and anything else -> kBackend.
Status GlooGuard(const char* op, const std::string& where, const std::function<void()>& fn);

// Classification of a Gloo error message (exposed for tests).
Code ClassifyGlooMessage(const std::string& what, bool io_error);

}  // namespace gloo_backend
}  // namespace hvd
