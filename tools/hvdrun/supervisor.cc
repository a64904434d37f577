#include "tools/hvdrun/supervisor.h"

#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <memory>

#include "core/rendezvous/socket_util.h"
#include "tools/hvdrun/output.h"
#include "tools/hvdrun/process.h"

namespace hvd {
namespace run {

namespace {

using rendezvous::Deadline;

// After the last rank exits, its output pipes may still be held open by a
// grandchild it left behind; stop relaying after this long.
constexpr double kDrainSeconds = 2.0;

sigset_t JobSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGCHLD);
  return set;
}

struct Slot {
  Slot(int rank, std::string host)
      : rank(rank), host(std::move(host)), out(rank, "stdout", 1), err(rank, "stderr", 2) {}
  int rank;
  std::string host;
  ChildProcess proc;
  LinePrefixer out;
  LinePrefixer err;
  bool exited = false;
};

void Relay(ChildProcess* proc, bool is_stdout, LinePrefixer* sink) {
  int fd = is_stdout ? proc->stdout_fd() : proc->stderr_fd();
  char buf[65536];
  ssize_t n = ::read(fd, buf, sizeof(buf));
  if (n > 0) {
    sink->Feed(buf, static_cast<size_t>(n));
    return;
  }
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  sink->Flush();
  if (is_stdout) {
    proc->CloseStdout();
  } else {
    proc->CloseStderr();
  }
}

}  // namespace

void BlockJobSignals() {
  sigset_t set = JobSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int RunJob(const std::vector<RankLaunch>& ranks, double grace_seconds, bool verbose) {
  sigset_t set = JobSignals();
  rendezvous::UniqueFd sfd(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!sfd.valid()) {
    std::fprintf(stderr, "hvdrun: signalfd: %s\n", rendezvous::ErrnoString(errno).c_str());
    return 1;
  }
  std::vector<std::unique_ptr<Slot>> slots;
  for (const auto& r : ranks) {
    auto slot = std::make_unique<Slot>(r.rank, r.host);
    if (verbose) {
      std::string line = "hvdrun: rank " + std::to_string(r.rank) + " on " + r.host + ":";
      for (const auto& a : r.argv) line += " " + a;
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    Status s = slot->proc.Start(r.argv, r.env);
    if (!s.ok()) {
      std::fprintf(stderr, "hvdrun: cannot start rank %d on host %s: %s\n", r.rank, r.host.c_str(),
                   s.message().c_str());
      return 1;  // slots' destructors kill the ranks already started
    }
    slots.push_back(std::move(slot));
  }

  int first_failure = -1;
  int failure_code = 0;
  int interrupted_by = 0;
  bool stopping = false;
  bool killed = false;
  Deadline kill_deadline = Deadline::Never();
  Deadline drain_deadline = Deadline::Never();
  auto signal_all = [&](int sig) {
    for (auto& s : slots) s->proc.Signal(sig);
  };
  auto start_stopping = [&] {
    if (stopping) return;
    stopping = true;
    signal_all(SIGTERM);
    kill_deadline = Deadline::After(grace_seconds);
  };

  std::vector<pollfd> fds;
  while (true) {
    // Reap first: SIGCHLD can coalesce, so every child is checked each turn.
    bool all_exited = true;
    for (auto& s : slots) {
      if (!s->exited && s->proc.Poll()) {
        s->exited = true;
        int st = s->proc.wait_status();
        int code = ExitCodeOf(st);
        if (verbose) {
          std::fprintf(stderr, "hvdrun: rank %d on host %s %s\n", s->rank, s->host.c_str(),
                       DescribeWaitStatus(st).c_str());
        }
        if (code != 0 && first_failure < 0 && interrupted_by == 0) {
          first_failure = s->rank;
          failure_code = code;
          std::fprintf(stderr, "hvdrun: rank %d on host %s %s (first failure); stopping the job\n",
                       s->rank, s->host.c_str(), DescribeWaitStatus(st).c_str());
          start_stopping();
        }
      }
      all_exited = all_exited && s->exited;
    }
    if (all_exited && drain_deadline.never()) drain_deadline = Deadline::After(kDrainSeconds);
    if (stopping && !killed && kill_deadline.Expired()) {
      signal_all(SIGKILL);
      killed = true;
    }

    fds.clear();
    fds.push_back({sfd.get(), POLLIN, 0});
    struct Ref {
      Slot* slot;
      bool is_stdout;
    };
    std::vector<Ref> refs;
    for (auto& s : slots) {
      if (s->proc.stdout_fd() >= 0) {
        fds.push_back({s->proc.stdout_fd(), POLLIN, 0});
        refs.push_back({s.get(), true});
      }
      if (s->proc.stderr_fd() >= 0) {
        fds.push_back({s->proc.stderr_fd(), POLLIN, 0});
        refs.push_back({s.get(), false});
      }
    }
    if (all_exited && (refs.empty() || drain_deadline.Expired())) break;

    int timeout = 200;  // also bounds the wait for coalesced SIGCHLDs
    if (stopping && !killed) timeout = std::min(timeout, kill_deadline.PollTimeoutMs());
    if (all_exited) timeout = std::min(timeout, drain_deadline.PollTimeoutMs());
    int r = ::poll(fds.data(), fds.size(), timeout);
    if (r < 0 && errno != EINTR) break;
    if (r <= 0) continue;

    if (fds[0].revents & POLLIN) {
      signalfd_siginfo info;
      while (::read(sfd.get(), &info, sizeof(info)) == sizeof(info)) {
        int sig = static_cast<int>(info.ssi_signo);
        if (sig == SIGCHLD) continue;
        if (interrupted_by != 0) {
          // A second interrupt: the user wants out now.
          signal_all(SIGKILL);
          killed = true;
          continue;
        }
        interrupted_by = sig;
        std::fprintf(stderr, "hvdrun: received signal %d (%s); forwarding it to every rank\n", sig,
                     strsignal(sig));
        signal_all(sig);
        stopping = true;
        kill_deadline = Deadline::After(grace_seconds);
      }
    }
    for (size_t i = 0; i < refs.size(); ++i) {
      if (fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR)) {
        Slot* s = refs[i].slot;
        Relay(&s->proc, refs[i].is_stdout, refs[i].is_stdout ? &s->out : &s->err);
      }
    }
  }
  for (auto& s : slots) {
    s->out.Flush();
    s->err.Flush();
  }
  if (first_failure >= 0) return failure_code;
  if (interrupted_by != 0) return 128 + interrupted_by;
  return 0;
}

}  // namespace run
}  // namespace hvd
