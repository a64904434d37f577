#include "tools/hvdrun/preflight.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <thread>

#include "tools/hvdrun/job_env.h"
#include "tools/hvdrun/process.h"

namespace hvd {
namespace run {

namespace {

std::string Drain(int fd) {
  std::string text;
  if (fd < 0) return text;
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) text.append(buf, static_cast<size_t>(n));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  size_t nl = text.rfind('\n');  // the last line says most
  return nl == std::string::npos ? text : text.substr(nl + 1);
}

}  // namespace

Status CheckHostsReachable(const RemoteShell& shell, const std::vector<std::string>& hosts,
                           double timeout_seconds) {
  std::vector<std::unique_ptr<ChildProcess>> checks;
  std::vector<std::string> env = CurrentEnvironment();
  for (const auto& host : hosts) {
    auto p = std::make_unique<ChildProcess>();
    std::vector<std::string> argv = RemoteArgv(shell, host, "/", {}, {"true"});
    Status s = p->Start(argv, env);
    if (!s.ok()) return Status::Invalid("cannot run the remote shell: " + s.message());
    checks.push_back(std::move(p));
  }
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(timeout_seconds));
  std::string cmd;
  for (const auto& w : shell.words) cmd += (cmd.empty() ? "" : " ") + w;
  while (true) {
    bool all_done = true;
    for (size_t i = 0; i < checks.size(); ++i) {
      if (!checks[i]->Poll()) {
        all_done = false;
        continue;
      }
      int code = ExitCodeOf(checks[i]->wait_status());
      if (code != 0) {
        std::string why = Drain(checks[i]->stderr_fd());
        return Status::Invalid("host '" + hosts[i] + "' is not reachable with '" + cmd +
                               "' (exit code " + std::to_string(code) + ")" +
                               (why.empty() ? "" : ": " + why));
      }
    }
    if (all_done) return Status::OK();
    if (std::chrono::steady_clock::now() >= deadline) {
      for (size_t i = 0; i < checks.size(); ++i) {
        if (!checks[i]->Poll()) {
          return Status::Timeout("host '" + hosts[i] + "' did not answer '" + cmd + "' within " +
                                 std::to_string(static_cast<int>(timeout_seconds)) +
                                 " s (--start-timeout)");
        }
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace run
}  // namespace hvd
