// ShmComm's allreduce of tensors where they lie (shm_comm.h), through the
// slots: each member copies into its slot only what the others reduce, and
// reduces its own share straight from its input into its output.
//
// Round k works on the next `piece` elements (SharedRoundBytes: cache-sized,
// within a slot; a call that fits one slot goes in one round, since each
// round costs a barrier: 25% faster on one 0.5-1 MiB tensor at np = 2),
// cut into one share per member. Member r:
//   A(k): copies its input of the others' shares into its slot, each at the
//         share's place;
//   C(k): reduces its own share, from its input where it lies and the
//         others' slots, in blocks small enough to stay in L1: each block
//         lands in its slot at its share's place (where the others read the
//         result), is scaled there and copied to its output;
//   E(k): copies the others' results from their slots into its output.
// Results going out of place in a call of StreamingStoreBytes() or more are
// written with streaming stores (StreamCopy): nobody reads them soon. What
// the others read from a member's slot (A's copies, C's results) is written
// with plain or streaming stores as member 0 finds faster (AgreedStores).
// At np = 2 that is 4 bytes through memory per byte where the gathered
// rounds take 5.5 (copy everything in, reduce in the slot, copy everything
// out), and one barrier per round instead of two: after barrier k a member
// does E(k-1), C(k) and A(k+1), so between two barriers set k-1 is read,
// set k read and written and set k+1 written (ShmComm keeps three).
//
// Placement: rounds smaller than a slot (128 KiB rounds in 1 MiB slots
// here) can all use the first part of their set's slots, or take the slot's
// parts in turn (round k: part (k / kSets) % parts). In turn, a member
// rewrites a line 24 rounds after the others read it instead of 3, when
// their copies have left their caches: 15-21% faster at np = 2 while the
// members' cores share a cache. When they do not (the VM's slow state,
// docs/benchmarks.md), the first part stays warmer and in turn is 23%
// slower. So member 0 times its large calls each way (a StoreChooser, as
// for the stores) and publishes the placement of the next large call
// before this one's last barrier; every member reads it after that barrier,
// so all place the rounds alike. A call that tries the stores not in use
// does not count for the placement, nor one that tries a placement for the
// stores; so no call tries both, or neither would ever be timed again after
// each chose to retry at once (a surprise): the placement waits its turn
// while the stores try. Until then, a launch could keep streaming stores
// and the parts in turn at twice the time (notebook, 2026-12-06 evening).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>

#include "core/common/config.h"
#include "core/common/reduce.h"
#include "core/common/traffic.h"
#include "core/dataplane/decorators/shm_comm.h"
#include "core/dataplane/decorators/shm_regions.h"

namespace hvd {
namespace {

using shm_regions::At;
using shm_regions::Walk;

// A block of a share: in L1 between being reduced, scaled and copied out.
constexpr int64_t kBlockBytes = 16 << 10;

}  // namespace

// One allreduce of regions: what its rounds share.
struct ShmComm::SharedCall {
  const std::vector<DirectRegion>& regions;
  std::vector<int64_t> starts;  // shm_regions::Starts(regions)
  int64_t count, es;
  DataType dt;
  ReduceOp op;
  double post;
  int64_t first = 0, piece = 1;  // round `first` holds elements [0, piece)
  bool stream = false;           // large: results written out of place bypass the caches
  int64_t base(int64_t k) const { return (k - first) * piece; }
  int64_t width(int64_t k) const { return std::min(piece, count - base(k)); }
  bool slot_stream = false;  // what the others read is written with streaming stores
  bool turns = false;        // rounds take their slots' parts in turn
  uint8_t* Slot(const ShmComm& comm, int64_t k, int r) const {
    return turns ? comm.slot(k, r, piece * es) : comm.slot(k, r);
  }
  void Out(const DirectRegion& g, int64_t at, const uint8_t* from, int64_t n) const {
    shm_regions::Out(stream, g, at, from, n, es);
  }
};

// Whether every member allreduces `count` elements in the call of this
// parity (published in Member::direct_count before a barrier; -1: regions
// that do not hold the count). Checked before any member reads another's
// slot or table: a member with other rounds would meet the others at the
// wrong barriers.
Status ShmComm::CheckCounts(int64_t parity, int64_t count) {
  for (int r = 0; r < size(); ++r) {
    const int64_t theirs = __atomic_load_n(&member(r).direct_count[parity], __ATOMIC_RELAXED);
    if (theirs == count) continue;
    return Status::Internal(
        "host-local shared memory: member " + std::to_string(r) +
        (theirs < 0 ? std::string(" was handed regions that do not hold its element count")
                    : " allreduces " + std::to_string(theirs) + " elements, this one " +
                          std::to_string(count)));
  }
  return Status::OK();
}

// A(k): my input of the others' shares into my slot, each at its place.
void ShmComm::SharedCopyIn(const SharedCall& c, int64_t k) {
  const int64_t w = c.width(k), es = c.es;
  uint8_t* mine = c.Slot(*this, k, rank());
  for (int r = 0; r < size(); ++r) {
    const Share s = ShareOf(w, size(), r);
    if (r == rank() || s.n == 0) continue;
    Walk(c.regions, c.starts, c.base(k) + s.lo, s.n,
         [&](const DirectRegion& g, int64_t at, int64_t to, int64_t m) {
           uint8_t* d = mine + (s.lo + to) * es;
           if (!g.in) return ZeroBuffer(d, m, c.dt);  // joined: zeros
           ToSlot(c.slot_stream, d, At(g.in, at, es), m * es);
         });
  }
  CountMoved(2 * (w - ShareOf(w, size(), rank()).n) * es);
}

// C(k): my share, block by block: my input, then each other's slot reduced
// in, scaled, into my slot and my output.
void ShmComm::SharedReduce(const SharedCall& c, int64_t k) {
  const int64_t es = c.es;
  const Share s = ShareOf(c.width(k), size(), rank());
  const int64_t block = std::max<int64_t>(1, kBlockBytes / es);
  for (int64_t b = 0; b < s.n; b += block) {
    const int64_t m = std::min(block, s.n - b), at0 = c.base(k) + s.lo + b;
    uint8_t* place = c.Slot(*this, k, rank()) + (s.lo + b) * es;
    // Streaming: reduced in a private block, then streamed to the slot.
    uint8_t* acc = c.slot_stream ? block_.data() : place;
    shm_regions::In(c.regions, c.starts, at0, m, acc, es, c.dt);
    for (int r = 0; r < size(); ++r) {
      if (r != rank()) ReduceInto(acc, c.Slot(*this, k, r) + (s.lo + b) * es, m, c.dt, c.op);
    }
    if (c.post != 1.0) ScaleBuffer(acc, m, c.dt, c.post);
    if (acc != place) ToSlot(c.slot_stream, place, acc, m * es);
    Walk(c.regions, c.starts, at0, m,
         [&](const DirectRegion& g, int64_t at, int64_t to, int64_t j) {
           c.Out(g, at, acc + to * es, j);
         });
  }
  // My input and each other's slot read, my slot and output written (the
  // block's passes within L1 not counted).
  CountMoved((size() + 2) * s.n * es);
}

// E(k): the others' results from their slots into my output.
void ShmComm::SharedCopyOut(const SharedCall& c, int64_t k) {
  const int64_t w = c.width(k), es = c.es;
  for (int r = 0; r < size(); ++r) {
    const Share s = ShareOf(w, size(), r);
    if (r == rank() || s.n == 0) continue;
    const uint8_t* theirs = c.Slot(*this, k, r) + s.lo * es;
    Walk(c.regions, c.starts, c.base(k) + s.lo, s.n,
         [&](const DirectRegion& g, int64_t at, int64_t to, int64_t m) {
           c.Out(g, at, theirs + to * es, m);
         });
  }
  CountMoved(2 * (w - ShareOf(w, size(), rank()).n) * es);
}

// Member 0, before a large call's last barrier: the call's time from its
// first barrier counts for the placement it took (`timed`: the stores were
// not being tried); the next large call's placement is published.
void ShmComm::ChooseTurns(int64_t bytes, std::chrono::steady_clock::time_point start, bool timed) {
  if (bytes < placement_.min_bytes()) return;
  const std::chrono::duration<double, std::nano> ns = std::chrono::steady_clock::now() - start;
  if (timed) placement_.Record(turns_choice_, bytes, ns.count());
  turns_choice_ = placement_.Choose(bytes, !stores_[kAllreduceStores].trying());
  __atomic_store_n(&member(0).turns, turns_choice_.stream ? 1 : 0, __ATOMIC_RELAXED);
}

Status ShmComm::RunShared(const std::vector<DirectRegion>& regions, int64_t count, DataType dt,
                          ReduceOp op, double post) {
  const auto es = static_cast<int64_t>(DataTypeSize(dt));
  SharedCall c{regions, shm_regions::Starts(regions), count, es, dt, op, post};
  const int64_t parity = region_calls_++ % 2;
  const int64_t mine = c.starts.back() == count ? count : -1;
  __atomic_store_n(&member(rank()).direct_count[parity], mine, __ATOMIC_RELAXED);
  if (count == 0 || mine < 0) {
    HVD_RETURN_IF_ERROR(Barrier());
    return CheckCounts(parity, count);
  }
  const int64_t round = count * es <= slot_bytes_ ? slot_bytes_ : round_bytes_;
  c.piece = std::max<int64_t>(1, round / es);
  c.first = round_;
  c.turns = turns_;
  static const int64_t stream_bytes = StreamingStoreBytes();
  c.stream = count * es >= stream_bytes;
  StoreTimer timer(&stores_[kAllreduceStores], count * es);
  c.slot_stream = timer.stream();
  if (c.slot_stream && block_.empty()) block_.resize(kBlockBytes);
  const int64_t last = round_ + (count + c.piece - 1) / c.piece - 1;
  // My tensors all in shared buffers: my table in my slot instead of A(first).
  const bool mapped = PublishMapped(regions, es, parity) >= 0;
  const bool open = OpenHere(regions, es, count * es, parity, mapped);
  const StoreChooser::Choice way = ChoosePath(count * es, parity, open);
  if (way.stream || mapped) timer.Elsewhere();
  if (open && !OtherIsBackend()) PublishTable(regions, parity);
  if (!mapped) SharedCopyIn(c, c.first);
  HVD_RETURN_IF_ERROR(Barrier(&timer));
  const auto start = std::chrono::steady_clock::now();  // member 0 times its path from here
  HVD_RETURN_IF_ERROR(CheckCounts(parity, count));
  int members_mapped = 0;
  for (int r = 0; r < size(); ++r) {
    members_mapped += __atomic_load_n(&member(r).mapped[parity], __ATOMIC_RELAXED) >= 0;
  }
  if (members_mapped == size()) return RunMapped(regions, count, dt, op, post, c.stream, parity);
  const bool open_everywhere = OpenEverywhere(parity);  // so no member's are mapped
  if (open_everywhere && OtherChosen(parity)) {
    HVD_RETURN_IF_ERROR(OtherIsBackend()
                            ? RunBackend(regions, c.starts, count, dt, op, post)
                            : RunDirect(regions, c.starts, count, dt, op, post, parity));
    RecordPath(way, true, open_everywhere, count * es, start);
    return Status::OK();
  }
  if (members_mapped > 0) {  // some are, some not: through the slots, A(first) one barrier late
    if (mapped) SharedCopyIn(c, c.first);
    HVD_RETURN_IF_ERROR(Barrier());
  }
  for (int64_t k = c.first; k <= last; ++k) {
    if (k > c.first) {
      HVD_RETURN_IF_ERROR(Barrier(&timer));
      SharedCopyOut(c, k - 1);
    }
    SharedReduce(c, k);
    if (k < last) SharedCopyIn(c, k + 1);
  }
  const bool turns_tried = turns_choice_.explore && count * es >= placement_.min_bytes();
  const bool stores_tried = timer.explore();
  both_tried_calls_ += turns_tried && stores_tried;
  if (rank() == 0) ChooseTurns(count * es, start, !stores_tried);
  HVD_RETURN_IF_ERROR(Barrier());
  turns_ = __atomic_load_n(&member(0).turns, __ATOMIC_RELAXED) == 1;
  turns_calls_ += c.turns && c.piece * es < slot_bytes_;
  SharedCopyOut(c, last);
  round_ = last + 1;
  timer.Done(!turns_tried);
  const bool tried = turns_tried || stores_tried;
  path_timed_tries_ +=
      RecordPath(way, false, open_everywhere && !tried, count * es, start) && tried;
  return Status::OK();
}

}  // namespace hvd
