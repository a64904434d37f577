#include "tools/hvdrun/supervisor.h"

#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <memory>

#include "core/rendezvous/socket_util.h"
#include "tools/hvdrun/child_io.h"

namespace hvd {
namespace run {

namespace {

using rendezvous::Deadline;

// After the last rank exits, its output pipes may still be held open by a
// grandchild it left behind; stop relaying after this long.
constexpr double kDrainSeconds = 2.0;

struct Slot : ChildWithOutput {
  Slot(int rank, std::string host) : ChildWithOutput(rank), rank(rank), host(std::move(host)) {}
  int rank;
  std::string host;
  bool exited = false;
};

}  // namespace

int RunJob(const std::vector<RankLaunch>& ranks, double grace_seconds, bool verbose,
           const std::string& output_dir) {
  rendezvous::UniqueFd sfd = OpenJobSignalFd();
  if (!sfd.valid()) return 1;
  std::vector<std::unique_ptr<Slot>> slots;
  for (const auto& r : ranks) {
    auto slot = std::make_unique<Slot>(r.rank, r.host);
    if (verbose) {
      std::string line = "hvdrun: rank " + std::to_string(r.rank) + " on " + r.host + ":";
      for (const auto& a : r.argv) line += " " + a;
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    Status s;
    if (!output_dir.empty()) {
      s = OpenOutputCopies(output_dir, RankOutputName(r.rank, static_cast<int>(ranks.size())),
                           &slot->out_copy, &slot->err_copy);
    }
    if (s.ok()) s = slot->proc.Start(r.argv, r.env);
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
    // A stopped rank (SIGSTOP, a debugger's ^Z) acts on SIGTERM only once
    // continued; otherwise only the SIGKILL a grace period later ends it.
    signal_all(SIGCONT);
    kill_deadline = Deadline::After(grace_seconds);
  };

  OutputPoll poll;
  while (true) {
    // Reap first: SIGCHLD can coalesce, so every child is checked each turn.
    bool all_exited = true;
    Slot* failed = nullptr;  // this turn's first failure
    for (auto& s : slots) {
      if (!s->exited && s->proc.Poll()) {
        s->exited = true;
        int st = s->proc.wait_status();
        if (verbose) {
          std::fprintf(stderr, "hvdrun: rank %d on host %s %s\n", s->rank, s->host.c_str(),
                       DescribeWaitStatus(st).c_str());
        }
        // Reaped together, a rank killed by a signal is the cause and the
        // others' non-zero exits its consequence (hvd makes a survivor of a
        // lost peer exit non-zero, core/runtime/job_end.h).
        if (ExitCodeOf(st) != 0 &&
            (!failed || (WIFSIGNALED(st) && !WIFSIGNALED(failed->proc.wait_status())))) {
          failed = s.get();
        }
      }
      all_exited = all_exited && s->exited;
    }
    if (failed && first_failure < 0 && interrupted_by == 0) {
      const int st = failed->proc.wait_status();
      first_failure = failed->rank;
      failure_code = ExitCodeOf(st);
      std::fprintf(stderr, "hvdrun: rank %d on host %s %s (first failure); stopping the job\n",
                   failed->rank, failed->host.c_str(), DescribeWaitStatus(st).c_str());
      start_stopping();
    }
    if (all_exited && drain_deadline.never()) drain_deadline = Deadline::After(kDrainSeconds);
    if (stopping && !killed && kill_deadline.Expired()) {
      signal_all(SIGKILL);
      killed = true;
    }

    poll.Begin(sfd.get());
    for (auto& s : slots) poll.Add(s.get());
    if (all_exited && (poll.open_pipes() == 0 || drain_deadline.Expired())) break;

    int timeout = 200;  // also bounds the wait for coalesced SIGCHLDs
    if (stopping && !killed) timeout = std::min(timeout, kill_deadline.PollTimeoutMs());
    if (all_exited) timeout = std::min(timeout, drain_deadline.PollTimeoutMs());
    int r = poll.Wait(timeout);
    if (r < 0 && errno != EINTR) break;
    if (r <= 0) continue;

    if (poll.signal_ready()) {
      for (int sig : ReadJobSignals(sfd.get())) {
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
    poll.RelayReady();
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
