#include "core/backends/gloo/gloo_world.h"

#include <arpa/inet.h>
#include <gloo/transport/tcp/attr.h>
#include <gloo/transport/tcp/device.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/backends/gloo/gloo_comm.h"
#include "core/backends/gloo/gloo_error.h"
#include "core/backends/gloo/gloo_store.h"
#include "core/rendezvous/elastic.h"
#include "core/rendezvous/kv_client.h"
#include "core/rendezvous/socket_util.h"

namespace hvd {
namespace {

bool ParseInt(const char* s, int* out) {
  if (s == nullptr || *s == '\0') return false;
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < 0 || v > 1000000000L) return false;
  *out = static_cast<int>(v);
  return true;
}

// First launcher whose pair of variables is set wins.
Status RankAndSize(int* rank, int* size, bool* found) {
  static const char* const kPairs[][2] = {{"HVD_RANK", "HVD_SIZE"},
                                          {"HOROVOD_RANK", "HOROVOD_SIZE"},
                                          {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                          {"PMI_RANK", "PMI_SIZE"},
                                          {"SLURM_PROCID", "SLURM_NTASKS"}};
  for (const auto& p : kPairs) {
    const char* r = std::getenv(p[0]);
    const char* s = std::getenv(p[1]);
    if (r == nullptr && s == nullptr) continue;
    if (!ParseInt(r, rank) || !ParseInt(s, size) || *size < 1 || *rank >= *size) {
      return Status::Invalid(std::string("Gloo: invalid ") + p[0] + "=" + (r ? r : "(unset)") +
                             " / " + p[1] + "=" + (s ? s : "(unset)"));
    }
    *found = true;
    return Status::OK();
  }
  *rank = 0;
  *size = 1;
  *found = false;
  return Status::OK();
}

// Which interface/address Gloo listens on: HVD_GLOO_IFACE, else
// HVD_GLOO_HOSTNAME, else the address that reaches the rendezvous server.
// (HVD_HOSTNAME is hvdrun's label for the host, e.g. a namespace name, and
// need not resolve.)
Status DeviceAttr(::gloo::transport::tcp::attr* attr) {
  if (const char* iface = GetEnv("GLOO_IFACE")) {
    attr->iface = iface;
    return Status::OK();
  }
  if (const char* host = GetEnv("GLOO_HOSTNAME")) {
    attr->hostname = host;
    return Status::OK();
  }
  const char* addr = std::getenv("HVD_RENDEZVOUS_ADDR");
  const char* port = std::getenv("HVD_RENDEZVOUS_PORT");
  if (addr == nullptr) {
    attr->hostname = "127.0.0.1";
    return Status::OK();
  }
  Status st = rendezvous::LocalAddressTowards(addr, port ? port : "0", &attr->hostname);
  if (!st.ok()) return Status::Invalid("Gloo: HVD_RENDEZVOUS_ADDR: " + st.message());
  return st;
}

bool LaunchedByEnv() {
  return std::getenv("HVD_RENDEZVOUS_ADDR") != nullptr;
}

}  // namespace

Status CreateGlooWorld(const CommInitArgs& args, std::unique_ptr<Comm>* out) {
  const double seconds = args.config != nullptr ? args.config->gloo_timeout_seconds : 30.0;
  if (!(seconds > 0)) return Status::Invalid("Gloo: HVD_GLOO_TIMEOUT_SECONDS must be positive");
  auto shared = std::make_shared<GlooShared>();
  shared->timeout = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0 + 0.5));
  if (shared->timeout.count() < 1) shared->timeout = std::chrono::milliseconds(1);

  int rank = 0, size = 1;
  bool found = false;
  const bool elastic_mode = elastic::Enabled();
  if (!elastic_mode) HVD_RETURN_IF_ERROR(RankAndSize(&rank, &size, &found));

  if (!LaunchedByEnv()) {
    if (elastic_mode) {
      return Status::Invalid(
          "Gloo: HVD_ELASTIC=1 needs hvdrun's rendezvous server (start the job "
          "with hvdrun --min-np/--max-np or --elastic)");
    }
    if (size > 1) {
      return Status::Invalid("Gloo: " + std::to_string(size) +
                             " ranks need hvdrun's rendezvous server, but "
                             "HVD_RENDEZVOUS_ADDR is not set (start the job with hvdrun)");
    }
    std::unique_ptr<GlooComm> comm;
    HVD_RETURN_IF_ERROR(GlooComm::Create(shared, "hvd/gloo/local", 0, 1, &comm));
    *out = std::move(comm);
    return Status::OK();
  }
  if (!found && !elastic_mode) {
    return Status::Invalid("Gloo: HVD_RENDEZVOUS_ADDR is set but HVD_RANK/HVD_SIZE are not");
  }

  std::unique_ptr<KVClient> client;
  HVD_RETURN_IF_ERROR(KVClient::ConnectFromEnvironment(seconds, &client));
  // Elastic: rank and size come from the launcher's newest round, and the
  // world's keys live under that round, so a world never mixes members of
  // two rounds (a dead worker's stale keys cannot be picked up).
  std::string round_part;
  if (elastic_mode) {
    elastic::Assignment a;
    HVD_RETURN_IF_ERROR(elastic::JoinNextRound(client.get(), &a));
    rank = a.rank;
    size = a.size;
    round_part = "elastic/round" + std::to_string(a.round) + "/";
  }
  auto store = std::make_shared<gloo_backend::KVStore>(std::move(client), shared->timeout);

  // Every init of the job needs fresh keys (hvd_shutdown + hvd_init reuses
  // the server). Each rank adds 1 to a shared counter; ranks of one init all
  // add before any rank can finish that init and start the next, so
  // (count-1)/size is the same generation number on every rank.
  const char* job = GetEnv("RENDEZVOUS_PREFIX");
  const std::string base =
      std::string("hvd/gloo/") + (job ? std::string(job) + "/" : "") + round_part;
  int64_t count = 0;
  HVD_RETURN_IF_ERROR(store->Add(base + "init_count", 1, &count));
  const int64_t generation = (count - 1) / size;
  const std::string prefix = base + "gen" + std::to_string(generation);

  ::gloo::transport::tcp::attr attr;
  HVD_RETURN_IF_ERROR(DeviceAttr(&attr));
  HVD_RETURN_IF_ERROR(gloo_backend::GlooGuard("device", "rank " + std::to_string(rank), [&] {
    shared->device = ::gloo::transport::tcp::CreateDevice(attr);
  }));
  shared->store = store;

  std::unique_ptr<GlooComm> comm;
  HVD_RETURN_IF_ERROR(GlooComm::Create(shared, prefix, rank, size, &comm));
  *out = std::move(comm);
  return Status::OK();
}

BackendEntry GlooBackendEntry() {
  return BackendEntry{"gloo", BackendChoice::kGloo, &LaunchedByEnv, &CreateGlooWorld};
}

}  // namespace hvd
