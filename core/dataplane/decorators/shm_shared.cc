// ShmComm's allreduce of tensors where they lie (shm_comm.h), through the
// slots: each member copies into its slot only what the others reduce, and
// reduces its own share straight from its input into its output.
//
// Round k works on the next `piece` elements (a slot's worth), cut into one
// share per member. Member r:
//   A(k): copies its input of the others' shares into its slot, each at the
//         share's place;
//   C(k): reduces its own share, from its input where it lies and the
//         others' slots, in blocks small enough to stay in L1: each block
//         lands in its slot at its share's place (where the others read the
//         result), is scaled there and copied to its output;
//   E(k): copies the others' results from their slots into its output.
// At np = 2 that is 4 bytes through memory per byte where the gathered
// rounds take 5.5 (copy everything in, reduce in the slot, copy everything
// out), and one barrier per round instead of two: after barrier k a member
// does E(k-1), C(k) and A(k+1), so between two barriers set k-1 is read,
// set k read and written and set k+1 written (ShmComm keeps three).
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
using shm_regions::Walk;

// A block of a share: in L1 between being reduced, scaled and copied out.
constexpr int64_t kBlockBytes = 16 << 10;

}  // namespace

Status ShmComm::RunShared(const std::vector<DirectRegion>& regions, int64_t count, DataType dt,
                          ReduceOp op, double post) {
  const auto es = static_cast<int64_t>(DataTypeSize(dt));
  const int n = size(), me = rank();
  const std::vector<int64_t> starts = shm_regions::Starts(regions);
  // Every member checks every count after the first barrier, before it reads
  // a slot (a member with other rounds would meet the others at the wrong
  // barriers); a table that does not hold `count` elements counts as -1.
  const int64_t parity = direct_calls_++ % 2;
  const int64_t mine = starts.back() == count ? count : -1;
  __atomic_store_n(&member(me).direct_count[parity], mine, __ATOMIC_RELAXED);
  auto check_counts = [&]() -> Status {
    for (int r = 0; r < n; ++r) {
      const int64_t theirs = __atomic_load_n(&member(r).direct_count[parity], __ATOMIC_RELAXED);
      if (theirs == count) continue;
      return Status::Internal(
          "host-local shared memory: member " + std::to_string(r) +
          (theirs < 0 ? std::string(" was handed regions that do not hold its element count")
                      : " allreduces " + std::to_string(theirs) + " elements, this one " +
                            std::to_string(count)));
    }
    return Status::OK();
  };
  if (count == 0 || mine < 0) {
    HVD_RETURN_IF_ERROR(Barrier());
    return check_counts();
  }

  const int64_t piece = std::max<int64_t>(1, slot_bytes_ / es);
  const int64_t first = round_, last = round_ + (count + piece - 1) / piece - 1;
  auto base = [&](int64_t k) { return (k - first) * piece; };
  auto width = [&](int64_t k) { return std::min(piece, count - base(k)); };

  auto copy_in = [&](int64_t k) {
    const int64_t w = width(k);
    uint8_t* mine = slot(k, me);
    for (int r = 0; r < n; ++r) {
      const Share s = ShareOf(w, n, r);
      if (r == me || s.n == 0) continue;
      Walk(regions, starts, base(k) + s.lo, s.n,
           [&](const DirectRegion& g, int64_t at, int64_t to, int64_t m) {
             uint8_t* d = mine + (s.lo + to) * es;
             if (!g.in) return ZeroBuffer(d, m, dt);  // joined: zeros
             std::memcpy(d, At(g.in, at, es), static_cast<size_t>(m * es));
           });
    }
    const Share s = ShareOf(w, n, me);
    CountMoved(2 * (w - s.n) * es);
  };
  auto reduce_mine = [&](int64_t k) {
    const Share s = ShareOf(width(k), n, me);
    const int64_t block = std::max<int64_t>(1, kBlockBytes / es);
    for (int64_t b = 0; b < s.n; b += block) {
      const int64_t m = std::min(block, s.n - b), at0 = base(k) + s.lo + b;
      uint8_t* acc = slot(k, me) + (s.lo + b) * es;
      Walk(regions, starts, at0, m, [&](const DirectRegion& g, int64_t at, int64_t to, int64_t j) {
        if (!g.in) return ZeroBuffer(acc + to * es, j, dt);
        std::memcpy(acc + to * es, At(g.in, at, es), static_cast<size_t>(j * es));
      });
      for (int r = 0; r < n; ++r) {
        if (r != me) ReduceInto(acc, slot(k, r) + (s.lo + b) * es, m, dt, op);
      }
      if (post != 1.0) ScaleBuffer(acc, m, dt, post);
      Walk(regions, starts, at0, m, [&](const DirectRegion& g, int64_t at, int64_t to, int64_t j) {
        std::memcpy(At(g.out, at, es), acc + to * es, static_cast<size_t>(j * es));
      });
    }
    // My input and each other's slot read, my slot and output written (the
    // block's passes within L1 not counted).
    CountMoved((n + 2) * s.n * es);
  };
  auto copy_out = [&](int64_t k) {
    const int64_t w = width(k);
    for (int r = 0; r < n; ++r) {
      const Share s = ShareOf(w, n, r);
      if (r == me || s.n == 0) continue;
      const uint8_t* theirs = slot(k, r) + s.lo * es;
      Walk(regions, starts, base(k) + s.lo, s.n,
           [&](const DirectRegion& g, int64_t at, int64_t to, int64_t m) {
             std::memcpy(At(g.out, at, es), theirs + to * es, static_cast<size_t>(m * es));
           });
    }
    CountMoved(2 * (w - ShareOf(w, n, me).n) * es);
  };

  copy_in(first);
  for (int64_t k = first; k <= last; ++k) {
    HVD_RETURN_IF_ERROR(Barrier());
    if (k == first) {
      HVD_RETURN_IF_ERROR(check_counts());
    } else {
      copy_out(k - 1);
    }
    reduce_mine(k);
    if (k < last) copy_in(k + 1);
  }
  HVD_RETURN_IF_ERROR(Barrier());
  copy_out(last);
  round_ = last + 1;
  return Status::OK();
}

}  // namespace hvd
