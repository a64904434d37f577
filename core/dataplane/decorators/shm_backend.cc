// ShmComm's second path for a large allreduce of regions (shm_comm.h), and
// the choice between it and the slots; here also that path where it is the
// backend's own allreduce on the tensors where they lie.
//
// The second path is the backend's where asked for
// (HVD_SHARED_MEMORY_MPI_ALLREDUCE=1), else the direct one (shm_direct.cc)
// where the members can read each other's memory. Both read a peer's buffer with one
// kernel copy; the slots hand each byte between the members' caches. The
// kernel's copy is cheap on huge pages and the slots' hand-over while the
// cores share a cache, and a VM moves between such states for seconds at a
// time (docs/benchmarks.md), so no fixed choice is right everywhere.
// The direct path is open to a call only where every member's tensors lie
// in huge pages (each says so before the first barrier). Member 0 times
// each path from the call's first barrier to its end and uses the faster
// (a StoreChooser: each path timed twice in turn first, the other tried now
// and then, and at once after a surprise). Its choice travels in
// Member::backend before that barrier, so every member takes the same
// path; CheckCounts has run by then, so the second path never sees members
// with different counts.
#include <algorithm>
#include <chrono>

#include "core/common/reduce.h"
#include "core/common/traffic.h"
#include "core/dataplane/decorators/shm_comm.h"
#include "core/dataplane/decorators/shm_regions.h"

namespace hvd {

using shm_regions::At;
using shm_regions::Walk;

bool ShmComm::OpenHere(const std::vector<DirectRegion>& regions, int64_t es, int64_t bytes,
                       int64_t parity, bool mapped) {
  const bool open = OtherEligible(bytes) && !mapped &&
                    (OtherIsBackend() || forced_ >= 0 || InHugePages(regions, es));
  __atomic_store_n(&member(rank()).open[parity], open ? 1 : 0, __ATOMIC_RELAXED);
  return open;
}

bool ShmComm::OpenEverywhere(int64_t parity) const {
  for (int r = 0; r < size(); ++r) {
    if (__atomic_load_n(&member(r).open[parity], __ATOMIC_RELAXED) != 1) return false;
  }
  return true;
}

// Member 0 chooses (and publishes) the path of a call of `bytes` that its
// tensors may take the second path for (`open`); the others' choice is not
// used.
StoreChooser::Choice ShmComm::ChoosePath(int64_t bytes, int64_t parity, bool open) {
  if (rank() != 0) return {};
  unchosen_.reset();
  if (!open) {
    __atomic_store_n(&member(0).backend[parity], 0, __ATOMIC_RELAXED);
    return {};
  }
  if (forced_ < 0) unchosen_ = path_;
  const StoreChooser::Choice way =
      forced_ >= 0 ? StoreChooser::Choice{forced_ == 1, false} : path_.Choose(bytes);
  __atomic_store_n(&member(0).backend[parity], way.stream ? 1 : 0, __ATOMIC_RELAXED);
  return way;
}

// Member 0 took the second path (`other`) or not for a call it chose `way`
// for, from `start` to now. `timed`: every member could take either
// (OpenEverywhere) and the call timed nothing else (the slots did not try
// stores or a placement not in use, whose cost is not the path's).
// Otherwise the choice is taken back: the chooser's turn (a try, a sample)
// goes to the next call that can. Whether it was timed.
bool ShmComm::RecordPath(StoreChooser::Choice way, bool other, bool timed, int64_t bytes,
                         std::chrono::steady_clock::time_point start) {
  if (!timed && unchosen_) path_ = *unchosen_;
  if (rank() != 0 || forced_ >= 0 || !timed || other != way.stream) return false;
  const std::chrono::duration<double, std::nano> ns = std::chrono::steady_clock::now() - start;
  path_.Record(way, bytes, ns.count());
  return true;
}

// After the call's first barrier: whether member 0 chose the second path.
bool ShmComm::OtherChosen(int64_t parity) const {
  return __atomic_load_n(&member(0).backend[parity], __ATOMIC_RELAXED) == 1;
}

// What a call through the backend works on.
struct ShmComm::BackendCall {
  const std::vector<DirectRegion>& regions;
  const std::vector<int64_t>& starts;  // shm_regions::Starts(regions)
  int64_t count, es;
  DataType dt;
  ReduceOp op;
  double post;
};

Status ShmComm::BackendPiece(const void* in, void* out, int64_t n, const BackendCall& c) {
  AllreduceOptions o(in, out, n, c.dt, c.op);
  if (c.post != 1.0) {  // scaled while the backend's piece is in cache
    o.drain = [&](int64_t off, int64_t m) {
      ScaleBuffer(static_cast<uint8_t*>(out) + off * c.es, m, c.dt, c.post);
      return Status::OK();
    };
  }
  return inner().Allreduce(o);
}

// Pieces of kBackendPieceBytes, the same on every member: one that lies in
// one of my tensors goes straight from its input to its output (in place
// where they are one); one across tensors, or a joined rank's zeros,
// through staged_.
Status ShmComm::RunBackend(const std::vector<DirectRegion>& regions,
                           const std::vector<int64_t>& starts, int64_t count, DataType dt,
                           ReduceOp op, double post) {
  const BackendCall c{regions, starts, count, static_cast<int64_t>(DataTypeSize(dt)), dt, op, post};
  const int64_t piece = std::max<int64_t>(1, kBackendPieceBytes / c.es);
  for (int64_t off = 0; off < c.count; off += piece) {
    const int64_t n = std::min(piece, c.count - off);
    const DirectRegion* whole = nullptr;
    int64_t at = 0;
    Walk(c.regions, c.starts, off, n, [&](const DirectRegion& g, int64_t a, int64_t, int64_t m) {
      if (m == n && g.in) {
        whole = &g;
        at = a;
      }
    });
    if (whole) {
      HVD_RETURN_IF_ERROR(BackendPiece(At(whole->in, at, c.es), At(whole->out, at, c.es), n, c));
      continue;
    }
    staged_.resize(static_cast<size_t>(piece * c.es));
    uint8_t* buf = staged_.data();
    shm_regions::In(c.regions, c.starts, off, n, buf, c.es, c.dt);
    HVD_RETURN_IF_ERROR(BackendPiece(buf, buf, n, c));
    Walk(c.regions, c.starts, off, n, [&](const DirectRegion& g, int64_t a, int64_t to, int64_t m) {
      shm_regions::Out(false, g, a, buf + to * c.es, m, c.es);
    });
    CountMoved(4 * n * c.es);  // staged in and out
  }
  ++backend_calls_;
  CountBackendCall();
  return Status::OK();
}

}  // namespace hvd
