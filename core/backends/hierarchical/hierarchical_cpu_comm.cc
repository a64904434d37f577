#include "core/backends/hierarchical/hierarchical_cpu_comm.h"

#include <algorithm>
#include <cstring>

#include "core/backends/registry.h"
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

}  // namespace

HierarchicalCpuComm::HierarchicalCpuComm(std::shared_ptr<Comm> flat, std::unique_ptr<Comm> local,
                                         std::unique_ptr<Comm> cross, const HostPlan& plan,
                                         bool concurrent, int64_t chunk_bytes)
    : ForwardingComm(std::move(flat)),
      local_(std::move(local)),
      cross_(std::move(cross)),
      plan_(plan),
      concurrent_(concurrent),
      chunk_bytes_(chunk_bytes) {}

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

Status HierarchicalCpuComm::AllreduceFrom(const void* in, void* out, int64_t count, DataType dt,
                                          ReduceOp op) {
  if (count <= 0) return Status::OK();
  const size_t esize = DataTypeSize(dt);
  const int64_t chunk_bytes = chunk_bytes_ > 0 ? chunk_bytes_ : kDefaultChunkBytes;
  const int64_t chunk = std::max<int64_t>(1, chunk_bytes / static_cast<int64_t>(esize));
  const auto* src = static_cast<const uint8_t*>(in);
  auto* dst = static_cast<uint8_t*>(out);
  if (local_->size() == 1) {
    // Alone on my host (so one share per host): only the cross step, in the
    // same chunks as the carriers of the other hosts.
    for (int64_t off = 0; off < count; off += chunk) {
      const int64_t n = std::min(chunk, count - off);
      // MPI refuses aliased buffers unless the call is in place.
      HVD_RETURN_IF_ERROR(
          in == out ? cross_->Allreduce(dst + off * esize, n, dt, op)
                    : cross_->AllreduceFrom(src + off * esize, dst + off * esize, n, dt, op));
    }
    return Status::OK();
  }
  const size_t slot = static_cast<size_t>((chunk + plan_.shares - 1) / plan_.shares) * esize;
  if (scratch_.size() < 2 * slot) scratch_.resize(2 * slot);
  if (concurrent_ && count > chunk) return Pipelined(src, dst, count, chunk, esize, dt, op);
  for (int64_t off = 0; off < count; off += chunk) {
    const std::vector<int64_t> counts = LocalCounts(std::min(chunk, count - off));
    const int64_t mine = counts[static_cast<size_t>(plan_.local_index)];
    HVD_RETURN_IF_ERROR(local_->Reducescatter(src + off * esize, scratch_.data(), counts, dt, op));
    if (mine > 0) HVD_RETURN_IF_ERROR(cross_->Allreduce(scratch_.data(), mine, dt, op));
    std::vector<int64_t> bytes(counts.size());
    for (size_t k = 0; k < counts.size(); ++k) bytes[k] = counts[k] * static_cast<int64_t>(esize);
    HVD_RETURN_IF_ERROR(local_->Allgatherv(scratch_.data(), dst + off * esize, bytes));
  }
  return Status::OK();
}

// Chunk c: reduce-scatter into slot c % 2, cross-host allreduce of the slot
// on the worker, allgather from it. The host-local calls go in the order
// RS(0), RS(1), AG(0), RS(2), AG(1), ... on every local rank, carrier or not.
Status HierarchicalCpuComm::Pipelined(const uint8_t* src, uint8_t* dst, int64_t count,
                                      int64_t chunk, size_t esize, DataType dt, ReduceOp op) {
  if (!worker_ && plan_.carrier()) worker_ = std::make_unique<PipelineWorker>();
  const size_t slot = scratch_.size() / 2;
  const int64_t chunks = (count + chunk - 1) / chunk;
  auto counts_of = [&](int64_t c) { return LocalCounts(std::min(chunk, count - c * chunk)); };
  auto gather = [&](int64_t c) {
    const std::vector<int64_t> counts = counts_of(c);
    std::vector<int64_t> bytes(counts.size());
    for (size_t k = 0; k < counts.size(); ++k) bytes[k] = counts[k] * static_cast<int64_t>(esize);
    return local_->Allgatherv(scratch_.data() + (c % 2) * slot, dst + c * chunk * esize, bytes);
  };
  // Collects the cross step of chunk c (posted only where I carry a share).
  std::vector<bool> posted(static_cast<size_t>(chunks), false);
  auto collect = [&](int64_t c) { return posted[c] ? worker_->Collect() : Status::OK(); };
  Status s;
  for (int64_t c = 0; c < chunks && s.ok(); ++c) {
    const std::vector<int64_t> counts = counts_of(c);
    const int64_t mine = counts[static_cast<size_t>(plan_.local_index)];
    uint8_t* share = scratch_.data() + (c % 2) * slot;
    s = local_->Reducescatter(src + c * chunk * esize, share, counts, dt, op);
    if (s.ok() && mine > 0) {
      worker_->Post([this, share, mine, dt, op] { return cross_->Allreduce(share, mine, dt, op); });
      posted[c] = true;
    }
    if (s.ok() && c > 0) {
      s = collect(c - 1);
      if (s.ok()) s = gather(c - 1);
    }
  }
  if (s.ok()) {
    s = collect(chunks - 1);
    if (s.ok()) s = gather(chunks - 1);
  }
  // On failure, wait for what the worker still holds: it uses our buffers.
  while (worker_ && worker_->outstanding() > 0) worker_->Collect();
  return s;
}

Status MaybeHierarchicalCpu(const Config& config, const std::string& host_key,
                            const std::string& tag, std::shared_ptr<Comm>* data) {
  if (config.hierarchical_allreduce_fixed && !config.hierarchical_allreduce) return Status::OK();
  Comm& flat = **data;
  if (flat.size() < 3) return Status::OK();  // two ranks: nothing to group
  // Automatic on Gloo, whose ring sends 2(P-1)/P of the bytes over every
  // host link, and on MPI with MPI_THREAD_MULTIPLE. Open MPI's
  // large-message allreduce already crosses hosts with as few bytes, but
  // runs its steps in turn and busy-polls; the hierarchy overlaps the steps
  // inside the host with the link and its cross step sleeps while it waits
  // (MpiRingAllreduce), which measured 1.5-1.8x faster on 1 Gbit/s links
  // (docs/scaling.md). Without threads its steps would run in turn as well:
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
  if (!plan.usable) {
    // Every member sees the same hosts, so all take this branch together.
    if (config.hierarchical_allreduce) {
      HVD_LOG(kInfo) << "hierarchical allreduce not used (" << tag << "): " << plan.reason;
    }
    return Status::OK();
  }
  std::unique_ptr<Comm> local, cross;
  HVD_RETURN_IF_ERROR(
      flat.Split(plan.local_ranks, tag + ".hier.host" + std::to_string(plan.host_index), &local));
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
  HVD_LOG(kInfo) << "hierarchical allreduce (" << tag << "): " << plan.hosts << " hosts, "
                 << plan.local_ranks.size() << " ranks on this one, " << plan.shares
                 << " cross-host streams per host" << (concurrent ? "" : ", not pipelined");
  *data = std::make_shared<HierarchicalCpuComm>(*data, std::move(local), std::move(cross), plan,
                                                concurrent, config.allreduce_chunk_bytes);
  return Status::OK();
}

}  // namespace hvd
