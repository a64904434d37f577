// Gloo writes to its TCP sockets with plain write(): when a peer dies, the
// kernel raises SIGPIPE in the writing thread, and its default action kills
// the whole process before hvd can report HVD_ERR_PEER_LOST. hvd blocks
// SIGPIPE in the calling thread around every Gloo call (the write then
// fails with EPIPE, which Gloo reports as an I/O error) instead of changing
// the disposition the application chose for its own pipes.
#pragma once

#include <signal.h>

namespace hvd {
namespace gloo_backend {

// Blocks SIGPIPE in this thread for the scope; threads started inside it
// (Gloo's device loop) inherit the mask for their life. On exit, discards a
// SIGPIPE raised meanwhile, then restores the mask.
class ScopedSigpipeBlock {
 public:
  ScopedSigpipeBlock();
  ~ScopedSigpipeBlock();
  ScopedSigpipeBlock(const ScopedSigpipeBlock&) = delete;
  ScopedSigpipeBlock& operator=(const ScopedSigpipeBlock&) = delete;

 private:
  bool was_blocked_ = true;  // nothing to undo (nested scope, or failure)
};

}  // namespace gloo_backend
}  // namespace hvd
