#include "tools/hvdrun/child_io.h"

#include <pthread.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace hvd {
namespace run {

namespace {

sigset_t JobSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&set, sig);
  return set;
}

}  // namespace

void BlockJobSignals() {
  sigset_t set = JobSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

rendezvous::UniqueFd OpenJobSignalFd() {
  sigset_t set = JobSignals();
  rendezvous::UniqueFd fd(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!fd.valid()) {
    std::fprintf(stderr, "hvdrun: signalfd: %s\n", rendezvous::ErrnoString(errno).c_str());
  }
  return fd;
}

std::vector<int> ReadJobSignals(int signal_fd) {
  std::vector<int> sigs;
  signalfd_siginfo info;
  while (::read(signal_fd, &info, sizeof(info)) == sizeof(info)) {
    int sig = static_cast<int>(info.ssi_signo);
    if (sig != SIGCHLD) sigs.push_back(sig);
  }
  return sigs;
}

void OutputPoll::Begin(int signal_fd) {
  fds_.clear();
  refs_.clear();
  fds_.push_back({signal_fd, POLLIN, 0});
}

void OutputPoll::Add(ChildWithOutput* child) {
  if (child->proc.stdout_fd() >= 0) {
    fds_.push_back({child->proc.stdout_fd(), POLLIN, 0});
    refs_.push_back({child, true});
  }
  if (child->proc.stderr_fd() >= 0) {
    fds_.push_back({child->proc.stderr_fd(), POLLIN, 0});
    refs_.push_back({child, false});
  }
}

int OutputPoll::Wait(int timeout_ms) {
  return ::poll(fds_.data(), fds_.size(), timeout_ms);
}

void OutputPoll::RelayReady() {
  for (size_t i = 0; i < refs_.size(); ++i) {
    if (!(fds_[i + 1].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    ChildProcess* proc = &refs_[i].child->proc;
    const bool is_stdout = refs_[i].is_stdout;
    LinePrefixer* sink = is_stdout ? &refs_[i].child->out : &refs_[i].child->err;
    const rendezvous::UniqueFd& copy =
        is_stdout ? refs_[i].child->out_copy : refs_[i].child->err_copy;
    char buf[65536];
    ssize_t n = ::read(fds_[i + 1].fd, buf, sizeof(buf));
    if (n > 0) {
      sink->Feed(buf, static_cast<size_t>(n));
      if (copy.valid()) WriteAll(copy.get(), buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    sink->Flush();
    if (is_stdout) {
      proc->CloseStdout();
    } else {
      proc->CloseStderr();
    }
  }
}

}  // namespace run
}  // namespace hvd
