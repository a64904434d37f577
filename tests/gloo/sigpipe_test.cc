// A write to a dead peer inside a Gloo call must fail with EPIPE, not kill
// the process with SIGPIPE; the caller's signal mask is left as it was.
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

#include "core/backends/gloo/gloo_error.h"
#include "core/backends/gloo/sigpipe_block.h"

namespace hvd {
namespace {

bool SigpipeBlocked() {
  sigset_t now;
  pthread_sigmask(SIG_BLOCK, nullptr, &now);
  return sigismember(&now, SIGPIPE) == 1;
}

bool SigpipePending() {
  sigset_t pending;
  sigpending(&pending);
  return sigismember(&pending, SIGPIPE) == 1;
}

// Writes to a pipe whose read end is closed, as Gloo does to a dead peer.
int WriteToBrokenPipe() {
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  ::close(fds[0]);
  const char byte = 'x';
  errno = 0;
  const ssize_t n = ::write(fds[1], &byte, 1);
  const int err = n < 0 ? errno : 0;
  ::close(fds[1]);
  return err;
}

// A launcher may pass SIGPIPE ignored or blocked; start from the defaults,
// where an unguarded write to a dead peer kills the process.
void DefaultSigpipe() {
  signal(SIGPIPE, SIG_DFL);
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_UNBLOCK, &pipe, nullptr);
}

TEST(GlooSigpipe, WriteToDeadPeerInsideGlooGuardFailsWithEpipe) {
  DefaultSigpipe();
  int err = 0;
  Status s = gloo_backend::GlooGuard("write", "test", [&] { err = WriteToBrokenPipe(); });
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(err, EPIPE);
  EXPECT_FALSE(SigpipeBlocked()) << "the caller's mask must be restored";
  EXPECT_FALSE(SigpipePending()) << "the raised SIGPIPE must be consumed, not left to kill later";
}

TEST(GlooSigpipe, ThreadsStartedInsideInheritTheBlock) {
  DefaultSigpipe();
  bool blocked_in_thread = false;
  int err = 0;
  {
    gloo_backend::ScopedSigpipeBlock block;
    // Like Gloo's device loop, created during device construction.
    std::thread t([&] {
      blocked_in_thread = SigpipeBlocked();
      err = WriteToBrokenPipe();
    });
    t.join();
  }
  EXPECT_TRUE(blocked_in_thread);
  EXPECT_EQ(err, EPIPE);
  EXPECT_FALSE(SigpipeBlocked());
}

TEST(GlooSigpipe, AnApplicationsOwnBlockIsKept) {
  DefaultSigpipe();
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
  { gloo_backend::ScopedSigpipeBlock block; }
  EXPECT_TRUE(SigpipeBlocked());
  pthread_sigmask(SIG_UNBLOCK, &pipe, nullptr);
}

}  // namespace
}  // namespace hvd
