// Turns exceptions thrown by Gloo (or by hvd's store adapter inside Gloo)
// into a Status, so no exception ever crosses the Comm interface.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/common/status.h"

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
// failed Gloo sanity checks and anything else -> kBackend. SIGPIPE is
// blocked in the calling thread meanwhile (sigpipe_block.h).
Status GlooGuard(const char* op, const std::string& where, const std::function<void()>& fn);

// Classification of a Gloo error message (exposed for tests).
Code ClassifyGlooMessage(const std::string& what, bool io_error);

// Where a peer of a Gloo communicator lives, learned at connect time, so an
// error that only carries a socket address ("Connection closed by peer
// [10.0.0.2]:4711") can name the rank that was lost.
struct PeerAddress {
  int rank = -1;        // the rank hvdrun and the user know (world rank)
  std::string host;     // HVD_HOSTNAME or gethostname() of that rank
  std::string address;  // Gloo's text for its listening address, "[ip]:port"
};

// The peer whose address occurs in `what` (not followed by another digit,
// so "[ip]:12" does not match "[ip]:123"), or null.
const PeerAddress* FindPeer(const std::string& what, const std::vector<PeerAddress>& peers);

// Rewrites a kPeerLost/kTimeout status from GlooGuard to name the peer
// found in its message: "connection to a peer lost" becomes "connection to
// rank 1 (host node2, [10.0.0.2]:4711) lost". Other statuses pass unchanged.
Status NamePeer(const Status& s, const std::vector<PeerAddress>& peers);

// Gloo's rendezvous waits for key "<prefix>/<N>", the address rank N of the
// group publishes: a kTimeout naming such keys gets the ranks that never
// published one appended ("rank 1 of 2 has not joined: ..."). Other
// statuses pass unchanged.
Status NameMissingRanks(const Status& s, const std::string& prefix, int size);

}  // namespace gloo_backend
}  // namespace hvd
