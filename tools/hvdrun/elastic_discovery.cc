#include "tools/hvdrun/elastic_discovery.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include "core/rendezvous/socket_util.h"
#include "tools/hvdrun/elastic_plan.h"
#include "tools/hvdrun/process.h"

namespace hvd {
namespace run {

namespace {
// Discovery output is a host list; anything larger is a runaway script.
constexpr size_t kMaxOutputBytes = 1 << 20;
}  // namespace

Status DiscoverHosts(const std::string& script, const std::vector<std::string>& env,
                     double timeout_seconds, std::vector<HostSlots>* out) {
  ChildProcess proc;
  HVD_RETURN_IF_ERROR(proc.Start({"/bin/sh", "-c", script}, env));
  auto deadline = rendezvous::Deadline::After(timeout_seconds);
  std::string text, err;
  while (proc.stdout_fd() >= 0 || proc.stderr_fd() >= 0) {
    if (deadline.Expired()) {
      proc.Signal(SIGKILL);
      return Status::Timeout("host discovery script did not finish within " +
                             std::to_string(static_cast<int>(timeout_seconds)) + " s");
    }
    pollfd fds[2] = {{proc.stdout_fd(), POLLIN, 0}, {proc.stderr_fd(), POLLIN, 0}};
    int r = ::poll(fds, 2, deadline.PollTimeoutMs());
    if (r < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[4096];
      ssize_t n = ::read(fds[i].fd, buf, sizeof(buf));
      if (n > 0) {
        std::string& dst = i == 0 ? text : err;
        if (dst.size() < kMaxOutputBytes) dst.append(buf, static_cast<size_t>(n));
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        if (i == 0) {
          proc.CloseStdout();
        } else {
          proc.CloseStderr();
        }
      }
    }
  }
  while (!proc.Poll()) {
    if (deadline.Expired()) {
      proc.Signal(SIGKILL);
      return Status::Timeout("host discovery script did not exit within " +
                             std::to_string(static_cast<int>(timeout_seconds)) + " s");
    }
    ::usleep(1000);
  }
  if (proc.wait_status() != 0) {
    while (!err.empty() && err.back() == '\n') err.pop_back();
    return Status::Invalid("host discovery script " + DescribeWaitStatus(proc.wait_status()) +
                           (err.empty() ? "" : ": " + err));
  }
  return ParseDiscoveryOutput(text, out);
}

}  // namespace run
}  // namespace hvd
