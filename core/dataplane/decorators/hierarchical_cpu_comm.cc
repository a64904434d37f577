#include "core/dataplane/decorators/hierarchical_cpu_comm.h"

#include <algorithm>

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

CommCaps HierarchicalCpuComm::caps() const {
  CommCaps c;
  c.stages_per_piece = true;
  c.overlaps_stages = concurrent_ && local_->size() > 1;
  return c;
}

void HierarchicalCpuComm::Tune(const CommTuning& tuning) {
  ForwardingComm::Tune(tuning);
  if (!tuning.allreduce_chunk_bytes) return;
  chunk_bytes_ = *tuning.allreduce_chunk_bytes;
  CommTuning chunk;
  chunk.allreduce_chunk_bytes = tuning.allreduce_chunk_bytes;
  local_->Tune(chunk);
  if (cross_) cross_->Tune(chunk);
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

Status HierarchicalCpuComm::DoAllreduce(const AllreduceOptions& a) {
  if (a.count <= 0) return Status::OK();
  const size_t esize = DataTypeSize(a.dt);
  if (a.count * static_cast<int64_t>(esize) < min_bytes_) return ForwardingComm::DoAllreduce(a);
  const int64_t chunk_bytes = chunk_bytes_ > 0 ? chunk_bytes_ : kDefaultChunkBytes;
  const Call call{static_cast<const uint8_t*>(a.in),
                  static_cast<uint8_t*>(a.out),
                  a.count,
                  std::max<int64_t>(1, chunk_bytes / static_cast<int64_t>(esize)),
                  esize,
                  a.dt,
                  a.op,
                  a.fill,
                  a.drain};
  if (local_->size() == 1) {
    // Alone on my host (so one share per host): only the cross step, in the
    // same chunks as the carriers of the other hosts.
    return AllreduceInPieces(a, call.chunk, [&](int64_t off, int64_t n) {
      const size_t at = static_cast<size_t>(off) * esize;
      return cross_->Allreduce({call.in + at, call.out + at, n, a.dt, a.op});
    });
  }
  const size_t slot = static_cast<size_t>((call.chunk + plan_.shares - 1) / plan_.shares) * esize;
  if (scratch_.size() < 2 * slot) scratch_.resize(2 * slot);
  return concurrent_ && a.count > call.chunk ? Pipelined(call) : Serial(a, call);
}

uint8_t* HierarchicalCpuComm::Slot(int64_t c) {
  return scratch_.data() + static_cast<size_t>(c % 2) * (scratch_.size() / 2);
}

int64_t HierarchicalCpuComm::Mine(int64_t n) const {
  return LocalCounts(n)[static_cast<size_t>(plan_.local_index)];
}

Status HierarchicalCpuComm::Scatter(const Call& call, int64_t c) {
  return local_->Reducescatter(call.in + call.offset(c), Slot(c), LocalCounts(call.size(c)),
                               call.dt, call.op);
}

Status HierarchicalCpuComm::Gather(const Call& call, int64_t c) {
  std::vector<int64_t> bytes = LocalCounts(call.size(c));
  for (auto& b : bytes) b *= static_cast<int64_t>(call.esize);
  return local_->Allgatherv(Slot(c), call.out + call.offset(c), bytes);
}

Status HierarchicalCpuComm::FillAndScatter(const Call& call, int64_t c) {
  if (call.fill) HVD_RETURN_IF_ERROR(call.fill(c * call.chunk, call.size(c)));
  return Scatter(call, c);
}

Status HierarchicalCpuComm::GatherAndDrain(const Call& call, int64_t c) {
  HVD_RETURN_IF_ERROR(Gather(call, c));
  return call.drain ? call.drain(c * call.chunk, call.size(c)) : Status::OK();
}

Status HierarchicalCpuComm::Serial(const AllreduceOptions& a, const Call& call) {
  return AllreduceInPieces(a, call.chunk, [&](int64_t off, int64_t n) {
    const int64_t c = off / call.chunk;
    HVD_RETURN_IF_ERROR(Scatter(call, c));
    const int64_t mine = Mine(n);
    if (mine > 0) HVD_RETURN_IF_ERROR(cross_->Allreduce({Slot(c), mine, call.dt, call.op}));
    return Gather(call, c);
  });
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
    s = FillAndScatter(call, c);
    const int64_t mine = Mine(call.size(c));
    if (s.ok() && mine > 0) {
      uint8_t* share = Slot(c);
      worker_->Post([this, share, mine, &call] {
        return cross_->Allreduce({share, mine, call.dt, call.op});
      });
      posted[c] = true;
    }
    if (s.ok() && c > 0) {
      s = collect(c - 1);
      if (s.ok()) s = GatherAndDrain(call, c - 1);
    }
  }
  if (s.ok()) {
    s = collect(chunks - 1);
    if (s.ok()) s = GatherAndDrain(call, chunks - 1);
  }
  // On failure, wait for what the worker still holds: it uses our buffers.
  while (worker_ && worker_->outstanding() > 0) worker_->Collect();
  return s;
}

void HierarchicalCpuComm::Abort() {
  if (cross_) cross_->Abort();
  ForwardingComm::Abort();
}

}  // namespace hvd
