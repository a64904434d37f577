#include "core/dataplane/build.h"

#include <dirent.h>

#include <algorithm>

#include "core/backends/registry.h"
#include "core/common/logging.h"
#include "core/dataplane/decorators/hierarchical_cpu_comm.h"
#include "core/dataplane/decorators/shm_comm.h"
#include "core/dataplane/decorators/tcp_ring_comm.h"

namespace hvd {
namespace {

// An RDMA-capable NIC (InfiniBand, RoCE, iWARP) on this host: MPI would
// carry the cross-host step over it, faster than sockets.
bool HasRdmaDevice() {
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir("/sys/class/infiniband"), ::closedir);
  if (!dir) return false;
  while (const dirent* e = ::readdir(dir.get())) {
    if (e->d_name[0] != '.') return true;
  }
  return false;
}

// A TcpRing over `comm`'s members (they decide together), or null where it
// is not to be used: under kAuto on MPI where some member has an RDMA NIC,
// and where a member cannot reach its neighbour (a warning says which);
// under kTcp that fails instead.
Status TryTcpRing(const Config& config, const std::string& bind_host, Comm* comm,
                  const std::vector<int>& set_ranks, std::unique_ptr<TcpRing>* ring) {
  const bool fallback = config.hierarchical_cross == CrossTransport::kAuto;
  if (fallback && comm->transport() == Transport::kMpi) {
    int32_t sockets_only = HasRdmaDevice() ? 0 : 1;
    HVD_RETURN_IF_ERROR(comm->Allreduce({&sockets_only, 1, DataType::kInt32, ReduceOp::kMin}));
    if (!sockets_only) return Status::OK();
  }
  std::vector<std::string> names;
  for (int r : set_ranks) names.push_back("rank " + std::to_string(r));
  // As Gloo bounds its operations: no progress for this long is an error.
  double timeout = config.peer_timeout_seconds;
  if (config.op_timeout_seconds > 0) timeout = std::min(timeout, config.op_timeout_seconds);
  // Trying costs at most 10 s at init where it may fall back (as the
  // negotiation channel's attempt).
  const Status s =
      TcpRing::Create(comm, bind_host, fallback ? std::min(timeout, 10.0) : timeout, names, ring);
  if (!s.ok()) {
    if (!fallback) {
      return Status(s.code(), "hierarchical allreduce: " + s.message() +
                                  " (HVD_HIERARCHICAL_CROSS=tcp; =auto falls back)");
    }
    HVD_LOG(kWarning) << "hierarchical allreduce: " << s.message() << "; the cross-host step "
                      << "runs on " << comm->backend_name()
                      << " instead (HVD_HIERARCHICAL_CROSS=backend skips the attempt)";
    ring->reset();
    return Status::OK();
  }
  (*ring)->set_timeout_s(timeout);
  return Status::OK();
}

// Route::kRingAcrossHosts: the set's allreduces of min_bytes or more on a
// TcpRing over all its ranks (the backend's below, and where it is off).
Status RingAcrossHosts(const Config& config, const BuildArgs& args, std::shared_ptr<Comm>* data,
                       DataPlan* plan) {
  std::vector<int> ranks((*data)->size());
  for (size_t r = 0; r < ranks.size(); ++r) ranks[r] = static_cast<int>(r);
  std::unique_ptr<TcpRing> ring;
  HVD_RETURN_IF_ERROR(TryTcpRing(config, args.bind_host, data->get(), ranks, &ring));
  if (!ring) {
    plan->route = Route::kBackend;
    plan->why = "the TCP ring could not be used";
    return Status::OK();
  }
  HVD_LOG(kInfo) << "hierarchical allreduce (" << args.tag << "): " << ranks.size()
                 << " hosts, one rank on each, from " << plan->min_bytes
                 << " bytes, across on a TCP ring";
  *data = std::make_shared<TcpRingComm>(*data, std::move(ring), plan->min_bytes);
  return Status::OK();
}

// Route::kHierarchical: a host-local Comm (shared memory where it can be),
// a cross-host one for the carriers of a share, and the decorator over them.
Status Hierarchy(const Config& config, const BuildArgs& args, std::shared_ptr<Comm>* data,
                 DataPlan* plan) {
  Comm& flat = **data;
  const HostPlan& hosts = plan->hosts;
  const std::string& tag = args.tag;
  std::unique_ptr<Comm> split, cross;
  HVD_RETURN_IF_ERROR(
      flat.Split(hosts.local_ranks, tag + ".hier.host" + std::to_string(hosts.host_index), &split));
  std::shared_ptr<Comm> local = std::move(split);
  std::unique_ptr<Comm> shm;
  if (plan->local_shm) {
    HVD_RETURN_IF_ERROR(
        TrySharedMemory(config, local, "hierarchical allreduce (" + tag + ")", &shm));
    if (shm) {
      local = std::move(shm);
    } else {
      plan->local_shm = false;
      plan->changes.push_back("no shared memory on this host (warning above)");
    }
  }
  if (hosts.carrier()) {
    HVD_RETURN_IF_ERROR(flat.Split(
        hosts.cross_ranks, tag + ".hier.cross" + std::to_string(hosts.local_index), &cross));
    // The cross step runs on the worker beside the host-local steps: it
    // must not spin (core/algorithms/mpi/mpi_ring_allreduce.h).
    CommTuning quiet;
    quiet.quiet_allreduce = true;
    cross->Tune(quiet);
  }
  bool on_tcp = false;
  if (plan->cross == CrossStep::kTcpRing) {
    std::unique_ptr<TcpRing> ring;
    HVD_RETURN_IF_ERROR(TryTcpRing(config, args.bind_host, cross.get(), hosts.cross_ranks, &ring));
    on_tcp = ring != nullptr;
    if (ring) {
      cross = std::make_unique<TcpRingComm>(std::move(cross), std::move(ring));
    } else {
      plan->cross =
          plan->backend == Transport::kMpi ? CrossStep::kQuietBackend : CrossStep::kBackend;
      plan->cross_may_fall_back = false;
    }
  }
  HVD_LOG(kInfo) << "hierarchical allreduce (" << tag << "): " << hosts.hosts << " hosts, "
                 << hosts.local_ranks.size() << " ranks on this one, " << hosts.shares
                 << " cross-host streams per host, from " << plan->min_bytes << " bytes, "
                 << (on_tcp  ? std::string("across on a TCP ring")
                     : cross ? std::string("across on ") + flat.backend_name()
                             : std::string("carrying no share"))
                 << (plan->pipelined ? "" : ", not pipelined");
  *data =
      std::make_shared<HierarchicalCpuComm>(*data, std::move(local), std::move(cross), hosts,
                                            plan->pipelined, plan->chunk_bytes, plan->min_bytes);
  return Status::OK();
}

}  // namespace

PlanInputs InputsFor(const Comm& data, const std::string& name, std::vector<std::string> hosts) {
  PlanInputs in;
  in.name = name;
  in.backend = data.transport();
  in.threads = in.backend == Transport::kGloo;
#ifdef HVD_HAVE_MPI
  if (in.backend == Transport::kMpi) in.threads = MpiThreadsSupported();
#endif
  in.hosts = std::move(hosts);
  in.rank = data.rank();
  return in;
}

Status TrySharedMemory(const Config& config, const std::shared_ptr<Comm>& backend,
                       const std::string& what, std::unique_ptr<Comm>* out) {
  out->reset();
  const Transport t = backend->transport();
  if (!config.shared_memory || backend->size() < 2 ||
      (t != Transport::kGloo && t != Transport::kMpi)) {
    return Status::OK();
  }
  // No progress for this long is an error: as Gloo bounds its operations;
  // on MPI, whose calls have no bound, the operation deadline (0: none,
  // and a member's exit is still seen at once).
  double timeout = config.op_timeout_seconds;
  if (t == Transport::kGloo) {
    timeout =
        timeout > 0 ? std::min(config.peer_timeout_seconds, timeout) : config.peer_timeout_seconds;
  }
  std::unique_ptr<ShmComm> shm;
  std::string why;
  // Gloo's allreduce over loopback TCP is never the faster path.
  const int64_t backend_min =
      t == Transport::kMpi && config.shared_memory_mpi_allreduce ? ShmComm::kBackendMinBytes : -1;
  HVD_RETURN_IF_ERROR(ShmComm::Create(backend, timeout, ShmComm::kDefaultSlotBytes,
                                      config.shared_memory_peer_reads, backend_min, &shm, &why));
  const char* name = t == Transport::kGloo ? "Gloo" : "MPI";
  if (!shm) {
    HVD_LOG(kWarning) << what << ": host-local collectives stay on " << name << ": " << why
                      << " (HVD_SHARED_MEMORY=0 skips the attempt)";
    return Status::OK();
  }
  HVD_LOG(kDebug) << what << ": " << backend->size() << " ranks, host-local collectives "
                  << "through shared memory"
                  << (shm->peer_reads()
                          ? ", large allreduces in huge pages reading the peers' memory"
                          : "");
  *out = std::move(shm);
  return Status::OK();
}

Status BuildDataPlane(const Config& config, const BuildArgs& args, std::shared_ptr<Comm>* data,
                      DataPlan* plan) {
  *plan = PlanDataPlane(config, args.inputs);
  if (config.hierarchical_allreduce && plan->ranks > 1 && !plan->hosts.usable &&
      plan->route != Route::kRingAcrossHosts) {
    // Every member sees the same hosts, so all take this branch together.
    HVD_LOG(kInfo) << "hierarchical allreduce not used (" << args.tag
                   << "): " << plan->hosts.reason;
  }
  switch (plan->route) {
    case Route::kSharedMemory: {
      std::unique_ptr<Comm> shm;
      HVD_RETURN_IF_ERROR(TrySharedMemory(config, *data, "process set " + args.tag, &shm));
      if (shm) {
        *data = std::move(shm);
      } else {
        plan->route = Route::kBackend;
        plan->why = "shared memory could not be set up (warning above)";
      }
      break;
    }
    case Route::kRingAcrossHosts:
      HVD_RETURN_IF_ERROR(RingAcrossHosts(config, args, data, plan));
      break;
    case Route::kHierarchical:
      HVD_RETURN_IF_ERROR(Hierarchy(config, args, data, plan));
      break;
    case Route::kAlone:
    case Route::kBackend:
      break;
  }
  HVD_LOG(kInfo) << plan->Describe();
  return Status::OK();
}

}  // namespace hvd
