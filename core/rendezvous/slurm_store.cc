#include "core/rendezvous/slurm_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "core/rendezvous/kv_protocol.h"
#include "core/rendezvous/kv_server.h"

namespace hvd {
namespace {

constexpr size_t kSecretBytes = 32;
constexpr const char* kMagic = "hvd-slurm-store-1";
// A task that cannot reach the store yet (task 0 still starting, or a stale
// file of an earlier run with the same job and step id) reads the file again
// after this long.
constexpr double kRetrySeconds = 0.2;
constexpr double kConnectTrySeconds = 5.0;

std::string FilePath(const SlurmStep& step) {
  return step.rendezvous_dir + "/" + step.job_id + "." + step.step_id;
}

Status Private(const std::string& path, const struct stat& st, bool dir) {
  if (st.st_uid != geteuid() || (st.st_mode & 077) != 0 ||
      (dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))) {
    return Status::Invalid(std::string("Slurm rendezvous: ") + path + " must be a " +
                           (dir ? "directory" : "file") +
                           " that only this user owns and can read (mode " + (dir ? "700" : "600") +
                           "); fix it or set HVD_SLURM_RENDEZVOUS_DIR");
  }
  return Status::OK();
}

// mkdir -p with mode 0700 for what it creates; the last component must be
// private to this user.
Status MakePrivateDir(const std::string& dir) {
  if (dir.empty()) {
    return Status::Invalid(
        "Slurm rendezvous: neither HVD_SLURM_RENDEZVOUS_DIR nor HOME is set, so the tasks have no "
        "private place to share the store's secret");
  }
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    const std::string part = dir.substr(0, pos);
    if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) {
      return Status::Invalid("Slurm rendezvous: cannot create " + part + ": " +
                             std::strerror(errno));
    }
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    return Status::Invalid("Slurm rendezvous: " + dir + ": " + std::strerror(errno));
  }
  return Private(dir, st, true);
}

// Written under a temporary name and renamed, so a reader sees all or nothing.
Status WriteFile(const SlurmStep& step, int port, const std::string& secret) {
  HVD_RETURN_IF_ERROR(MakePrivateDir(step.rendezvous_dir));
  const std::string path = FilePath(step);
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Status::Invalid("Slurm rendezvous: cannot create " + tmp + ": " + std::strerror(errno));
  }
  const std::string text =
      std::string(kMagic) + " " + std::to_string(port) + " " + rendezvous::HexEncode(secret) + "\n";
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const bool closed = ::close(fd) == 0;
  if (!written || !closed || ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return Status::Invalid("Slurm rendezvous: cannot write " + path + ": " + std::strerror(errno));
  }
  return Status::OK();
}

// The store's port and secret; *missing while the file does not exist yet.
Status ReadFile(const SlurmStep& step, std::string* port, std::string* secret_hex, bool* missing) {
  const std::string path = FilePath(step);
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  *missing = fd < 0 && errno == ENOENT;
  if (fd < 0) {
    if (*missing) return Status::Invalid(path + " does not exist");
    return Status::Invalid("Slurm rendezvous: cannot open " + path + ": " + std::strerror(errno));
  }
  struct stat st {};
  Status s = ::fstat(fd, &st) == 0 ? Private(path, st, false)
                                   : Status::Invalid("Slurm rendezvous: cannot stat " + path);
  char buf[256] = {0};
  const ssize_t n = s.ok() ? ::read(fd, buf, sizeof(buf) - 1) : 0;
  ::close(fd);
  HVD_RETURN_IF_ERROR(s);
  std::istringstream in(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0));
  std::string magic;
  if (!(in >> magic >> *port >> *secret_hex) || magic != kMagic) {
    return Status::Invalid("Slurm rendezvous: " + path + " is not an hvd store file");
  }
  return Status::OK();
}

// Task 0's store: one per process, alive until the process exits, so that
// hvd_shutdown + hvd_init meets on the same store.
struct HostedStore {
  std::mutex mu;
  std::string key;  // "job.step" it serves
  std::unique_ptr<rendezvous::KVServer> server;
  std::string secret;
};

HostedStore& Hosted() {
  static HostedStore store;
  return store;
}

Status HostStore(const SlurmStep& step, const std::string& host) {
  if (host != step.first_node) {
    return Status::Invalid("Slurm rendezvous: task 0 runs on " + host +
                           ", but the store must be on the first node of SLURM_STEP_NODELIST=" +
                           step.nodelist + " (" + step.first_node + ")");
  }
  HostedStore& h = Hosted();
  std::lock_guard<std::mutex> lock(h.mu);
  const std::string key = step.job_id + "." + step.step_id;
  if (!h.server || h.key != key) {
    std::string secret;
    HVD_RETURN_IF_ERROR(rendezvous::RandomBytes(kSecretBytes, &secret));
    auto server = std::make_unique<rendezvous::KVServer>();
    HVD_RETURN_IF_ERROR(server->Start("0.0.0.0", 0, secret));
    h.server = std::move(server);
    h.secret = secret;
    h.key = key;
  }
  return WriteFile(step, h.server->port(), h.secret);
}

}  // namespace

Status ConnectSlurmStore(const SlurmStep& step, const std::string& host, int rank,
                         double timeout_seconds, RendezvousEndpoint* endpoint,
                         std::unique_ptr<KVClient>* client) {
  if (!step.nodelist_error.ok()) {
    return Status::Invalid("Slurm rendezvous: " + step.nodelist_error.message());
  }
  if (rank == 0) HVD_RETURN_IF_ERROR(HostStore(step, host));
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(timeout_seconds));
  Status last = Status::Invalid(FilePath(step) + " does not exist");
  for (;;) {
    RendezvousEndpoint e;
    e.set = true;
    e.addr = step.first_node;
    bool missing = false;
    Status s = ReadFile(step, &e.port, &e.secret_hex, &missing);
    if (s.ok()) {
      const double left =
          std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
      s = KVClient::Connect(e, std::max(0.1, std::min(left, kConnectTrySeconds)), client);
      if (s.ok()) {
        *endpoint = e;
        return s;
      }
    } else if (!missing) {
      return s;
    }
    last = s;
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::duration<double>(kRetrySeconds));
  }
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%g", timeout_seconds);
  return Status::Timeout("Slurm rendezvous: task " + std::to_string(rank) +
                         " found no store of task 0 within " + seconds + " s (SLURM_JOB_ID=" +
                         step.job_id + " SLURM_STEP_ID=" + step.step_id + "): " + last.message());
}

void RemoveSlurmStoreFile(const SlurmStep& step) {
  ::unlink(FilePath(step).c_str());
}

}  // namespace hvd
