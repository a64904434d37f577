// The rendezvous store under abuse, end to end: hvdrun starts a real job
// (store_abuse_rank) whose ranks wait for a "go"; this driver then opens 500
// slowloris connections (silent, or a few bytes of a frame, or a byte now
// and then), 500 garbage connections (random bytes, an HTTP request, an empty
// frame, a 48 MiB frame announced and 1 MiB of it sent, auth-sized junk)
// and starts 500 authentication attempts with a wrong secret, and says "go".
// It asserts that
//   - every rank's hvd_init returns within 10 s of "go" and the job's exact
//     collectives pass (the ranks check them), and hvdrun exits 0;
//   - every wrong-secret client is refused, and the server closes every
//     slowloris and garbage connection by itself;
//   - hvdrun's peak RSS (VmHWM) stays within kMaxRssGrowthMiB of its RSS
//     before the abuse, and its open fds come back to where they were;
//   - hvdrun's log names the abusive peer once, not once per connection, and
//     its end-of-job summary counts all 1500 refusals.
// Usage: store_abuse_test HVDRUN RANK_PROGRAM NP [FD_LIMIT]
// FD_LIMIT (optional) caps hvdrun's RLIMIT_NOFILE below the number of abusive
// connections, so the store must shed idle unauthenticated ones to let the
// job in. Exit codes: 0 pass, 1 fail, 77 skipped (too few fds here).
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/rendezvous/kv_client.h"
#include "core/rendezvous/socket_util.h"

namespace {

using hvd::Status;
using hvd::rendezvous::Deadline;
using hvd::rendezvous::UniqueFd;
using Clock = std::chrono::steady_clock;

constexpr int kSlowloris = 500;
constexpr int kGarbage = 500;
constexpr int kWrongSecret = 500;
constexpr int kWrongSecretThreads = 8;
constexpr double kMaxStartSeconds = 10.0;         // go -> hvd_init returned, per rank
constexpr double kServerHandshakeSeconds = 10.0;  // kv_server.cc's limit
constexpr long kMaxRssGrowthMiB = 8;
constexpr size_t kBigPayload = 1 << 20;

int g_failures = 0;

void Check(bool ok, const std::string& what) {
  if (!ok) {
    ++g_failures;
    std::fprintf(stderr, "FAIL: %s\n", what.c_str());
  }
}

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool WaitForFile(const std::string& path, double seconds, pid_t watched) {
  const auto t0 = Clock::now();
  while (::access(path.c_str(), F_OK) != 0) {
    if (Since(t0) > seconds) return false;
    if (::waitpid(watched, nullptr, WNOHANG) == watched) return false;  // hvdrun died
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

void Touch(const std::string& path) {
  std::ofstream(path) << "\n";
}

// A field of /proc/PID/status in KiB (VmRSS, VmHWM), -1 if unreadable.
long StatusKiB(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::atol(line.c_str() + field.size() + 1);
  }
  return -1;
}

int OpenFds(pid_t pid) {
  DIR* d = ::opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
  ::closedir(d);
  return n;
}

// Starts hvdrun in its own process group with stdout+stderr to `log`.
pid_t StartHvdrun(const std::vector<std::string>& argv, const std::string& log, long fd_limit) {
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::setpgid(0, 0);
  int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ::dup2(fd, 1);
  ::dup2(fd, 2);
  if (fd_limit > 0) {
    rlimit rl{};
    ::getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = static_cast<rlim_t>(fd_limit);
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  ::execv(args[0], args.data());
  ::_exit(127);
}

// Asks hvdrun to stop the job (it forwards SIGTERM to the ranks), then kills it.
void StopHvdrun(pid_t pid) {
  ::kill(pid, SIGTERM);
  const auto t0 = Clock::now();
  while (::waitpid(pid, nullptr, WNOHANG) != pid) {
    if (Since(t0) > 10) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

UniqueFd Connect(int port) {
  UniqueFd fd;
  Status s = hvd::rendezvous::ConnectTcp("127.0.0.1", port, Deadline::After(10), &fd);
  Check(s.ok(), "abusive connect: " + s.message());
  return fd;
}

// Best effort: what fits in the socket buffer now.
void SendNow(int fd, const std::string& bytes) {
  ssize_t ignored = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  (void)ignored;
}

std::string Be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

// An abusive connection the server must close by itself.
struct Held {
  UniqueFd fd;
  const char* kind;
  bool trickle = false;  // sends one more byte every second
  bool closed = false;
};

void OpenSlowloris(int port, std::vector<Held>* held) {
  for (int i = 0; i < kSlowloris; ++i) {
    Held h{Connect(port), "slowloris"};
    switch (i % 4) {
      case 0:
        break;  // silent
      case 1:
        SendNow(h.fd.get(), std::string(2, '\0'));  // half a length prefix
        break;
      case 2:
        SendNow(h.fd.get(), Be32(73) + std::string(10, 'a'));  // a tenth of an auth frame
        break;
      default:
        SendNow(h.fd.get(), Be32(73));
        h.trickle = true;
        break;
    }
    held->push_back(std::move(h));
  }
}

void OpenGarbage(int port, std::mt19937* rng, std::vector<Held>* held, std::vector<int>* big) {
  const std::string http = "GET / HTTP/1.1\r\nHost: store\r\n\r\n";
  for (int i = 0; i < kGarbage; ++i) {
    Held h{Connect(port), "garbage"};
    std::string bytes;
    switch (i % 5) {
      case 0:
        bytes.resize(16 + (*rng)() % 4080);
        for (auto& b : bytes) b = static_cast<char>((*rng)());
        break;
      case 1:
        bytes = http;
        break;
      case 2:
        bytes = Be32(0);  // empty frame
        break;
      case 3:
        bytes = Be32(48u << 20);  // the payload follows from another thread
        big->push_back(h.fd.get());
        break;
      default:
        bytes = Be32(73);
        for (int k = 0; k < 73; ++k) bytes.push_back(static_cast<char>((*rng)()));
        break;
    }
    SendNow(h.fd.get(), bytes);
    held->push_back(std::move(h));
  }
}

// Pushes kBigPayload bytes into each announced 48 MiB frame; a server that
// buffers unauthenticated frames holds them all. Stops at the first error on
// a connection (the server closed it: the right answer).
void SendBigPayloads(const std::vector<int>& fds) {
  const std::string chunk(64 << 10, 'x');
  for (int fd : fds) {
    for (size_t sent = 0; sent < kBigPayload; sent += chunk.size()) {
      if (!hvd::rendezvous::SendAll(fd, chunk.data(), chunk.size(), Deadline::After(2)).ok()) break;
    }
  }
}

// kWrongSecret authentication attempts over kWrongSecretThreads threads.
void WrongSecrets(int port, std::atomic<int>* refused, std::atomic<int>* other) {
  std::vector<std::thread> threads;
  for (int t = 0; t < kWrongSecretThreads; ++t) {
    threads.emplace_back([=] {
      for (int i = t; i < kWrongSecret; i += kWrongSecretThreads) {
        std::unique_ptr<hvd::KVClient> client;
        const std::string secret(32, static_cast<char>('A' + i % 26));
        Status s = hvd::KVClient::Connect("127.0.0.1", port, secret, 10.0, &client);
        const bool was_refused =
            !s.ok() && s.message().find("refused authentication") != std::string::npos;
        if (was_refused) {
          refused->fetch_add(1);
        } else if (other->fetch_add(1) < 5) {
          std::fprintf(stderr, "wrong secret #%d: %s\n", i,
                       s.ok() ? "was accepted" : s.message().c_str());
        }
      }
    });
  }
  for (auto& th : threads) th.join();
}

// Waits until the server closed every held connection (EOF or reset after
// its hello), trickling bytes meanwhile. Returns how many are still open.
int AwaitServerCloses(std::vector<Held>* held, double seconds) {
  const auto t0 = Clock::now();
  auto last_trickle = t0;
  int open = 0;
  while (true) {
    std::vector<pollfd> fds;
    std::vector<Held*> who;
    for (auto& h : *held) {
      if (h.closed) continue;
      fds.push_back({h.fd.get(), POLLIN, 0});
      who.push_back(&h);
    }
    open = static_cast<int>(fds.size());
    if (open == 0 || Since(t0) > seconds) return open;
    if (std::chrono::duration<double>(Clock::now() - last_trickle).count() >= 1.0) {
      for (Held* h : who) {
        if (h->trickle) SendNow(h->fd.get(), "z");
      }
      last_trickle = Clock::now();
    }
    if (::poll(fds.data(), fds.size(), 100) <= 0) continue;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      char buf[4096];
      ssize_t n = ::recv(fds[i].fd, buf, sizeof(buf), MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) who[i]->closed = true;
    }
  }
}

// The test's own flat directory.
void RemoveDir(const std::string& dir) {
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.') ::unlink((dir + "/" + e->d_name).c_str());
    }
    ::closedir(d);
  }
  ::rmdir(dir.c_str());
}

int CountLines(const std::string& text, const std::string& needle) {
  int n = 0;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) n += line.find(needle) != std::string::npos;
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: store_abuse_test HVDRUN RANK_PROGRAM NP [FD_LIMIT]\n");
    return 2;
  }
  const std::string hvdrun = argv[1], rank_program = argv[2], np = argv[3];
  const long fd_limit = argc > 4 ? std::atol(argv[4]) : 0;
  ::signal(SIGPIPE, SIG_IGN);

  // This process holds ~1000 sockets at once, hvdrun as many (unless capped).
  rlimit rl{};
  ::getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < 2 * (kSlowloris + kGarbage) + 256) {
    std::printf("SKIP: RLIMIT_NOFILE hard limit %ld is too low for %d abusive connections\n",
                static_cast<long>(rl.rlim_max), kSlowloris + kGarbage);
    return 77;
  }

  char dir_template[] = "/tmp/hvd_store_abuse.XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) return 1;
  const std::string dir = dir_template;
  const std::string log = dir + "/hvdrun.log";
  const pid_t pid = StartHvdrun({hvdrun, "-np", np, rank_program, dir}, log, fd_limit);

  const int nranks = std::atoi(np.c_str());
  bool ready = WaitForFile(dir + "/port", 60, pid);
  for (int r = 0; ready && r < nranks; ++r) {
    ready = WaitForFile(dir + "/ready." + std::to_string(r), 60, pid);
  }
  if (!ready) {
    std::fprintf(stderr, "FAIL: the job's ranks did not start\n%s\n", ReadText(log).c_str());
    StopHvdrun(pid);
    return 1;
  }
  const int port = std::atoi(ReadText(dir + "/port").c_str());
  const long rss_before = StatusKiB(pid, "VmRSS");
  const int fds_before = OpenFds(pid);

  // The abuse: connections first, then wrong secrets racing the job's start.
  const auto abuse_start = Clock::now();
  std::mt19937 rng(12345);
  std::vector<Held> held;
  std::vector<int> big;
  OpenSlowloris(port, &held);
  OpenGarbage(port, &rng, &held, &big);
  std::thread big_sender(SendBigPayloads, big);
  std::atomic<int> refused{0}, other{0};
  std::thread wrong(WrongSecrets, port, &refused, &other);
  const double abuse_open_s = Since(abuse_start);
  Touch(dir + "/go");
  const auto go = Clock::now();

  double worst_init = 0, worst_job = 0;
  for (int r = 0; r < nranks; ++r) {
    const std::string ok = dir + "/ok." + std::to_string(r);
    if (!WaitForFile(ok, 60, pid)) {
      Check(false, "rank " + std::to_string(r) + " did not finish its job within 60 s of go");
      continue;
    }
    double init_s = 0, job_s = 0;
    std::istringstream(ReadText(ok)) >> init_s >> job_s;
    worst_init = std::max(worst_init, init_s);
    worst_job = std::max(worst_job, job_s);
  }
  const double job_wall = Since(go);
  Check(worst_init <= kMaxStartSeconds, "a rank's hvd_init took " + std::to_string(worst_init) +
                                            " s under abuse (limit " +
                                            std::to_string(kMaxStartSeconds) + " s)");
  wrong.join();
  big_sender.join();
  Check(refused.load() == kWrongSecret, std::to_string(refused.load()) + " of " +
                                            std::to_string(kWrongSecret) +
                                            " wrong-secret clients were refused authentication");

  // The server's handshake limit closes the slowloris connections; leave 5 s.
  const int still_open = AwaitServerCloses(&held, kServerHandshakeSeconds + 5 - Since(abuse_start));
  Check(still_open == 0, std::to_string(still_open) +
                             " abusive connections were still open after the handshake limit");
  held.clear();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let the server reap
  const long rss_after = StatusKiB(pid, "VmRSS");
  const long rss_peak = StatusKiB(pid, "VmHWM");
  const int fds_after = OpenFds(pid);
  Check(rss_peak - rss_before <= kMaxRssGrowthMiB * 1024,
        "hvdrun's peak RSS grew by " + std::to_string((rss_peak - rss_before) / 1024) +
            " MiB under abuse (limit " + std::to_string(kMaxRssGrowthMiB) + " MiB)");
  Check(fds_after == fds_before, "hvdrun had " + std::to_string(fds_before) +
                                     " open fds before the abuse and " + std::to_string(fds_after) +
                                     " after");

  Touch(dir + "/done");
  int wait_status = 0;
  const auto t_exit = Clock::now();
  while (::waitpid(pid, &wait_status, WNOHANG) != pid) {
    if (Since(t_exit) > 30) {
      Check(false, "hvdrun did not exit within 30 s of done");
      StopHvdrun(pid);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Check(WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0, "hvdrun did not exit 0");

  const std::string text = ReadText(log);
  const int total = kSlowloris + kGarbage + kWrongSecret;
  const int first_lines = CountLines(text, "hvd rendezvous: refused connection from 127.0.0.1");
  const int summary_lines = CountLines(text, "hvd rendezvous: 127.0.0.1: " + std::to_string(total) +
                                                 " connections refused or closed");
  const int store_lines = CountLines(text, "hvd rendezvous:");
  Check(first_lines == 1,
        "the first refusal from 127.0.0.1 was logged " + std::to_string(first_lines) + " times");
  Check(summary_lines == 1, "no summary line counting all " + std::to_string(total) + " refusals");
  Check(store_lines == 2, "the store logged " + std::to_string(store_lines) + " lines, not 2");

  std::printf(
      "store abuse (np=%s, hvdrun fd limit %s): %d slowloris + %d garbage connections opened in "
      "%.2f s, %d wrong secrets; slowest hvd_init %.3f s, job %.3f s after go (wall %.2f s); "
      "hvdrun RSS %ld KiB before, peak %ld, after %ld; fds %d before, %d after; %d store log "
      "lines\n",
      np.c_str(), fd_limit > 0 ? std::to_string(fd_limit).c_str() : "unchanged", kSlowloris,
      kGarbage, abuse_open_s, kWrongSecret, worst_init, worst_job, job_wall, rss_before, rss_peak,
      rss_after, fds_before, fds_after, store_lines);
  if (g_failures != 0) {
    std::fprintf(stderr, "hvdrun's output (%s):\n%s\n", log.c_str(), text.c_str());
    return 1;
  }
  RemoveDir(dir);
  return 0;
}
