// ShmComm's direct allreduce (shm_comm.h): the members read each other's
// inputs where they lie instead of copying them into the slots first.
//
// Per call: each member publishes where its table of regions lies; barrier;
// each reads the others' tables. Then rounds, as the slot path's: each
// member reduces its share of the round in cache-sized pieces (the first
// other member's input read into a piece buffer with one kernel copy, its
// own input reduced into that where it lies, each further member's read
// into a second buffer and reduced in; the result scaled and written to its
// output and its slot); barrier; the others' shares copied from their
// slots. The kernel's copy pins every page it reads, which makes it slower
// than a memcpy: results go out through the slots, inputs come in directly.
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
// A piece of a share: half a typical L2 cache, so that the two piece
// buffers stay in it while they are reduced.
constexpr int64_t kPieceBytes = 256 << 10;

using Region = DirectRegion;
using shm_regions::At;
using shm_regions::Starts;
using shm_regions::Walk;

}  // namespace

// Every member reads a word of every other's private memory; all keep the
// slots unless all succeed.
Status ShmComm::ProbePeerReads() {
  static const int64_t probe = 0x68766470726f6265;  // in this process's data, not the segment
  Member& me = member(rank());
  __atomic_store_n(&me.direct_table[0], reinterpret_cast<uint64_t>(&probe), __ATOMIC_RELEASE);
  HVD_RETURN_IF_ERROR(inner().Barrier());
  int32_t ok = 1;
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

Status ShmComm::ReadFrom(int r) {
  const Status s = ReadPeerMemory(member(r).pid, &iov_local_, &iov_remote_);
  if (s.ok()) return s;
  return Status(s.code(), std::string(kWhat) + ": member " + std::to_string(r) +
                              " of this host's group: " + s.message());
}

// Publishes my table, then reads everyone's (*starts: where each region of
// each member's table starts, in elements).
Status ShmComm::ExchangeTables(const std::vector<DirectRegion>& regions, int64_t count,
                               std::vector<std::vector<int64_t>>* starts) {
  const int n = size(), me = rank();
  const int64_t parity = direct_calls_++ % 2;
  Member& mine = member(me);
  __atomic_store_n(&mine.direct_table[parity], reinterpret_cast<uint64_t>(regions.data()),
                   __ATOMIC_RELAXED);
  __atomic_store_n(&mine.direct_regions[parity], static_cast<int64_t>(regions.size()),
                   __ATOMIC_RELAXED);
  __atomic_store_n(&mine.direct_count[parity], count, __ATOMIC_RELAXED);
  HVD_RETURN_IF_ERROR(Barrier());  // publishes the three

  // Every member checks every count before any reads a table: a member that
  // fails here returns, and its table is gone.
  HVD_RETURN_IF_ERROR(CheckCounts(parity, count));
  tables_.resize(static_cast<size_t>(n));
  starts->assign(static_cast<size_t>(n), {});
  for (int r = 0; r < n; ++r) {
    if (r != me) {
      auto& t = tables_[r];
      const int64_t bytes =
          __atomic_load_n(&member(r).direct_regions[parity], __ATOMIC_RELAXED) * sizeof(Region);
      t.resize(static_cast<size_t>(bytes) / sizeof(Region));
      AddIovec(reinterpret_cast<uint64_t>(t.data()), bytes, &iov_local_);
      AddIovec(__atomic_load_n(&member(r).direct_table[parity], __ATOMIC_RELAXED), bytes,
               &iov_remote_);
      HVD_RETURN_IF_ERROR(ReadFrom(r));
    }
    (*starts)[r] = Starts(r == me ? regions : tables_[r]);
    if ((*starts)[r].back() != count) {
      return Status::Internal(std::string(kWhat) + ": member " + std::to_string(r) +
                              "'s regions hold " + std::to_string((*starts)[r].back()) +
                              " elements of " + std::to_string(count));
    }
  }
  return Status::OK();
}

// Elements [at0, at0 + m) of my share, reduced over every member into acc_:
// the first other member's piece lands in acc_, my input is reduced into it
// where it lies (no copy of my own), then the others' pieces. Every op here
// is commutative, so the result is bit for bit the slot path's.
Status ShmComm::ReducePiece(const std::vector<DirectRegion>& regions,
                            const std::vector<std::vector<int64_t>>& starts, int64_t at0, int64_t m,
                            DataType dt, ReduceOp op) {
  const auto es = static_cast<int64_t>(DataTypeSize(dt));
  bool first = true;
  for (int r = 0; r < size(); ++r) {
    if (r == rank()) continue;
    uint8_t* into = first ? acc_.data() : piece_.data();
    Walk(tables_[r], starts[r], at0, m, [&](const Region& g, int64_t at, int64_t to, int64_t k) {
      if (!g.in) return ZeroBuffer(into + to * es, k, dt);
      AddIovec(reinterpret_cast<uint64_t>(into + to * es), k * es, &iov_local_);
      AddIovec(g.in + static_cast<uint64_t>(at * es), k * es, &iov_remote_);
    });
    HVD_RETURN_IF_ERROR(ReadFrom(r));
    if (!first) {
      ReduceInto(acc_.data(), piece_.data(), m, dt, op);
      continue;
    }
    first = false;
    Walk(regions, starts[rank()], at0, m, [&](const Region& g, int64_t at, int64_t to, int64_t k) {
      const uint8_t* mine = At(g.in, at, es);
      if (!g.in) {  // joined: zeros (not a no-op for min, max, product)
        ZeroBuffer(piece_.data() + to * es, k, dt);
        mine = piece_.data() + to * es;
      }
      ReduceInto(acc_.data() + to * es, mine, k, dt, op);
    });
  }
  return Status::OK();
}

// Rounds of a window of size() slots' worth of elements: my share of it
// reduced from the inputs where they lie, into my output and my slot; one
// barrier; the others' shares copied from their slots.
Status ShmComm::RunDirect(const std::vector<DirectRegion>& regions, int64_t count, DataType dt,
                          ReduceOp op, double post) {
  const auto es = static_cast<int64_t>(DataTypeSize(dt));
  const int n = size(), me = rank();
  std::vector<std::vector<int64_t>> starts;
  HVD_RETURN_IF_ERROR(ExchangeTables(regions, count, &starts));
  const int64_t slot_elems = std::max<int64_t>(1, slot_bytes_ / es);
  const int64_t window = slot_elems * n;
  const int64_t piece = std::max<int64_t>(1, std::min(kPieceBytes / es, slot_elems));
  acc_.resize(static_cast<size_t>(piece * es));
  piece_.resize(acc_.size());
  auto to_out = [&](int64_t first, int64_t k, const uint8_t* from) {
    Walk(regions, starts[me], first, k, [&](const Region& g, int64_t at, int64_t to, int64_t j) {
      std::memcpy(At(g.out, at, es), from + to * es, static_cast<size_t>(j * es));
    });
  };
  for (int64_t base = 0; base < count; base += window, ++round_) {
    const int64_t w = std::min(window, count - base);
    const Share mine = ShareOf(w, n, me);
    for (int64_t off = 0; off < mine.n; off += piece) {
      const int64_t m = std::min(piece, mine.n - off);
      HVD_RETURN_IF_ERROR(ReducePiece(regions, starts, base + mine.lo + off, m, dt, op));
      ScaleBuffer(acc_.data(), m, dt, post);
      std::memcpy(slot(round_, me) + off * es, acc_.data(), static_cast<size_t>(m * es));
      to_out(base + mine.lo + off, m, acc_.data());
    }
    HVD_RETURN_IF_ERROR(Barrier());
    for (int r = 0; r < n; ++r) {
      const Share s = ShareOf(w, n, r);
      if (r != me && s.n > 0) to_out(base + s.lo, s.n, slot(round_, r));
    }
    // Through memory (the piece buffers stay in cache): for my share, my
    // input and each other's read, my output and slot written; for the
    // others', a slot read and my output written.
    CountMoved((n + 2) * mine.n * es + 2 * (w - mine.n) * es);
  }
  // A round's barrier tells every member that the others have read its
  // table; with no round, one more barrier does.
  return count == 0 ? Barrier() : Status::OK();
}

}  // namespace hvd
