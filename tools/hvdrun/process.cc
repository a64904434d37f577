#include "tools/hvdrun/process.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace hvd {
namespace run {

using rendezvous::ErrnoString;
using rendezvous::UniqueFd;

std::string FindExecutable(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    struct stat st;
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    start = end + 1;
  }
  return "";
}

ChildProcess::~ChildProcess() {
  if (running()) {
    Signal(SIGKILL);
    int st;
    while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
  }
}

Status ChildProcess::Start(const std::vector<std::string>& argv,
                           const std::vector<std::string>& env) {
  if (argv.empty()) return Status::Invalid("empty command");
  std::string exe = FindExecutable(argv[0]);
  if (exe.empty()) return Status::Invalid("'" + argv[0] + "' not found in PATH");
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return Status::Backend("pipe: " + ErrnoString(errno));
  UniqueFd out_r(out_pipe[0]), out_w(out_pipe[1]);
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return Status::Backend("pipe: " + ErrnoString(errno));
  UniqueFd err_r(err_pipe[0]), err_w(err_pipe[1]);
  UniqueFd devnull(::open("/dev/null", O_RDONLY | O_CLOEXEC));

  // Everything the child touches is prepared here, before fork.
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  std::string exec_error = "hvdrun: cannot execute '" + exe + "'\n";

  pid_t pid = ::fork();
  if (pid < 0) return Status::Backend("fork: " + ErrnoString(errno));
  if (pid == 0) {
    // Child: async-signal-safe calls only.
    ::setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    ::signal(SIGPIPE, SIG_DFL);
    ::signal(SIGCHLD, SIG_DFL);
    if (devnull.valid()) ::dup2(devnull.get(), 0);
    ::dup2(out_w.get(), 1);
    ::dup2(err_w.get(), 2);
    ::execve(exe.c_str(), cargv.data(), cenv.data());
    ssize_t ignored = ::write(2, exec_error.data(), exec_error.size());
    (void)ignored;
    ::_exit(127);
  }
  // Also from the parent, so a signal sent right away reaches the group.
  ::setpgid(pid, pid);
  pid_ = pid;
  out_ = std::move(out_r);
  err_ = std::move(err_r);
  return Status::OK();
}

void ChildProcess::Signal(int sig) {
  if (!running()) return;
  if (::kill(-pid_, sig) != 0) ::kill(pid_, sig);
}

bool ChildProcess::Poll() {
  if (pid_ <= 0) return true;
  if (reaped_) return true;
  int st = 0;
  pid_t r = ::waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    reaped_ = true;
    status_ = st;
    // The group may live on (a daemonised grandchild); it is not ours to
    // hunt, but an ssh or sh wrapper's children die with the pipe.
  }
  return reaped_;
}

int ExitCodeOf(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

std::string DescribeWaitStatus(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    int sig = WTERMSIG(wait_status);
    return "exited with code " + std::to_string(128 + sig) + " (killed by signal " +
           std::to_string(sig) + ", " + strsignal(sig) + ")";
  }
  return "exited with code " + std::to_string(ExitCodeOf(wait_status));
}

}  // namespace run
}  // namespace hvd
