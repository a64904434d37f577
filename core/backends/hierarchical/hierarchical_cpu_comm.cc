#include "core/backends/hierarchical/hierarchical_cpu_comm.h"

#include <dirent.h>

#include <algorithm>
#include <cstring>

#include "core/backends/registry.h"
#include "core/backends/shm/shm_setup.h"
#include "core/backends/tcp/tcp_ring_comm.h"
#include "core/common/logging.h"

namespace hvd {
namespace {

// Pipeline chunk when the set's chunk hint is 0 ("never split"): the
// pipeline needs pieces, and 4 MiB keeps its fill time short.
constexpr int64_t kDefaultChunkBytes = int64_t{4} << 20;

// `count` elements in `parts` blocks: the first count % parts get one more.
std::vector<int64_t> Blocks(int64_t count, int parts) {
  std::vector<int64_t> v(static_cast<size_t>(parts), count / parts);
  for (int64_t i = 0; i < count % parts; ++i) ++v[static_cast<size_t>(i)];
  return v;
}

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
  if (fallback && std::strcmp(comm->backend_name(), "MPI") == 0) {
    int32_t sockets_only = HasRdmaDevice() ? 0 : 1;
    HVD_RETURN_IF_ERROR(comm->Allreduce(&sockets_only, 1, DataType::kInt32, ReduceOp::kMin));
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

// One rank on each of several hosts: the hierarchy's only step is the one
// across hosts, so a set's allreduces of `min_bytes` or more run on a
// TcpRing over all its ranks (the backend's below, and where it is off).
Status RingAcrossHosts(const Config& config, const std::string& bind_host, const std::string& tag,
                       int64_t min_bytes, std::shared_ptr<Comm>* data) {
  std::vector<int> ranks((*data)->size());
  for (size_t r = 0; r < ranks.size(); ++r) ranks[r] = static_cast<int>(r);
  std::unique_ptr<TcpRing> ring;
  HVD_RETURN_IF_ERROR(TryTcpRing(config, bind_host, data->get(), ranks, &ring));
  if (!ring) return Status::OK();
  HVD_LOG(kInfo) << "hierarchical allreduce (" << tag << "): " << ranks.size()
                 << " hosts, one rank on each, from " << min_bytes
                 << " bytes, across on a TCP ring";
  *data = std::make_shared<TcpRingComm>(*data, std::move(ring), min_bytes);
  return Status::OK();
}

}  // namespace

HierarchicalCpuComm::HierarchicalCpuComm(std::shared_ptr<Comm> flat, std::shared_ptr<Comm> local,
                                         std::unique_ptr<Comm> cross, const HostPlan& plan,
                                         bool concurrent, int64_t chunk_bytes, int64_t min_bytes)
    : ForwardingComm(std::move(flat)),
      local_(std::move(local)),
      cross_(std::move(cross)),
      plan_(plan),
      concurrent_(concurrent),
      chunk_bytes_(chunk_bytes),
      min_bytes_(min_bytes) {}

void HierarchicalCpuComm::SetAllreduceChunkBytes(int64_t bytes) {
  chunk_bytes_ = bytes;
  ForwardingComm::SetAllreduceChunkBytes(bytes);
  local_->SetAllreduceChunkBytes(bytes);
  if (cross_) cross_->SetAllreduceChunkBytes(bytes);
}

std::vector<int64_t> HierarchicalCpuComm::LocalCounts(int64_t n) const {
  std::vector<int64_t> counts(plan_.local_ranks.size(), 0);
  const std::vector<int64_t> shares = Blocks(n, plan_.shares);
  std::copy(shares.begin(), shares.end(), counts.begin());
  return counts;
}

struct HierarchicalCpuComm::Call {
  const uint8_t* in;
  uint8_t* out;
  int64_t count;
  int64_t chunk;  // elements
  size_t esize;
  DataType dt;
  ReduceOp op;
  const Stage& fill;
  const Stage& drain;

  int64_t chunks() const { return (count + chunk - 1) / chunk; }
  int64_t size(int64_t c) const { return std::min(chunk, count - c * chunk); }
  size_t offset(int64_t c) const { return static_cast<size_t>(c * chunk) * esize; }
};

Status HierarchicalCpuComm::AllreduceStaged(const void* in, void* out, int64_t count, DataType dt,
                                            ReduceOp op, const Stage& fill, const Stage& drain) {
  if (count <= 0) return Status::OK();
  const size_t esize = DataTypeSize(dt);
  if (count * static_cast<int64_t>(esize) < min_bytes_) {
    return AllreduceStagedInTurn(inner(), in, out, count, dt, op, fill, drain);
  }
  const int64_t chunk_bytes = chunk_bytes_ > 0 ? chunk_bytes_ : kDefaultChunkBytes;
  const Call call{static_cast<const uint8_t*>(in),
                  static_cast<uint8_t*>(out),
                  count,
                  std::max<int64_t>(1, chunk_bytes / static_cast<int64_t>(esize)),
                  esize,
                  dt,
                  op,
                  fill,
                  drain};
  if (local_->size() == 1) {
    // Alone on my host (so one share per host): only the cross step, in the
    // same chunks as the carriers of the other hosts.
    for (int64_t c = 0; c < call.chunks(); ++c) {
      const int64_t off = c * call.chunk, n = call.size(c);
      if (fill) HVD_RETURN_IF_ERROR(fill(off, n));
      // MPI refuses aliased buffers unless the call is in place.
      HVD_RETURN_IF_ERROR(in == out ? cross_->Allreduce(call.out + call.offset(c), n, dt, op)
                                    : cross_->AllreduceFrom(call.in + call.offset(c),
                                                            call.out + call.offset(c), n, dt, op));
      if (drain) HVD_RETURN_IF_ERROR(drain(off, n));
    }
    return Status::OK();
  }
  const size_t slot = static_cast<size_t>((call.chunk + plan_.shares - 1) / plan_.shares) * esize;
  if (scratch_.size() < 2 * slot) scratch_.resize(2 * slot);
  return concurrent_ && count > call.chunk ? Pipelined(call) : Serial(call);
}

uint8_t* HierarchicalCpuComm::Slot(int64_t c) {
  return scratch_.data() + static_cast<size_t>(c % 2) * (scratch_.size() / 2);
}

int64_t HierarchicalCpuComm::Mine(int64_t n) const {
  return LocalCounts(n)[static_cast<size_t>(plan_.local_index)];
}

Status HierarchicalCpuComm::Scatter(const Call& call, int64_t c) {
  const int64_t n = call.size(c);
  if (call.fill) HVD_RETURN_IF_ERROR(call.fill(c * call.chunk, n));
  return local_->Reducescatter(call.in + call.offset(c), Slot(c), LocalCounts(n), call.dt, call.op);
}

Status HierarchicalCpuComm::Gather(const Call& call, int64_t c) {
  const int64_t n = call.size(c);
  std::vector<int64_t> bytes = LocalCounts(n);
  for (auto& b : bytes) b *= static_cast<int64_t>(call.esize);
  HVD_RETURN_IF_ERROR(local_->Allgatherv(Slot(c), call.out + call.offset(c), bytes));
  return call.drain ? call.drain(c * call.chunk, n) : Status::OK();
}

Status HierarchicalCpuComm::Serial(const Call& call) {
  for (int64_t c = 0; c < call.chunks(); ++c) {
    HVD_RETURN_IF_ERROR(Scatter(call, c));
    const int64_t mine = Mine(call.size(c));
    if (mine > 0) HVD_RETURN_IF_ERROR(cross_->Allreduce(Slot(c), mine, call.dt, call.op));
    HVD_RETURN_IF_ERROR(Gather(call, c));
  }
  return Status::OK();
}

// Chunk c: fill and reduce-scatter into slot c % 2, cross-host allreduce of
// the slot on the worker, allgather from it and drain. The host-local calls
// go in the order RS(0), RS(1), AG(0), RS(2), AG(1), ... on every local
// rank, carrier or not, so the stages and the host-local steps of chunks
// c - 1 and c + 1 run while chunk c crosses the hosts.
Status HierarchicalCpuComm::Pipelined(const Call& call) {
  if (!worker_ && plan_.carrier()) worker_ = std::make_unique<PipelineWorker>();
  const int64_t chunks = call.chunks();
  // Collects the cross step of chunk c (posted only where I carry a share).
  std::vector<bool> posted(static_cast<size_t>(chunks), false);
  auto collect = [&](int64_t c) { return posted[c] ? worker_->Collect() : Status::OK(); };
  Status s;
  for (int64_t c = 0; c < chunks && s.ok(); ++c) {
    s = Scatter(call, c);
    const int64_t mine = Mine(call.size(c));
    if (s.ok() && mine > 0) {
      uint8_t* share = Slot(c);
      worker_->Post(
          [this, share, mine, &call] { return cross_->Allreduce(share, mine, call.dt, call.op); });
      posted[c] = true;
    }
    if (s.ok() && c > 0) {
      s = collect(c - 1);
      if (s.ok()) s = Gather(call, c - 1);
    }
  }
  if (s.ok()) {
    s = collect(chunks - 1);
    if (s.ok()) s = Gather(call, chunks - 1);
  }
  // On failure, wait for what the worker still holds: it uses our buffers.
  while (worker_ && worker_->outstanding() > 0) worker_->Collect();
  return s;
}

void HierarchicalCpuComm::Abort() {
  if (cross_) cross_->Abort();
  ForwardingComm::Abort();
}

Status MaybeHierarchicalCpu(const Config& config, const std::string& host_key,
                            const std::string& bind_host, const std::string& tag,
                            std::shared_ptr<Comm>* data) {
  if (config.hierarchical_allreduce_fixed && !config.hierarchical_allreduce) return Status::OK();
  Comm& flat = **data;
  if (flat.size() < 2) return Status::OK();
  // Automatic on Gloo, whose ring sends 2(P-1)/P of the bytes over every
  // host link, and on MPI with MPI_THREAD_MULTIPLE. Open MPI's
  // large-message allreduce already crosses hosts with as few bytes, but
  // runs its steps in turn and busy-polls; the hierarchy overlaps the steps
  // inside the host with the link and its cross step sleeps while it waits
  // (MpiRingAllreduce), so the link stays busy (docs/scaling.md). Without
  // threads its steps would run in turn as well:
  // HVD_HIERARCHICAL_ALLREDUCE=1 asks for it anyway.
  const bool gloo = std::strcmp(flat.backend_name(), "GLOO") == 0;
  const bool mpi = std::strcmp(flat.backend_name(), "MPI") == 0;
  bool threads = gloo;
#ifdef HVD_HAVE_MPI
  if (mpi) threads = MpiThreadsSupported();
#endif
  if (!config.hierarchical_allreduce_fixed && !(gloo || (mpi && threads))) return Status::OK();
  std::vector<std::string> hosts;
  HVD_RETURN_IF_ERROR(AllgatherBytes(flat, host_key, &hosts));
  const HostPlan plan = PlanHosts(hosts, flat.rank());
  const int64_t min_bytes = config.hierarchical_allreduce_min_bytes >= 0
                                ? config.hierarchical_allreduce_min_bytes
                                : flat.hierarchy_min_bytes();
  // With one rank per host the ring replaces the backend's allreduce: on
  // MPI (whose allreduce runs its steps in turn) by default, since the ring
  // keeps the link busy; Gloo's own ring is a ring already, so only on `tcp`.
  if (plan.one_rank_per_host && (config.hierarchical_cross == CrossTransport::kTcp ||
                                 (mpi && config.hierarchical_cross == CrossTransport::kAuto))) {
    return RingAcrossHosts(config, bind_host, tag, min_bytes, data);
  }
  if (!plan.usable) {
    // Every member sees the same hosts, so all take this branch together.
    if (config.hierarchical_allreduce) {
      HVD_LOG(kInfo) << "hierarchical allreduce not used (" << tag << "): " << plan.reason;
    }
    return Status::OK();
  }
  std::unique_ptr<Comm> split, cross;
  HVD_RETURN_IF_ERROR(
      flat.Split(plan.local_ranks, tag + ".hier.host" + std::to_string(plan.host_index), &split));
  std::shared_ptr<Comm> local = std::move(split);
  std::unique_ptr<Comm> shm;
  HVD_RETURN_IF_ERROR(TrySharedMemory(config, local, "hierarchical allreduce (" + tag + ")", &shm));
  if (shm) local = std::move(shm);
  if (plan.carrier()) {
    HVD_RETURN_IF_ERROR(flat.Split(plan.cross_ranks,
                                   tag + ".hier.cross" + std::to_string(plan.local_index), &cross));
  }
  const bool concurrent = threads;
#ifdef HVD_HAVE_MPI
  // The cross step runs on the worker beside the host-local steps: it must
  // not spin (mpi_ring_allreduce.h).
  if (mpi && cross) MpiUseRingAllreduce(cross.get());
#endif
  bool on_tcp = false;
  if (cross && config.hierarchical_cross != CrossTransport::kBackend) {
    std::unique_ptr<TcpRing> ring;
    HVD_RETURN_IF_ERROR(TryTcpRing(config, bind_host, cross.get(), plan.cross_ranks, &ring));
    on_tcp = ring != nullptr;
    if (ring) cross = std::make_unique<TcpRingComm>(std::move(cross), std::move(ring));
  }
  HVD_LOG(kInfo) << "hierarchical allreduce (" << tag << "): " << plan.hosts << " hosts, "
                 << plan.local_ranks.size() << " ranks on this one, " << plan.shares
                 << " cross-host streams per host, from " << min_bytes << " bytes, "
                 << (on_tcp  ? std::string("across on a TCP ring")
                     : cross ? std::string("across on ") + flat.backend_name()
                             : std::string("carrying no share"))
                 << (concurrent ? "" : ", not pipelined");
  *data =
      std::make_shared<HierarchicalCpuComm>(*data, std::move(local), std::move(cross), plan,
                                            concurrent, config.allreduce_chunk_bytes, min_bytes);
  return Status::OK();
}

}  // namespace hvd
