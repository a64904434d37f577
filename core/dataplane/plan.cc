#include "core/dataplane/plan.h"

#include "core/backends/crossovers.h"

namespace hvd {
namespace {

bool HostBackend(Transport t) {
  return t == Transport::kMpi || t == Transport::kGloo;
}

// Several hosts: the hierarchy, a ring across the hosts, or the backend.
void PlanAcrossHosts(const Config& config, const PlanInputs& in, DataPlan* p) {
  const bool gloo = in.backend == Transport::kGloo, mpi = in.backend == Transport::kMpi;
  if (config.hierarchical_allreduce_fixed && !config.hierarchical_allreduce) {
    p->why = "HVD_HIERARCHICAL_ALLREDUCE=0";
    return;
  }
  // Automatic on Gloo, whose ring sends 2(P-1)/P of the bytes over every
  // host link, and on MPI with MPI_THREAD_MULTIPLE. Open MPI's
  // large-message allreduce already crosses hosts with as few bytes, but
  // runs its steps in turn and busy-polls; the hierarchy overlaps the steps
  // inside the host with the link and its cross step sleeps while it waits
  // (MpiRingAllreduce), so the link stays busy (docs/scaling.md). Without
  // threads its steps would run in turn as well:
  // HVD_HIERARCHICAL_ALLREDUCE=1 asks for it anyway.
  if (!config.hierarchical_allreduce_fixed && !(gloo || (mpi && in.threads))) {
    p->why = mpi ? "no MPI_THREAD_MULTIPLE; HVD_HIERARCHICAL_ALLREDUCE=1 asks for the hierarchy"
                 : "no hierarchy on this backend unless HVD_HIERARCHICAL_ALLREDUCE=1";
    return;
  }
  p->min_bytes = HierarchyMinBytes(config, in.backend);
  const CrossTransport cross = config.hierarchical_cross;
  // With one rank per host the ring replaces the backend's allreduce: on
  // MPI (whose allreduce runs its steps in turn) by default, since the ring
  // keeps the link busy; Gloo's own ring is a ring already, so only on `tcp`.
  if (p->hosts.one_rank_per_host &&
      (cross == CrossTransport::kTcp || (mpi && cross == CrossTransport::kAuto))) {
    p->route = Route::kRingAcrossHosts;
    p->cross = CrossStep::kTcpRing;
    p->cross_may_fall_back = cross == CrossTransport::kAuto;
    return;
  }
  if (!p->hosts.usable) {
    p->why = "no hierarchy: " + p->hosts.reason;
    return;
  }
  p->route = Route::kHierarchical;
  p->local_shm = config.shared_memory && HostBackend(in.backend) && p->hosts.local_ranks.size() > 1;
  p->pipelined = in.threads;
  p->chunk_bytes = config.allreduce_chunk_bytes;
  if (!p->hosts.carrier()) return;
  if (cross != CrossTransport::kBackend) {
    p->cross = CrossStep::kTcpRing;
    p->cross_may_fall_back = cross == CrossTransport::kAuto;
  } else {
    p->cross = mpi ? CrossStep::kQuietBackend : CrossStep::kBackend;
  }
}

std::string Plural(int n, const char* what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

// "tcp ring (mpi where ...)": the cross-host step, as the plan names it.
std::string CrossName(const DataPlan& p) {
  const std::string b = TransportName(p.backend);
  switch (p.cross) {
    case CrossStep::kNone:
    case CrossStep::kBackend:
      return b;
    case CrossStep::kQuietBackend:
      return b + " ring";
    case CrossStep::kTcpRing:
      break;
  }
  if (!p.cross_may_fall_back) return "tcp ring";
  return "tcp ring (" + b +
         (p.backend == Transport::kMpi ? " where a host has an RDMA NIC or" : " where") +
         " a peer is unreachable)";
}

std::string RouteText(const DataPlan& p) {
  const std::string b = TransportName(p.backend);
  // Gloo's crossover is "up to 64 KiB": say it so, not "< 65537 B".
  const bool up_to = p.min_bytes > 1 && ByteSize(p.min_bytes - 1).find(" B") == std::string::npos;
  const std::string below =
      up_to ? "<= " + ByteSize(p.min_bytes - 1) : "< " + ByteSize(p.min_bytes);
  const std::string above =
      up_to ? "> " + ByteSize(p.min_bytes - 1) : ">= " + ByteSize(p.min_bytes);
  const std::string small = p.min_bytes > 0 ? "allreduce " + below + ": " + b + "; " : "";
  const std::string large = p.min_bytes > 0 ? "allreduce " + above + ": " : "allreduce: ";
  const std::string rest = "; every other collective: " + b;
  switch (p.route) {
    case Route::kAlone:
      return "nothing crosses a wire (each output is its input, scaled)";
    case Route::kBackend:
      return "every collective on " + b + (p.why.empty() ? "" : " (" + p.why + ")");
    case Route::kSharedMemory:
      return "allreduce (gathered straight from the tensors, no fusion buffer), reduce-scatter, "
             "allgather, broadcast, alltoall: shm; barrier and set-up: " +
             b;
    case Route::kRingAcrossHosts:
      return small + large + CrossName(p) + rest;
    case Route::kHierarchical:
      break;
  }
  const std::string local = p.local_shm ? "shm" : b;
  const int64_t chunk = p.chunk_bytes > 0 ? p.chunk_bytes : int64_t{4} << 20;
  const std::string cross = p.cross == CrossStep::kNone
                                ? std::string("the carriers' cross-host step")
                                : CrossName(p) + " across hosts";
  return small + large + local + " reduce-scatter -> " + cross + " (" +
         Plural(p.hosts.shares, "stream") + " per host) -> " + local + " allgather, " +
         (p.pipelined ? "pipelined in " + ByteSize(chunk) + " chunks" : "in turn") + rest;
}

}  // namespace

int64_t HierarchyMinBytes(const Config& config, Transport backend) {
  if (config.hierarchical_allreduce_min_bytes >= 0) return config.hierarchical_allreduce_min_bytes;
  switch (backend) {
    case Transport::kMpi:
      return kMpiHierarchyMinBytes;
    case Transport::kGloo:
      return kGlooBcubeMaxBytes + 1;
    default:
      return 0;
  }
}

DataPlan PlanDataPlane(const Config& config, const PlanInputs& in) {
  DataPlan p;
  p.name = in.name;
  p.backend = in.backend;
  p.ranks = static_cast<int>(in.hosts.size());
  p.hosts = PlanHosts(in.hosts, in.rank);
  if (p.ranks < 2) {
    p.route = Route::kAlone;
    return p;
  }
  if (p.hosts.hosts > 1) {
    PlanAcrossHosts(config, in, &p);
    return p;
  }
  if (config.hierarchical_allreduce) p.why = "no hierarchy: " + p.hosts.reason;
  if (!HostBackend(in.backend)) return p;
  if (!config.shared_memory) {
    p.why = "HVD_SHARED_MEMORY=0";
    return p;
  }
  p.route = Route::kSharedMemory;
  return p;
}

std::string DataPlan::Describe() const {
  std::string s = name + " (" + TransportName(backend) + ", " + Plural(ranks, "rank");
  if (ranks > 1) s += " on " + Plural(hosts.hosts, "host");
  s += "): " + RouteText(*this);
  for (const auto& c : changes) s += "; " + c;
  return s;
}

std::string ByteSize(int64_t bytes) {
  if (bytes >= (int64_t{1} << 20) && bytes % (int64_t{1} << 20) == 0) {
    return std::to_string(bytes >> 20) + " MiB";
  }
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " B";
}

}  // namespace hvd
