// What the fixed-size supervisor and the elastic driver share about their
// children: the job signals read through a signalfd, a child with its
// prefixed output, and one poll() over the signalfd and every open pipe.
#pragma once

#include <poll.h>

#include <vector>

#include "core/rendezvous/socket_util.h"
#include "tools/hvdrun/output.h"
#include "tools/hvdrun/process.h"

namespace hvd {
namespace run {

// Blocks SIGINT, SIGTERM, SIGHUP and SIGCHLD so they arrive through
// OpenJobSignalFd(). Call before any thread starts (threads inherit the
// mask; a thread that did not block them could take the signal instead).
void BlockJobSignals();

// A non-blocking signalfd for the job signals; invalid (and the reason
// printed) on failure.
rendezvous::UniqueFd OpenJobSignalFd();

// Drains the signalfd; returns the signals other than SIGCHLD in order
// (SIGCHLD only says "reap", which the callers do every turn anyway).
std::vector<int> ReadJobSignals(int signal_fd);

// A child process and the prefixers of its stdout and stderr, tagged with
// its rank or worker id, plus the files its output is copied to when
// --output-filename is given (invalid otherwise).
struct ChildWithOutput {
  explicit ChildWithOutput(int id) : out(id, "stdout", 1), err(id, "stderr", 2) {}
  ChildProcess proc;
  LinePrefixer out;
  LinePrefixer err;
  rendezvous::UniqueFd out_copy;
  rendezvous::UniqueFd err_copy;
};

// One round of poll(): the signalfd first, then the open pipes of each
// child added.
class OutputPoll {
 public:
  void Begin(int signal_fd);
  void Add(ChildWithOutput* child);
  size_t open_pipes() const { return refs_.size(); }
  // ::poll's result (-1 and errno on error).
  int Wait(int timeout_ms);
  bool signal_ready() const { return (fds_[0].revents & POLLIN) != 0; }
  // Forwards what each ready pipe holds; at EOF flushes and closes it.
  void RelayReady();

 private:
  struct Ref {
    ChildWithOutput* child;
    bool is_stdout;
  };
  std::vector<pollfd> fds_;
  std::vector<Ref> refs_;
};

}  // namespace run
}  // namespace hvd
