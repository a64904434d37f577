// ShmComm's direct allreduce (shm_comm.h): no slots; the members read
// each other's inputs and results where they lie, with one kernel copy each
// (process_vm_readv), as Open MPI's shared-memory transport does for large
// messages, without its messages.
//
// Before the call's first barrier (shm_shared.cc) each member publishes
// where its table of regions lies; after it, each reads the others' tables.
// Then windows of kShareBytes per member, each cut into one share per
// member. Member r, per window: reads each other member's input of its
// share into a buffer (acc_, in L2), reduces its own input with it into its
// output (in place: in one pass over the output); barrier; reads each other
// member's result, from that member's output, into its own output. One
// more barrier at the end: after it nobody reads its output or table.
//
// Through memory at np = 2 per reduced byte: half read from the peer's
// input, my half read and written, the other half read from the peer's
// output and written, 2.5 bytes, as Open MPI's. The slots take 4, but in
// cache while the members' cores share one; the kernel's copy pins every
// page it reads, cheap on huge pages and not on 4 KiB ones. So the path is
// open only where every member's tensors lie in huge pages (InHugePages),
// and there member 0 times it against the slots (shm_backend.cc).
#include <sys/types.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "core/common/reduce.h"
#include "core/common/traffic.h"
#include "core/dataplane/decorators/peer_memory.h"
#include "core/dataplane/decorators/shm_comm.h"
#include "core/dataplane/decorators/shm_regions.h"

namespace hvd {
namespace {

constexpr const char* kWhat = "host-local shared memory";
using Region = DirectRegion;
using shm_regions::At;
using shm_regions::Starts;
using shm_regions::Walk;

}  // namespace

// Every member reads a word of every other's private memory (`can`: it
// sees their pids); all keep the slots unless all succeed.
Status ShmComm::ProbePeerReads(bool can) {
  static const int64_t probe = 0x68766470726f6265;  // in this process's data, not the segment
  Member& me = member(rank());
  __atomic_store_n(&me.direct_table[0], reinterpret_cast<uint64_t>(&probe), __ATOMIC_RELEASE);
  HVD_RETURN_IF_ERROR(inner().Barrier());
  int32_t ok = can ? 1 : 0;
  for (int r = 0; r < size() && ok; ++r) {
    if (r == rank()) continue;
    int64_t seen = 0;
    std::vector<iovec> local, remote;
    AddIovec(reinterpret_cast<uint64_t>(&seen), sizeof seen, &local);
    AddIovec(__atomic_load_n(&member(r).direct_table[0], __ATOMIC_ACQUIRE), sizeof seen, &remote);
    ok = ReadPeerMemory(member(r).pid, &local, &remote).ok() && seen == probe;
  }
  HVD_RETURN_IF_ERROR(
      inner().Allreduce(AllreduceOptions(&ok, 1, DataType::kInt32, ReduceOp::kMin)));
  peer_reads_ = ok == 1;
  return Status::OK();
}

// What the others read of mine, my inputs and my outputs, lies in huge
// pages, but for at most 1 / kLooseShare of its bytes.
bool ShmComm::InHugePages(const std::vector<DirectRegion>& regions, int64_t es) const {
  std::vector<HugePages::Span> spans;
  int64_t bytes = 0;
  for (const Region& g : regions) {
    for (uint64_t addr : {g.in, g.out == g.in ? 0 : g.out}) {
      if (addr == 0 || g.n == 0) continue;
      spans.push_back({addr, g.n * es});
      bytes += g.n * es;
    }
  }
  return huge_pages_.Hold(std::move(spans), bytes / kLooseShare);
}

Status ShmComm::ReadFrom(int r) {
  const Status s = ReadPeerMemory(member(r).pid, &iov_local_, &iov_remote_);
  if (s.ok()) return s;
  return Status(s.code(), std::string(kWhat) + ": member " + std::to_string(r) +
                              " of this host's group: " + s.message());
}

// Before the call's first barrier: where my table lies, and its length.
void ShmComm::PublishTable(const std::vector<DirectRegion>& regions, int64_t parity) {
  Member& mine = member(rank());
  __atomic_store_n(&mine.direct_table[parity], reinterpret_cast<uint64_t>(regions.data()),
                   __ATOMIC_RELAXED);
  __atomic_store_n(&mine.direct_regions[parity], static_cast<int64_t>(regions.size()),
                   __ATOMIC_RELAXED);
}

// After it (and CheckCounts): everyone's table read (*starts: where each
// region of each member's table starts, in elements).
Status ShmComm::ReadTables(int64_t count, int64_t parity,
                           std::vector<std::vector<int64_t>>* starts) {
  const int n = size(), me = rank();
  tables_.resize(static_cast<size_t>(n));
  starts->assign(static_cast<size_t>(n), {});
  for (int r = 0; r < n; ++r) {
    if (r == me) continue;
    auto& t = tables_[r];
    const int64_t bytes =
        __atomic_load_n(&member(r).direct_regions[parity], __ATOMIC_RELAXED) * sizeof(Region);
    t.resize(static_cast<size_t>(bytes) / sizeof(Region));
    AddIovec(reinterpret_cast<uint64_t>(t.data()), bytes, &iov_local_);
    AddIovec(__atomic_load_n(&member(r).direct_table[parity], __ATOMIC_RELAXED), bytes,
             &iov_remote_);
    HVD_RETURN_IF_ERROR(ReadFrom(r));
    (*starts)[r] = Starts(t);
    if ((*starts)[r].back() != count) {
      return Status::Internal(std::string(kWhat) + ": member " + std::to_string(r) +
                              "'s regions hold " + std::to_string((*starts)[r].back()) +
                              " elements of " + std::to_string(count));
    }
  }
  return Status::OK();
}

// Elements [at0, at0 + m) reduced over every other member into acc_: the
// first one's read into acc_, each further one's into piece_ and reduced in.
Status ShmComm::ReduceOthers(const std::vector<std::vector<int64_t>>& starts, int64_t at0,
                             int64_t m, DataType dt, ReduceOp op) {
  const auto es = static_cast<int64_t>(DataTypeSize(dt));
  bool first = true;
  for (int r = 0; r < size(); ++r) {
    if (r == rank()) continue;
    uint8_t* into = first ? acc_.data() : piece_.data();
    Walk(tables_[r], starts[r], at0, m, [&](const Region& g, int64_t at, int64_t to, int64_t k) {
      if (!g.in) return ZeroBuffer(into + to * es, k, dt);  // joined: zeros
      AddIovec(reinterpret_cast<uint64_t>(into + to * es), k * es, &iov_local_);
      AddIovec(g.in + static_cast<uint64_t>(at * es), k * es, &iov_remote_);
    });
    HVD_RETURN_IF_ERROR(ReadFrom(r));
    if (!first) ReduceInto(acc_.data(), piece_.data(), m, dt, op);
    first = false;
  }
  return Status::OK();
}

// My input of elements [at0, at0 + m) reduced with the others' (acc_) and
// scaled into my output: in place in one pass over the output, otherwise
// into acc_ and copied out. Every op here is commutative.
void ShmComm::FinishPiece(const std::vector<DirectRegion>& regions,
                          const std::vector<int64_t>& starts, int64_t at0, int64_t m, DataType dt,
                          ReduceOp op, double post) {
  const auto es = static_cast<int64_t>(DataTypeSize(dt));
  Walk(regions, starts, at0, m, [&](const Region& g, int64_t at, int64_t to, int64_t k) {
    uint8_t* acc = acc_.data() + to * es;
    if (g.in == g.out) {
      ReduceInto(At(g.out, at, es), acc, k, dt, op);
      ScaleBuffer(At(g.out, at, es), k, dt, post);
      return;
    }
    const uint8_t* mine = At(g.in, at, es);
    if (!g.in) {  // joined: zeros (not a no-op for min, max, product)
      ZeroBuffer(piece_.data() + to * es, k, dt);
      mine = piece_.data() + to * es;
    }
    ReduceInto(acc, mine, k, dt, op);
    ScaleCopy(At(g.out, at, es), acc, k, dt, post);
  });
}

Status ShmComm::RunDirect(const std::vector<DirectRegion>& regions,
                          const std::vector<int64_t>& my_starts, int64_t count, DataType dt,
                          ReduceOp op, double post, int64_t parity) {
  const auto es = static_cast<int64_t>(DataTypeSize(dt));
  const int n = size(), me = rank();
  std::vector<std::vector<int64_t>> starts;
  HVD_RETURN_IF_ERROR(ReadTables(count, parity, &starts));
  starts[me] = my_starts;
  const int64_t share = std::max<int64_t>(1, kShareBytes / es), window = share * n;
  acc_.resize(static_cast<size_t>(share * es));
  piece_.resize(acc_.size());
  for (int64_t base = 0; base < count; base += window) {
    const int64_t w = std::min(window, count - base);
    const Share mine = ShareOf(w, n, me);
    if (mine.n > 0) {
      HVD_RETURN_IF_ERROR(ReduceOthers(starts, base + mine.lo, mine.n, dt, op));
      FinishPiece(regions, starts[me], base + mine.lo, mine.n, dt, op, post);
    }
    HVD_RETURN_IF_ERROR(Barrier());  // every share of the window in its member's output
    for (int r = 0; r < n; ++r) {
      const Share s = ShareOf(w, n, r);
      if (r == me || s.n == 0) continue;
      auto add = [&](const std::vector<Region>& t, const std::vector<int64_t>& at,
                     std::vector<iovec>* iov) {
        Walk(t, at, base + s.lo, s.n, [&](const Region& g, int64_t a, int64_t, int64_t k) {
          AddIovec(g.out + static_cast<uint64_t>(a * es), k * es, iov);
        });
      };
      add(regions, starts[me], &iov_local_);
      add(tables_[r], starts[r], &iov_remote_);
      HVD_RETURN_IF_ERROR(ReadFrom(r));
    }
    // My share: my input and each other's read, my output written (acc_
    // stays in cache); the others': each read, my output written.
    CountMoved((n + 1) * mine.n * es + 2 * (w - mine.n) * es);
  }
  ++peer_read_calls_;
  CountPeerReadCall();
  return Barrier();
}

}  // namespace hvd
