// A child process started with fork/exec in its own process group, its
// stdout and stderr on pipes. The destructor SIGKILLs and reaps a child that
// is still running, so no rank outlives hvdrun by accident.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "core/common/status.h"
#include "core/rendezvous/socket_util.h"

namespace hvd {
namespace run {

class ChildProcess {
 public:
  ChildProcess() = default;
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // argv[0] is looked up in PATH (by the parent: after fork only
  // async-signal-safe calls are allowed, and the rendezvous thread runs).
  // env is the complete environment, "K=V" strings. The child gets
  // /dev/null as stdin, the signal mask and dispositions reset.
  Status Start(const std::vector<std::string>& argv, const std::vector<std::string>& env);

  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0 && !reaped_; }
  // Read ends; invalid after Close*().
  int stdout_fd() const { return out_.get(); }
  int stderr_fd() const { return err_.get(); }
  void CloseStdout() { out_.Reset(); }
  void CloseStderr() { err_.Reset(); }

  // Sends sig to the child's whole process group (wrappers like sh or ssh
  // included). No-op once reaped.
  void Signal(int sig);
  // Non-blocking waitpid; true once the child has been reaped.
  bool Poll();
  // The raw wait status (valid after Poll() returned true).
  int wait_status() const { return status_; }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
  rendezvous::UniqueFd out_;
  rendezvous::UniqueFd err_;
};

// Finds an executable in PATH ("" if not found). Paths with '/' are kept.
std::string FindExecutable(const std::string& name);

// Exit code hvdrun reports for a wait status: the code, or 128+signal.
int ExitCodeOf(int wait_status);
// "exited with code 3" / "killed by signal 9 (Killed)".
std::string DescribeWaitStatus(int wait_status);

}  // namespace run
}  // namespace hvd
