#include "core/backends/gloo/gloo_world.h"

#include <gloo/transport/tcp/attr.h>
#include <gloo/transport/tcp/device.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "core/backends/gloo/gloo_comm.h"
#include "core/backends/gloo/gloo_error.h"
#include "core/backends/gloo/gloo_store.h"
#include "core/rendezvous/elastic.h"
#include "core/rendezvous/kv_client.h"
#include "core/rendezvous/slurm_store.h"
#include "core/rendezvous/socket_util.h"

namespace hvd {
namespace {

// Which interface/address Gloo listens on: HVD_GLOO_IFACE, else
// HVD_GLOO_HOSTNAME, else the address that reaches the rendezvous server.
// (HVD_HOSTNAME is hvdrun's label for the host, e.g. a namespace name, and
// need not resolve.)
Status DeviceAttr(const Config& config, const RendezvousEndpoint& store,
                  ::gloo::transport::tcp::attr* attr) {
  if (!config.listen_iface.empty()) {
    attr->iface = config.listen_iface;
    return Status::OK();
  }
  if (!config.listen_hostname.empty()) {
    attr->hostname = config.listen_hostname;
    return Status::OK();
  }
  if (!store.set) {
    attr->hostname = "127.0.0.1";
    return Status::OK();
  }
  Status st = rendezvous::LocalAddressTowards(store.addr, store.port.empty() ? "0" : store.port,
                                              &attr->hostname);
  if (!st.ok()) return Status::Invalid("Gloo: HVD_RENDEZVOUS_ADDR: " + st.message());
  return st;
}

// The address the negotiation channel listens on: the one Gloo's device
// uses (for an interface, its first IPv4 address).
std::string ControlHost(const ::gloo::transport::tcp::attr& attr) {
  if (attr.iface.empty()) return attr.hostname;
  std::string ip = "127.0.0.1";
  rendezvous::InterfaceAddress(attr.iface, &ip);
  return ip;
}

// hvdrun, or srun without PMI (where MPI cannot start, even for one task).
bool LaunchedByEnv(const LaunchEnv& env) {
  return env.rendezvous.set || env.slurm.active;
}

// hvdrun's store, or under srun without PMI task 0's; one task needs none.
bool HasStore(const LaunchEnv& env) {
  return env.rendezvous.set || (env.slurm.active && env.size > 1);
}

// The launcher's store: hvdrun's, or under srun without PMI task 0's.
Status ConnectStore(const Config& config, int rank, double seconds, RendezvousEndpoint* endpoint,
                    std::unique_ptr<KVClient>* client) {
  const LaunchEnv& env = config.launch;
  if (env.rendezvous.set) {
    *endpoint = env.rendezvous;
    return KVClient::Connect(env.rendezvous, seconds, client);
  }
  if (config.elastic) {
    return Status::Invalid(
        "Gloo: HVD_ELASTIC=1 needs hvdrun's rendezvous server; inside a Slurm allocation start "
        "the job with hvdrun --min-np/--max-np, not srun");
  }
  return ConnectSlurmStore(env.slurm, env.host, rank, seconds, endpoint, client);
}

// A world of one rank without a rendezvous store: every collective is a
// local copy. Anything more needs hvdrun.
Status CreateLocalWorld(const Config& config, std::shared_ptr<GlooShared> shared,
                        std::unique_ptr<Comm>* out) {
  if (config.elastic) {
    return Status::Invalid(
        "Gloo: HVD_ELASTIC=1 needs hvdrun's rendezvous server (start the job "
        "with hvdrun --min-np/--max-np or --elastic)");
  }
  if (config.launch.size > 1) {
    return Status::Invalid("Gloo: " + std::to_string(config.launch.size) +
                           " ranks need hvdrun's rendezvous server, but "
                           "HVD_RENDEZVOUS_ADDR is not set (start the job with hvdrun)");
  }
  std::unique_ptr<GlooComm> comm;
  HVD_RETURN_IF_ERROR(GlooComm::Create(std::move(shared), "hvd/gloo/local", 0, 1, &comm));
  *out = std::move(comm);
  return Status::OK();
}

// Where this world's keys live in the store: every init of the job needs
// fresh keys (hvd_shutdown + hvd_init reuses the server). Each rank adds 1
// to a shared counter; ranks of one init all add before any rank can finish
// that init and start the next, so (count-1)/size is the same generation
// number on every rank. Elastic worlds live under their round, so a world
// never mixes members of two rounds.
Status WorldPrefix(const Config& config, gloo_backend::KVStore* store, int size,
                   int64_t elastic_round, std::string* prefix) {
  const std::string& job = config.launch.rendezvous_prefix;
  std::string base = "hvd/gloo/" + (job.empty() ? std::string() : job + "/");
  if (elastic_round >= 0) base += "elastic/round" + std::to_string(elastic_round) + "/";
  int64_t count = 0;
  HVD_RETURN_IF_ERROR(store->Add(base + "init_count", 1, &count));
  *prefix = base + "gen" + std::to_string((count - 1) / size);
  return Status::OK();
}

Status CreateWorld(const Config& config, std::unique_ptr<Comm>* out) {
  auto shared = std::make_shared<GlooShared>();
  const double seconds = config.peer_timeout_seconds;
  shared->timeout = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0 + 0.5));
  if (shared->timeout.count() < 1) shared->timeout = std::chrono::milliseconds(1);
  shared->host = config.launch.host;
  shared->op_timeout = shared->timeout;
  if (config.op_timeout_seconds > 0 && config.op_timeout_seconds < seconds) {
    shared->op_timeout =
        std::chrono::milliseconds(static_cast<int64_t>(config.op_timeout_seconds * 1000.0 + 0.5));
  }

  int rank = config.launch.rank, size = config.launch.size;
  if (!config.elastic && !config.launch.rank_error.ok()) {
    return Status(config.launch.rank_error.code(), "Gloo: " + config.launch.rank_error.message());
  }
  if (!HasStore(config.launch)) return CreateLocalWorld(config, shared, out);
  if (!config.launch.has_rank && !config.elastic) {
    return Status::Invalid("Gloo: HVD_RENDEZVOUS_ADDR is set but HVD_RANK/HVD_SIZE are not");
  }

  std::unique_ptr<KVClient> client;
  RendezvousEndpoint endpoint;
  HVD_RETURN_IF_ERROR(ConnectStore(config, rank, seconds, &endpoint, &client));
  // Elastic: rank and size come from the launcher's newest round.
  int64_t round = -1;
  if (config.elastic) {
    elastic::Assignment a;
    HVD_RETURN_IF_ERROR(elastic::JoinNextRound(client.get(), config.launch.worker_id,
                                               config.elastic_timeout_seconds, &a));
    rank = a.rank;
    size = a.size;
    round = a.round;
    HVD_RETURN_IF_ERROR(elastic::StartHeartbeat(endpoint, config.launch.worker_id,
                                                config.elastic_liveness_seconds));
  }
  auto store = std::make_shared<gloo_backend::KVStore>(std::move(client), shared->timeout);
  std::string prefix;
  HVD_RETURN_IF_ERROR(WorldPrefix(config, store.get(), size, round, &prefix));

  ::gloo::transport::tcp::attr attr;
  HVD_RETURN_IF_ERROR(DeviceAttr(config, endpoint, &attr));
  HVD_RETURN_IF_ERROR(gloo_backend::GlooGuard("device", "rank " + std::to_string(rank), [&] {
    shared->device = ::gloo::transport::tcp::CreateDevice(attr);
  }));
  shared->store = store;
  shared->control_host = ControlHost(attr);

  std::unique_ptr<GlooComm> comm;
  HVD_RETURN_IF_ERROR(GlooComm::Create(shared, prefix, rank, size, &comm));
  // Every task has read the Slurm store's file by now (they all met on it).
  if (!config.launch.rendezvous.set && rank == 0) RemoveSlurmStoreFile(config.launch.slurm);
  *out = std::move(comm);
  return Status::OK();
}

}  // namespace

Status CreateGlooWorld(const CommInitArgs& args, std::unique_ptr<Comm>* out) {
  if (args.config != nullptr) return CreateWorld(*args.config, out);
  Config config;
  HVD_RETURN_IF_ERROR(Config::FromEnvironment(&config));
  return CreateWorld(config, out);
}

BackendEntry GlooBackendEntry() {
  return BackendEntry{"gloo", BackendChoice::kGloo, &LaunchedByEnv, &CreateGlooWorld};
}

}  // namespace hvd
