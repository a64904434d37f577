// Point-to-point messages between two ranks of a Comm (hvd_send_async,
// hvd_recv_async): one posted send or receive, completed by polling. The
// runtime's p2p engine posts them from the caller's thread (so that messages
// on one (peer, tag) keep the order of the calls) and polls them from its own
// thread, never from a set's background thread.
#pragma once

#include <cstdint>

#include "core/common/status.h"

namespace hvd {

class P2PRequest {
 public:
  virtual ~P2PRequest() = default;
  // Non-blocking: true once the message has gone (send) or arrived in full
  // (receive), with *status its outcome. A receive whose buffer does not
  // have the size of the message that arrived fails with kMismatch.
  virtual bool Test(Status* status) = 0;
  // The operation deadline passed or hvd shuts down: stop waiting. Test
  // answers true afterwards. The Comm's point-to-point path may be unusable
  // from then on (a receive's buffer can no longer be reclaimed from Gloo).
  virtual void Abort() = 0;
};

// Tags of point-to-point messages are 0 .. kMaxP2PTag; the process set id
// (0 .. kMaxP2PSet) travels with it, so the same tag in two sets is two
// separate streams.
constexpr int kMaxP2PTag = (1 << 20) - 1;
constexpr int kMaxP2PSet = (1 << 10) - 1;
inline int64_t P2PStreamTag(int32_t set, int tag) {
  return (static_cast<int64_t>(set) << 20) | tag;
}

}  // namespace hvd
