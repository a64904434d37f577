#include "core/backends/gloo/sigpipe_block.h"

#include <pthread.h>
#include <time.h>

namespace hvd {
namespace gloo_backend {

namespace {

sigset_t OnlySigpipe() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  return set;
}

}  // namespace

ScopedSigpipeBlock::ScopedSigpipeBlock() {
  const sigset_t pipe = OnlySigpipe();
  sigset_t old;
  if (pthread_sigmask(SIG_BLOCK, &pipe, &old) != 0) return;
  was_blocked_ = sigismember(&old, SIGPIPE) == 1;
}

ScopedSigpipeBlock::~ScopedSigpipeBlock() {
  if (was_blocked_) return;  // an outer scope (or the application) owns it
  const sigset_t pipe = OnlySigpipe();
  sigset_t pending;
  if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1) {
    // Ours (a write to a dead peer): take it before unblocking delivers it.
    const timespec zero{0, 0};
    sigtimedwait(&pipe, nullptr, &zero);
  }
  pthread_sigmask(SIG_UNBLOCK, &pipe, nullptr);
}

}  // namespace gloo_backend
}  // namespace hvd
