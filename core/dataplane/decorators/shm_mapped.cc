// ShmComm's allreduce of tensors in shared buffers (shared_buffers.h): every
// member's tensors lie in memory the others can map, so nothing goes
// through the slots.
//
// Before the call's first barrier each member writes its table (each
// region's input and output as buffer and offset) into its slot of the
// call's round and publishes how many entries it holds, or -1 when its
// tensors are not all in shared buffers; shm_shared.cc comes here only when
// every member published a table. After that barrier each member maps the
// others' buffers (once; again after a peer freed one), reduces its share
// block by block from its own input and each other's, and writes the result
// into every member's output; a second barrier ends the call. Each member
// reads every member's input of its share once and writes every member's
// output of it once: 2 bytes through memory per allreduced byte, where the
// slots take 4. Results going out of place in a call of StreamingStoreBytes()
// or more are written with streaming stores, as through the slots
// (shm_shared.cc): a plain store would first read each line of the output
// from memory. A member that cannot map a peer's buffer still meets the
// second barrier, and then every member fails the call.
#include <algorithm>
#include <cstring>
#include <string>

#include "core/common/reduce.h"
#include "core/common/traffic.h"
#include "core/dataplane/decorators/shm_comm.h"
#include "core/dataplane/decorators/shm_regions.h"

namespace hvd {
namespace {

using shm_regions::At;
using shm_regions::Starts;
using shm_regions::Walk;

// A block of my share: in L1 between its reduction and its copies out.
constexpr int64_t kBlockBytes = 16 << 10;

uint64_t Addr(const uint8_t* p) {
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p));
}

}  // namespace

struct ShmComm::MappedEntry {
  SharedRef in, out;
  int64_t n;
};

int64_t ShmComm::PublishMapped(const std::vector<DirectRegion>& regions, int64_t es,
                               int64_t parity) {
  int64_t entries = -1;
  // Any() first: a process without shared buffers pays one load per call.
  if (SharedBuffers::Any() &&
      static_cast<int64_t>(regions.size() * sizeof(MappedEntry)) <= slot_bytes_) {
    auto* table = reinterpret_cast<MappedEntry*>(slot(round_, rank()));
    entries = 0;
    for (const DirectRegion& g : regions) {
      MappedEntry e{};
      e.n = g.n;
      const auto bytes = static_cast<uint64_t>(g.n * es);
      if (!g.in || !SharedBuffers::Find(g.in, bytes, &e.in) ||
          !SharedBuffers::Find(g.out, bytes, &e.out)) {
        entries = -1;
        break;
      }
      table[entries++] = e;
    }
  }
  Member& me = member(rank());
  __atomic_store_n(&me.mapped[parity], entries, __ATOMIC_RELAXED);
  __atomic_store_n(&me.mapped_failed[parity], 0, __ATOMIC_RELAXED);
  __atomic_store_n(&me.frees, SharedBuffers::Frees(), __ATOMIC_RELAXED);
  return entries;
}

// Every other member's table, with its buffers mapped here.
Status ShmComm::MapTables(int64_t es, int64_t parity) {
  const int n = size();
  views_.resize(static_cast<size_t>(n));
  seen_frees_.resize(static_cast<size_t>(n), 0);
  for (int r = 0; r < n; ++r) {
    views_[r].clear();
    if (r == rank()) continue;
    const Member& m = member(r);
    const uint64_t frees = __atomic_load_n(&m.frees, __ATOMIC_RELAXED);
    if (frees != seen_frees_[r]) {  // a buffer of r's may be gone: map afresh
      peer_buffers_.Forget(m.pid);
      seen_frees_[r] = frees;
    }
    const auto* table = reinterpret_cast<const MappedEntry*>(slot(round_, r));
    const int64_t k = __atomic_load_n(&m.mapped[parity], __ATOMIC_RELAXED);
    for (int64_t i = 0; i < k; ++i) {
      const MappedEntry& e = table[i];
      const auto bytes = static_cast<uint64_t>(e.n * es);
      uint8_t *in = nullptr, *out = nullptr;
      HVD_RETURN_IF_ERROR(peer_buffers_.Map(m.pid, e.in, bytes, &in));
      HVD_RETURN_IF_ERROR(peer_buffers_.Map(m.pid, e.out, bytes, &out));
      views_[r].push_back({Addr(in), Addr(out), e.n});
    }
  }
  return Status::OK();
}

Status ShmComm::RunMapped(const std::vector<DirectRegion>& regions, int64_t count, DataType dt,
                          ReduceOp op, double post, bool stream, int64_t parity) {
  const auto es = static_cast<int64_t>(DataTypeSize(dt));
  const int n = size(), me = rank();
  const Share s = ShareOf(count, n, me);
  const Status mapped = MapTables(es, parity);
  if (mapped.ok()) {
    std::vector<std::vector<int64_t>>& starts = view_starts_;
    starts.resize(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) starts[r] = Starts(r == me ? regions : views_[r]);
    auto table = [&](int r) -> const std::vector<DirectRegion>& {
      return r == me ? regions : views_[r];
    };
    const int64_t block = std::max<int64_t>(1, kBlockBytes / es);
    if (block_.size() < static_cast<size_t>(kBlockBytes)) block_.resize(kBlockBytes);
    uint8_t* acc = block_.data();
    for (int64_t b = 0; b < s.n; b += block) {
      const int64_t m = std::min(block, s.n - b), at0 = s.lo + b;
      Walk(regions, starts[me], at0, m,
           [&](const DirectRegion& g, int64_t at, int64_t to, int64_t k) {
             std::memcpy(acc + to * es, At(g.in, at, es), static_cast<size_t>(k * es));
           });
      for (int r = 0; r < n; ++r) {
        if (r == me) continue;
        Walk(views_[r], starts[r], at0, m,
             [&](const DirectRegion& g, int64_t at, int64_t to, int64_t k) {
               ReduceInto(acc + to * es, At(g.in, at, es), k, dt, op);
             });
      }
      if (post != 1.0) ScaleBuffer(acc, m, dt, post);
      for (int r = 0; r < n; ++r) {
        Walk(table(r), starts[r], at0, m,
             [&](const DirectRegion& g, int64_t at, int64_t to, int64_t k) {
               shm_regions::Out(stream, g, at, acc + to * es, k, es);
             });
      }
    }
  } else {
    __atomic_store_n(&member(me).mapped_failed[parity], 1, __ATOMIC_RELAXED);
  }
  HVD_RETURN_IF_ERROR(Barrier());  // every share written; the tables are read
  ++round_;
  if (!mapped.ok()) return mapped;
  for (int r = 0; r < n; ++r) {
    if (__atomic_load_n(&member(r).mapped_failed[parity], __ATOMIC_RELAXED)) {
      return Status::Internal("host-local shared memory: member " + std::to_string(r) +
                              " could not map the others' shared buffers (its error says why)");
    }
  }
  CountMoved(2 * n * s.n * es);
  ++mapped_calls_;
  CountMappedCall();
  return Status::OK();
}

}  // namespace hvd
