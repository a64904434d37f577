// ShmComm (core/dataplane/decorators/shm_comm.cc) on its own, under mpirun at np 2-4
// on one host, set up over an MpiComm: exact allreduce, reduce-scatter,
// allgather, broadcast and alltoall results on every rank for sizes below, at and
// around multiples of the slot (many rounds, a short last round, uneven and empty blocks),
// in place and not, integer, float and 16-bit types, every reduction, slots
// written with plain and streaming stores; large allreduces through MPI's
// own allreduce instead (forced, and as member 0 chooses for all); rounds
// placed in the slots as member 0 chooses for all; the
// segment leaves nothing in /dev/shm; a member that does not arrive times
// out (then every later call fails), and Abort from another thread ends a
// wait at once.
#include "core/dataplane/decorators/shm_comm.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/backends/mpi/mpi_comm.h"
#include "core/common/config.h"
#include "core/common/types.h"
#include "core/dataplane/decorators/shared_buffers.h"
#include "tests/common/huge_buffer.h"
#include "tests/mp/small_values.h"

namespace hvd {
namespace {

using mptest::Expected;
using mptest::FromHalf;
using mptest::Rank;
using mptest::Size;
using mptest::ToHalf;
using mptest::V;

// MPI's Abort ends the job; the test aborts only ShmComm's own wait.
class NoAbort : public ForwardingComm {
 public:
  using ForwardingComm::ForwardingComm;
  void Abort() override {}
};

std::unique_ptr<ShmComm> MakeShm(int64_t slot_bytes, double timeout_s = 60, bool peer_reads = true,
                                 int64_t backend_min_bytes = -1) {
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  std::shared_ptr<Comm> mpi = std::make_shared<NoAbort>(std::make_shared<MpiComm>(dup, 0));
  std::unique_ptr<ShmComm> shm;
  std::string why;
  const Status s =
      ShmComm::Create(mpi, timeout_s, slot_bytes, peer_reads, backend_min_bytes, &shm, &why);
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(shm) << why;
  return shm;
}

template <typename T>
T Make(int64_t v) {
  if constexpr (sizeof(T) == 2) {
    return ToHalf(v);
  } else {
    return static_cast<T>(v);
  }
}
template <typename T>
double Get(T x) {
  if constexpr (sizeof(T) == 2) {
    return FromHalf(x);
  } else {
    return static_cast<double>(x);
  }
}

// n elements from `in` into `out` (in place where they are one): exact.
template <typename T>
void CheckAllreduceIn(ShmComm& shm, DataType dt, ReduceOp op, int64_t n, T* in, T* dst) {
  const bool in_place = in == dst;
  for (int64_t i = 0; i < n; ++i) in[i] = Make<T>(V(Rank(), i));
  const Status s = shm.Allreduce({in, dst, n, dt, op});
  ASSERT_TRUE(s.ok()) << s.message();
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(Get(dst[i]), static_cast<double>(Expected(op, i)))
        << "n=" << n << " op=" << static_cast<int>(op) << " [" << i << "]";
  }
  if (!in_place) {
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(Get(in[i]), static_cast<double>(V(Rank(), i)));
  }
}

// The same on the heap (4 KiB pages where transparent huge pages are not
// "always").
template <typename T>
void CheckAllreduce(ShmComm& shm, DataType dt, ReduceOp op, int64_t n, bool in_place) {
  std::vector<T> in(static_cast<size_t>(n)), out(static_cast<size_t>(n));
  CheckAllreduceIn(shm, dt, op, n, in.data(), in_place ? in.data() : out.data());
}

constexpr int64_t kSlot = 256;  // bytes: 64 floats a round, many rounds

std::vector<int64_t> Counts() {
  const int64_t p = Size(), e = kSlot / 4;
  return {0, 1, p - 1, p, p + 1, e - 1, e, e + 1, 3 * e + p, 1000, 4099};
}

TEST(ShmComm, AllreduceEveryOpTypeAndCount) {
  std::unique_ptr<ShmComm> shm = MakeShm(kSlot);
  ASSERT_TRUE(shm);
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kProduct, ReduceOp::kMin, ReduceOp::kMax}) {
    for (int64_t n : Counts()) {
      for (bool in_place : {true, false}) {
        CheckAllreduce<float>(*shm, DataType::kFloat32, op, n, in_place);
        CheckAllreduce<int32_t>(*shm, DataType::kInt32, op, n, in_place);
        CheckAllreduce<uint16_t>(*shm, DataType::kFloat16, op, n, in_place);
        CheckAllreduce<double>(*shm, DataType::kFloat64, op, n, in_place);
        if (HasFatalFailure()) return;
      }
    }
  }
  // The default slot: one round, and a buffer of several.
  std::unique_ptr<ShmComm> big = MakeShm(ShmComm::kDefaultSlotBytes);
  ASSERT_TRUE(big);
  for (int64_t n : {int64_t{5}, int64_t{3} << 20}) {
    CheckAllreduce<float>(*big, DataType::kFloat32, ReduceOp::kSum, n, false);
  }
}

// Through the Comm's one entry point, with the tensors as regions.
Status Direct(ShmComm& shm, const std::vector<DirectRegion>& regions, int64_t n, DataType dt,
              ReduceOp op, double post) {
  AllreduceOptions o;
  o.count = n;
  o.dt = dt;
  o.op = op;
  o.regions = &regions;
  o.post = post;
  return shm.Allreduce(o);
}

// Regions cut differently on every rank, a joined rank's zeros, in place
// and not, many rounds and shares of several pieces, every op, a postscale;
// a member with another count fails every member.
void CheckRegions(ShmComm& shm_ref) {
  ShmComm* shm = &shm_ref;
  EXPECT_EQ(shm->caps().direct_min_bytes, 0);
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{Size()} + 1, int64_t{4099}, int64_t{3} << 17}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
      for (bool in_place : {true, false}) {
        std::vector<float> in(static_cast<size_t>(n)), out(static_cast<size_t>(n), -1.0f);
        for (int64_t i = 0; i < n; ++i) in[i] = static_cast<float>(V(Rank(), i));
        float* dst = in_place ? in.data() : out.data();
        // Regions of 7 + rank elements: no two ranks cut alike.
        std::vector<DirectRegion> regions;
        for (int64_t at = 0; at < n;) {
          const int64_t k = std::min<int64_t>(7 + Rank(), n - at);
          regions.push_back({reinterpret_cast<uint64_t>(in.data() + at),
                             reinterpret_cast<uint64_t>(dst + at), k});
          at += k;
        }
        const Status s = Direct(*shm, regions, n, DataType::kFloat32, op, 1.0);
        ASSERT_TRUE(s.ok()) << s.message();
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_EQ(dst[i], static_cast<float>(Expected(op, i)))
              << "n=" << n << " op=" << static_cast<int>(op) << " [" << i << "]";
        }
      }
    }
  }
  // Rank 0 joined (zeros, its result to scratch); the others' sum, halved.
  const int64_t n = int64_t{1} << 18;
  std::vector<double> in(static_cast<size_t>(n)), out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) in[i] = static_cast<double>(V(Rank(), i));
  std::vector<DirectRegion> one{{Rank() == 0 ? 0 : reinterpret_cast<uint64_t>(in.data()),
                                 reinterpret_cast<uint64_t>(out.data()), n}};
  const Status s = Direct(*shm, one, n, DataType::kFloat64, ReduceOp::kSum, 0.5);
  ASSERT_TRUE(s.ok()) << s.message();
  for (int64_t i = 0; i < n; ++i) {
    double sum = 0;
    for (int r = 1; r < Size(); ++r) sum += static_cast<double>(V(r, i));
    ASSERT_EQ(out[i], sum * 0.5) << i;
  }
  // A member with another count: every member fails, naming it.
  float x = 1;
  std::vector<DirectRegion> other;
  if (Rank() == 0)
    other.push_back({reinterpret_cast<uint64_t>(&x), reinterpret_cast<uint64_t>(&x), 1});
  const Status bad =
      Direct(*shm, other, Rank() == 0 ? 1 : 0, DataType::kFloat32, ReduceOp::kSum, 1.0);
  EXPECT_EQ(bad.code(), Code::kInternal) << bad.message();
  EXPECT_NE(bad.message().find("elements, this one"), std::string::npos) << bad.message();
}

// Forced onto the direct path (shm_direct.cc), large regions read the
// peers' inputs and results where they lie (process_vm_readv), smaller ones
// go through the slots: every layout of CheckRegions, and calls of several
// windows (the last short), in place and not, every type and op.
TEST(ShmComm, AllreduceRegionsReadingPeersWhateverTheLayout) {
  std::unique_ptr<ShmComm> shm = MakeShm(kSlot);
  ASSERT_TRUE(shm);
  ASSERT_TRUE(shm->peer_reads()) << "process_vm_readv is not allowed here";
  shm->ForcePath(true);
  CheckRegions(*shm);
  if (HasFatalFailure()) return;
  // 3 << 17 floats, 4 ops, in place and not; the joined call.
  EXPECT_EQ(shm->peer_read_calls(), 9);
  shm = MakeShm(kSlot);  // CheckRegions ends on a failed call
  ASSERT_TRUE(shm);
  shm->ForcePath(true);
  const int64_t windows = ShmComm::kShareBytes / 4 * Size() * 2 + 1001;
  for (bool in_place : {true, false}) {
    CheckAllreduce<float>(*shm, DataType::kFloat32, ReduceOp::kSum, windows, in_place);
    CheckAllreduce<int32_t>(*shm, DataType::kInt32, ReduceOp::kMax, windows, in_place);
    CheckAllreduce<uint16_t>(*shm, DataType::kFloat16, ReduceOp::kMin, windows, in_place);
    CheckAllreduce<double>(*shm, DataType::kFloat64, ReduceOp::kProduct, windows, in_place);
    if (HasFatalFailure()) return;
  }
  EXPECT_EQ(shm->peer_read_calls(), 8);
  // Below kDirectMinBytes the slots still run.
  CheckAllreduce<float>(*shm, DataType::kFloat32, ReduceOp::kSum, 1000, true);
  EXPECT_EQ(shm->peer_read_calls(), 8);
}

// A choice member 0 makes for all (StoreChooser `chooser`, way 1 taken in
// `calls` calls here): member 0 timed both ways, and every member took way
// 1 in the same number of calls, at least 2 (its samples).
void ExpectMemberZerosChoiceFollowed(const StoreChooser& chooser, int64_t calls,
                                     const char* otherwise) {
  if (Rank() == 0) {
    EXPECT_GT(chooser.ns_per_byte(false), 0.0);
    EXPECT_GT(chooser.ns_per_byte(true), 0.0);
  }
  int64_t most[2] = {calls, -calls};
  ASSERT_EQ(MPI_Allreduce(MPI_IN_PLACE, most, 2, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD),
            MPI_SUCCESS);
  EXPECT_GE(most[0], 2);
  EXPECT_EQ(most[0], -most[1]) << "members " << otherwise;
}

// Every size through the slots: each member's own share reduced from its
// input into its output, the others' through the slots (shm_shared.cc).
TEST(ShmComm, AllreduceRegionsThroughSlotsWhateverTheLayout) {
  std::unique_ptr<ShmComm> shm = MakeShm(kSlot, 60, /*peer_reads=*/false);
  ASSERT_TRUE(shm);
  ASSERT_FALSE(shm->peer_reads());
  CheckRegions(*shm);
  // Its large calls (1.5 MiB) were timed both ways on member 0, so both
  // ways wrote the slots of calls whose results were checked, on every
  // member alike (the third and fifth large calls stream).
  ExpectMemberZerosChoiceFollowed(shm->stores(), shm->streamed_calls(), "wrote differently");
  // The default slot: a buffer of several rounds, in place.
  std::unique_ptr<ShmComm> big = MakeShm(ShmComm::kDefaultSlotBytes, 60, false);
  ASSERT_TRUE(big);
  CheckAllreduce<float>(*big, DataType::kFloat32, ReduceOp::kSum, int64_t{5} << 20, true);
  // Large enough that results going out of place bypass the caches
  // (StreamCopy), with a count that leaves a tail; then one below the line.
  const int64_t streamed = StreamingStoreBytes() / 4 + 3;
  CheckAllreduce<float>(*big, DataType::kFloat32, ReduceOp::kSum, streamed, false);
  CheckAllreduce<int32_t>(*big, DataType::kInt32, ReduceOp::kMax, streamed, false);
  CheckAllreduce<float>(*big, DataType::kFloat32, ReduceOp::kSum, streamed / 2, false);
}

// On MPI a large allreduce may take MPI's own allreduce instead of the
// slots (shm_backend.cc). Forced that way: every layout of CheckRegions
// (pieces across tensors staged, a joined rank's zeros, a postscale) and
// whole tensors of several pieces, in place and not, every type and op.
TEST(ShmComm, AllreduceThroughTheBackendWhateverTheLayout) {
  std::unique_ptr<ShmComm> shm = MakeShm(kSlot, 60, false, /*backend_min_bytes=*/4096);
  ASSERT_TRUE(shm);
  shm->ForcePath(true);
  CheckRegions(*shm);
  if (HasFatalFailure()) return;
  // 4099 and 3 << 17 floats, 4 ops, in place and not; the joined call.
  EXPECT_EQ(shm->backend_calls(), 17);
  shm = MakeShm(kSlot, 60, false, 4096);  // CheckRegions ends on a failed call
  ASSERT_TRUE(shm);
  shm->ForcePath(true);
  const int64_t pieces = ShmComm::kBackendPieceBytes / 4 * 2 + 1001;  // three, the last short
  for (bool in_place : {true, false}) {
    CheckAllreduce<float>(*shm, DataType::kFloat32, ReduceOp::kSum, pieces, in_place);
    CheckAllreduce<int32_t>(*shm, DataType::kInt32, ReduceOp::kMax, pieces, in_place);
    CheckAllreduce<uint16_t>(*shm, DataType::kFloat16, ReduceOp::kMin, 5000, in_place);
    CheckAllreduce<double>(*shm, DataType::kFloat64, ReduceOp::kProduct, 5000, in_place);
    if (HasFatalFailure()) return;
  }
  EXPECT_EQ(shm->backend_calls(), 8);
  // Below the line the slots still run.
  CheckAllreduce<float>(*shm, DataType::kFloat32, ReduceOp::kSum, 1000, true);
  EXPECT_EQ(shm->backend_calls(), 8);
}

// Unforced, member 0 times both paths and everyone follows its choice:
// exact results, both paths timed (each twice first: the second and fourth
// timed calls take MPI), the same calls through MPI everywhere.
// A member that rules the path out rules it out for all.
TEST(ShmComm, MemberZeroChoosesThePathForEveryone) {
  std::unique_ptr<ShmComm> shm = MakeShm(kSlot, 60, false, 4096);
  ASSERT_TRUE(shm);
  for (int i = 0; i < 40; ++i) {
    CheckAllreduce<float>(*shm, DataType::kFloat32, ReduceOp::kSum, 3000 + i, i % 2 == 0);
    if (HasFatalFailure()) return;
  }
  ExpectMemberZerosChoiceFollowed(shm->path(), shm->backend_calls(), "took different paths");

  std::unique_ptr<ShmComm> off = MakeShm(kSlot, 60, false, Rank() == 1 ? -1 : 4096);
  ASSERT_TRUE(off);
  off->ForcePath(true);
  CheckAllreduce<float>(*off, DataType::kFloat32, ReduceOp::kSum, 5000, true);
  EXPECT_EQ(off->backend_calls(), 0);
}

// Choosers `a` and `b` would choose the same ways for the next calls of
// `bytes`, tries included.
void ExpectSameChoices(StoreChooser a, StoreChooser b, int64_t bytes, const char* what) {
  for (int i = 0; i < 3 * static_cast<int>(StoreChooser::kMaxExplore); ++i) {
    const StoreChooser::Choice x = a.Choose(bytes), y = b.Choose(bytes);
    ASSERT_TRUE(x.stream == y.stream && x.explore == y.explore) << what << ": call " << i;
  }
}

// Whether every member's HugeBuffer of `bytes` lies in huge pages (smaps),
// where the kernel can tell (the same answer on every member).
bool HugePagesEverywhere(const testing::HugeBuffer& b, int64_t bytes) {
  int ok = testing::KernelScansPageMaps() && b.huge_bytes() >= bytes;
  EXPECT_EQ(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), MPI_SUCCESS);
  return ok == 1;
}

// Unforced, on tensors in huge pages (as numpy's), member 0 times the slots
// and the direct path and everyone follows its choice: exact results, both
// paths timed, the same calls direct everywhere. Where one member's tensors
// lie in 4 KiB pages, or every member's do, every call takes the slots,
// untimed, and member 0's chooser is where it was. A member that rules the
// path out rules it out for all.
TEST(ShmComm, MemberZeroChoosesTheDirectPathForEveryone) {
  std::unique_ptr<ShmComm> shm = MakeShm(kSlot);
  ASSERT_TRUE(shm);
  ASSERT_TRUE(shm->peer_reads()) << "process_vm_readv is not allowed here";
  const int64_t n = ShmComm::kDirectMinBytes / 4 + 40, bytes = n * 4;
  // Numpy's arrays lie 16 or 64 bytes past a page's boundary.
  const testing::HugeBuffer in(8 << 20, 64), out(8 << 20, 64);
  if (!HugePagesEverywhere(in, bytes) || !HugePagesEverywhere(out, bytes)) {
    GTEST_SKIP() << "no huge pages here, or no PAGEMAP_SCAN (Linux 6.7) to tell";
  }
  for (int i = 0; i < 40; ++i) {
    float* dst = i % 2 == 0 ? in.as<float>() : out.as<float>();
    CheckAllreduceIn<float>(*shm, DataType::kFloat32, ReduceOp::kSum, n - i, in.as<float>(), dst);
    if (HasFatalFailure()) return;
  }
  ExpectMemberZerosChoiceFollowed(shm->path(), shm->peer_read_calls(), "took different paths");
  EXPECT_EQ(shm->backend_calls(), 0);
  const int64_t direct = shm->peer_read_calls();
  const double figures[2] = {shm->path().ns_per_byte(false), shm->path().ns_per_byte(true)};
  const StoreChooser before = shm->path();
  std::vector<float> heap(static_cast<size_t>(n));
  for (int i = 0; i < 40; ++i) {  // small pages: on rank 1 only, then everywhere
    float* x = i < 20 && Rank() != 1 ? in.as<float>() : heap.data();
    CheckAllreduceIn<float>(*shm, DataType::kFloat32, ReduceOp::kSum, n - i, x, x);
    if (HasFatalFailure()) return;
  }
  EXPECT_EQ(shm->peer_read_calls(), direct);
  EXPECT_EQ(shm->path().ns_per_byte(false), figures[0]) << "a call in small pages was timed";
  EXPECT_EQ(shm->path().ns_per_byte(true), figures[1]);
  ExpectSameChoices(before, shm->path(), bytes, "a call in small pages spent a turn");

  // A member that does not read its peers (HVD_SHARED_MEMORY_PEER_READS=0
  // there) rules it out for all.
  std::unique_ptr<ShmComm> off = MakeShm(kSlot, 60, /*peer_reads=*/Rank() != 1);
  ASSERT_TRUE(off);
  EXPECT_FALSE(off->peer_reads());
  off->ForcePath(true);
  CheckAllreduce<float>(*off, DataType::kFloat32, ReduceOp::kSum, ShmComm::kDirectMinBytes / 2,
                        true);
  EXPECT_EQ(off->peer_read_calls(), 0);
}

// Rounds smaller than a slot: member 0 times its large calls with the
// rounds in the first part of their slots and with the parts in turn, and
// publishes the next large call's placement (shm_shared.cc). Calls of one
// slot and less come in between. Exact results; both placements timed; the
// same calls took the parts in turn on every member; no call tried a
// placement while it tried the stores.
TEST(ShmComm, MemberZeroChoosesThePlacementForEveryone) {
  // 4 MiB slots hold at least 4 rounds whatever the L2 (SharedRoundBytes).
  std::unique_ptr<ShmComm> shm = MakeShm(int64_t{4} << 20, 60, /*peer_reads=*/false);
  ASSERT_TRUE(shm);
  for (int i = 0; i < 24; ++i) {
    const int64_t large = (int64_t{5} << 20) / 4 + 1000 * i + 7;
    CheckAllreduce<float>(*shm, DataType::kFloat32, ReduceOp::kSum, large, i % 2 == 0);
    if (i % 3 == 0) CheckAllreduce<int32_t>(*shm, DataType::kInt32, ReduceOp::kMax, 3000, false);
    if (HasFatalFailure()) return;
  }
  ExpectMemberZerosChoiceFollowed(shm->placement(), shm->turns_calls(),
                                  "placed the rounds differently");
  EXPECT_EQ(shm->both_tried_calls(), 0) << "a call tried a placement and the stores at once";
}

// Large calls that may take MPI's allreduce: member 0 chooses the path, and
// on the slots' calls the stores and the placement. A call that tries
// stores or a placement not in use is slower for their sake, so the path
// chooser takes no time from it (its turn waits); a call through MPI leaves
// the stores' choice standing, so the placement chosen beside it never
// meets a new try of the stores. Exact results, both paths still timed,
// every member on member 0's path.
TEST(ShmComm, ThePathTakesNoTimeFromAnotherChoosersTry) {
  std::unique_ptr<ShmComm> shm =
      MakeShm(int64_t{4} << 20, 60, /*peer_reads=*/false, /*backend_min_bytes=*/4096);
  ASSERT_TRUE(shm);
  for (int i = 0; i < 48; ++i) {
    const int64_t large = (int64_t{5} << 20) / 4 + 1000 * i + 7;
    CheckAllreduce<float>(*shm, DataType::kFloat32, ReduceOp::kSum, large, i % 2 == 0);
    if (HasFatalFailure()) return;
  }
  ExpectMemberZerosChoiceFollowed(shm->path(), shm->backend_calls(), "took different paths");
  EXPECT_EQ(shm->path_timed_tries(), 0) << "the path was timed on a try of the stores or placement";
  EXPECT_EQ(shm->both_tried_calls(), 0);
}

// An allreduce reads one set of slots while it writes the next; the other
// collectives' rounds follow it at once: back to back, with every number of
// rounds, nothing is overwritten before it is read.
TEST(ShmComm, CollectivesBackToBackKeepEachOthersSlots) {
  std::unique_ptr<ShmComm> shm = MakeShm(kSlot);
  ASSERT_TRUE(shm);
  const int64_t e = kSlot / 4;
  for (int64_t n : {int64_t{1}, e - 1, e + 1, 2 * e, 3 * e + 1, 7 * e + 3}) {
    for (int rep = 0; rep < 3; ++rep) {
      CheckAllreduce<int32_t>(*shm, DataType::kInt32, ReduceOp::kSum, n, rep == 1);
      if (HasFatalFailure()) return;
      std::vector<int32_t> mine(static_cast<size_t>(n)), all(static_cast<size_t>(n * Size()));
      for (int64_t i = 0; i < n; ++i) mine[i] = static_cast<int32_t>(V(Rank(), i));
      const Status s =
          shm->Allgatherv(mine.data(), all.data(), std::vector<int64_t>(Size(), n * 4));
      ASSERT_TRUE(s.ok()) << s.message();
      for (int r = 0; r < Size(); ++r) {
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(all[r * n + i], V(r, i)) << r << " " << i;
      }
    }
  }
}

// Block k has counts[k] elements (uneven, some empty); rank r keeps its own,
// reduced.
TEST(ShmComm, ReducescatterUnevenBlocks) {
  std::unique_ptr<ShmComm> shm = MakeShm(kSlot);
  ASSERT_TRUE(shm);
  for (int64_t unit : {int64_t{1}, int64_t{17}, int64_t{200}}) {
    std::vector<int64_t> counts;
    int64_t total = 0;
    for (int k = 0; k < Size(); ++k) total += counts.emplace_back(k == 1 ? 0 : unit * (k + 1));
    std::vector<int32_t> in(static_cast<size_t>(total));
    for (int64_t i = 0; i < total; ++i) in[i] = static_cast<int32_t>(V(Rank(), i));
    std::vector<int32_t> out(static_cast<size_t>(counts[Rank()]) + 1, -7);
    const Status s =
        shm->Reducescatter(in.data(), out.data(), counts, DataType::kInt32, ReduceOp::kSum);
    ASSERT_TRUE(s.ok()) << s.message();
    int64_t first = 0;
    for (int k = 0; k < Rank(); ++k) first += counts[k];
    for (int64_t i = 0; i < counts[Rank()]; ++i) {
      ASSERT_EQ(out[i], Expected(ReduceOp::kSum, first + i)) << "unit " << unit << " [" << i << "]";
    }
    ASSERT_EQ(out[counts[Rank()]], -7) << "wrote past its block";
  }
}

TEST(ShmComm, AllgathervUnevenAndEmpty) {
  std::unique_ptr<ShmComm> shm = MakeShm(kSlot);
  ASSERT_TRUE(shm);
  for (int64_t unit : {int64_t{1}, int64_t{100}, int64_t{1000}}) {
    std::vector<int64_t> bytes;
    for (int k = 0; k < Size(); ++k) bytes.push_back(k == Size() - 1 ? 0 : unit * (k + 1) + k);
    std::vector<uint8_t> in(static_cast<size_t>(bytes[Rank()]));
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(Rank() * 31 + i);
    int64_t total = 0;
    for (int64_t b : bytes) total += b;
    std::vector<uint8_t> out(static_cast<size_t>(total));
    const Status s = shm->Allgatherv(in.data(), out.data(), bytes);
    ASSERT_TRUE(s.ok()) << s.message();
    size_t at = 0;
    for (int k = 0; k < Size(); ++k) {
      for (int64_t i = 0; i < bytes[k]; ++i, ++at) {
        ASSERT_EQ(out[at], static_cast<uint8_t>(k * 31 + i)) << "unit " << unit << " rank " << k;
      }
    }
  }
}

// Every root, sizes around the round (all members' slots: Size() * kSlot).
TEST(ShmComm, BroadcastEveryRootAndSize) {
  std::unique_ptr<ShmComm> shm = MakeShm(kSlot);
  ASSERT_TRUE(shm);
  const int64_t per_round = Size() * kSlot;
  for (int root = 0; root < Size(); ++root) {
    for (int64_t n : {int64_t{0}, int64_t{1}, per_round - 1, per_round, per_round + 1,
                      3 * per_round + 5, int64_t{10007}}) {
      std::vector<uint8_t> buf(static_cast<size_t>(n) + 1, 0xEE);
      if (Rank() == root) {
        for (int64_t i = 0; i < n; ++i) buf[i] = static_cast<uint8_t>(root * 31 + i * 7);
      }
      const Status s = shm->Broadcast(buf.data(), n, root);
      ASSERT_TRUE(s.ok()) << s.message();
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(buf[i], static_cast<uint8_t>(root * 31 + i * 7)) << "root " << root << " n " << n;
      }
      ASSERT_EQ(buf[n], 0xEE) << "wrote past the buffer";
    }
  }
  EXPECT_EQ(shm->Broadcast(nullptr, 0, Size()).code(), Status::Invalid("").code());
}

// Uneven, empty and multi-round parts; then one pair alone with many rounds
// (the others must agree on the number of rounds without knowing its size).
TEST(ShmComm, AlltoallvUnevenEmptyAndOnePair) {
  std::unique_ptr<ShmComm> shm = MakeShm(kSlot);
  ASSERT_TRUE(shm);
  const int64_t q = kSlot / Size();  // a part per member per round
  auto byte = [](int from, int to, int64_t i) {
    return static_cast<uint8_t>(from * 37 + to * 11 + i);
  };
  using Sizes = std::function<int64_t(int, int)>;
  const std::vector<std::pair<std::string, Sizes>> cases = {
      {"uneven",
       [](int f, int t) { return int64_t{(f + 2 * t) % 3 == 0 ? 0 : 5 * f + 13 * t + 1}; }},
      {"rounds", [q](int f, int t) { return (f + t + 1) * q + f; }},
      {"one pair", [q](int f, int t) { return f == 0 && t == Size() - 1 ? 3 * q + 7 : 0; }},
      {"all empty", [](int, int) { return int64_t{0}; }},
  };
  for (const auto& [name, sz] : cases) {
    std::vector<int64_t> send, recv;
    std::vector<uint8_t> in;
    int64_t total = 0;
    for (int k = 0; k < Size(); ++k) {
      send.push_back(sz(Rank(), k));
      recv.push_back(sz(k, Rank()));
      for (int64_t i = 0; i < send.back(); ++i) in.push_back(byte(Rank(), k, i));
      total += recv.back();
    }
    std::vector<uint8_t> out(static_cast<size_t>(total) + 1, 0xEE);
    const Status s = shm->Alltoallv(in.data(), send, out.data(), recv);
    ASSERT_TRUE(s.ok()) << name << ": " << s.message();
    size_t at = 0;
    for (int k = 0; k < Size(); ++k) {
      for (int64_t i = 0; i < recv[k]; ++i, ++at) {
        ASSERT_EQ(out[at], byte(k, Rank(), i)) << name << ": from rank " << k << " byte " << i;
      }
    }
    ASSERT_EQ(out[at], 0xEE) << name << ": wrote past the output";
  }
  // Still in step with the other collectives.
  int32_t v = Rank() + 1;
  ASSERT_TRUE(shm->Allreduce({&v, 1, DataType::kInt32, ReduceOp::kSum}).ok());
  EXPECT_EQ(v, Size() * (Size() + 1) / 2);
}

// Each collective's large calls are timed with plain and streaming stores
// into the slots (member 0's StoreChooser: the first large call untimed,
// then plain and streaming in turn, twice each), so both ways wrote slots
// whose results are checked exactly here, with slots that take many rounds
// and unaligned tails, every member as member 0 chose.
TEST(ShmComm, EveryCollectiveWritesItsSlotsBothWays) {
  std::unique_ptr<ShmComm> shm = MakeShm(64 << 10, 60, /*peer_reads=*/false);
  ASSERT_TRUE(shm);
  const int p = Size(), root = p - 1;
  const int64_t n = StoreChooser::kMinBytes / 4 + 5;  // int32 per rank, block or part
  std::vector<int64_t> counts(p, n), bytes(p, n * 4);
  std::vector<int32_t> in(static_cast<size_t>(n * p)), out(static_cast<size_t>(n * p));
  for (int64_t i = 0; i < n * p; ++i) in[i] = static_cast<int32_t>(V(Rank(), i));
  auto byte = [](int from, int to, int64_t i) { return static_cast<int32_t>(from * 37 + to + i); };
  for (int call = 0; call < 6; ++call) {
    ASSERT_TRUE(
        shm->Reducescatter(in.data(), out.data(), counts, DataType::kInt32, ReduceOp::kSum).ok());
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(out[i], Expected(ReduceOp::kSum, Rank() * n + i)) << "call " << call << " " << i;
    }
    ASSERT_TRUE(shm->Allgatherv(in.data(), out.data(), bytes).ok());
    for (int r = 0; r < p; ++r) {
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[r * n + i], V(r, i)) << "call " << call;
    }
    std::vector<int32_t> b(static_cast<size_t>(n * p), -1);
    if (Rank() == root) b = in;
    ASSERT_TRUE(shm->Broadcast(b.data(), n * p * 4, root).ok());
    for (int64_t i = 0; i < n * p; ++i) ASSERT_EQ(b[i], V(root, i)) << "call " << call;
    std::vector<int32_t> send(static_cast<size_t>(n * p));
    for (int t = 0; t < p; ++t) {
      for (int64_t i = 0; i < n; ++i) send[t * n + i] = byte(Rank(), t, i);
    }
    ASSERT_TRUE(shm->Alltoallv(send.data(), bytes, out.data(), bytes).ok());
    for (int r = 0; r < p; ++r) {
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[r * n + i], byte(r, Rank(), i)) << call;
    }
  }
  for (auto kind : {ShmComm::kReducescatterStores, ShmComm::kAllgatherStores,
                    ShmComm::kBroadcastStores, ShmComm::kAlltoallStores}) {
    SCOPED_TRACE(kind);
    ExpectMemberZerosChoiceFollowed(shm->stores(kind), shm->streamed_calls(kind), "differ");
  }
  EXPECT_EQ(shm->stores(ShmComm::kAllreduceStores).ns_per_byte(false), 0.0);
}

// A float buffer from SharedBuffers (hvd_alloc_shared), freed with it.
struct SharedFloats {
  explicit SharedFloats(int64_t n) {
    void* p = nullptr;
    const Status s = SharedBuffers::Alloc(std::max<int64_t>(n, 1) * 4, &p);
    EXPECT_TRUE(s.ok()) << s.message();
    data = static_cast<float*>(p);
  }
  ~SharedFloats() { EXPECT_TRUE(SharedBuffers::Free(data).ok()); }
  SharedFloats(const SharedFloats&) = delete;
  SharedFloats& operator=(const SharedFloats&) = delete;
  float* data = nullptr;
};

// n floats through regions of cut + rank elements (no two ranks cut alike),
// from `in` to `out` (the same buffer: in place); exact results.
void CheckCut(ShmComm& shm, float* in, float* out, int64_t n, ReduceOp op, double post,
              int64_t cut = 7) {
  for (int64_t i = 0; i < n; ++i) in[i] = static_cast<float>(V(Rank(), i));
  std::vector<DirectRegion> regions;
  for (int64_t at = 0; at < n;) {
    const int64_t k = std::min<int64_t>(cut + Rank(), n - at);
    regions.push_back(
        {reinterpret_cast<uint64_t>(in + at), reinterpret_cast<uint64_t>(out + at), k});
    at += k;
  }
  const Status s = Direct(shm, regions, n, DataType::kFloat32, op, post);
  ASSERT_TRUE(s.ok()) << s.message();
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(out[i], static_cast<float>(Expected(op, i) * post))
        << "n=" << n << " op=" << static_cast<int>(op) << " [" << i << "]";
  }
}

// Tensors in shared buffers on every member: reduced between the buffers
// (every op, in place and not, a postscale, shares of several blocks),
// whatever the regions' cut (coarser for the large count: a table must fit
// in a slot); then a buffer freed and another allocated
// (the peers map it afresh); a table too large for a slot, or one member's
// tensors in private memory, go through the slots, exactly too.
TEST(ShmComm, AllreduceBetweenSharedBuffers) {
  std::unique_ptr<ShmComm> shm = MakeShm(ShmComm::kDefaultSlotBytes, 60, /*peer_reads=*/false);
  ASSERT_TRUE(shm);
  const int64_t big = (int64_t{3} << 17) + 5;
  int64_t calls = 0;
  {
    SharedFloats a(big), b(big);
    for (int64_t n : {int64_t{1}, int64_t{Size()} + 1, int64_t{4099}, big}) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
        const double post = op == ReduceOp::kSum ? 0.5 : 1.0;
        const int64_t cut = n == big ? 4096 : 7;
        CheckCut(*shm, a.data, a.data, n, op, post, cut);
        CheckCut(*shm, a.data, b.data, n, op, post, cut);
        if (HasFatalFailure()) return;
        calls += 2;
      }
    }
    EXPECT_EQ(shm->mapped_calls(), calls);
  }
  {
    SharedFloats c(big);  // a new buffer: the peers forget the freed ones
    CheckCut(*shm, c.data, c.data, big, ReduceOp::kSum, 1.0, 4096);
    EXPECT_EQ(shm->mapped_calls(), ++calls);
    // Rank 0's output in private memory: every member through the slots.
    std::vector<float> mine(static_cast<size_t>(big));
    CheckCut(*shm, c.data, Rank() == 0 ? mine.data() : c.data, big, ReduceOp::kMax, 1.0, 4096);
    EXPECT_EQ(shm->mapped_calls(), calls);
  }
  // 64-float regions: a slot of 256 bytes holds no table of them.
  std::unique_ptr<ShmComm> small = MakeShm(kSlot, 60, false);
  ASSERT_TRUE(small);
  SharedFloats d(4099);
  CheckCut(*small, d.data, d.data, 4099, ReduceOp::kSum, 1.0);
  CheckCut(*small, d.data, d.data, 3, ReduceOp::kSum, 1.0);
  EXPECT_EQ(small->mapped_calls(), 1);
}

// The segments' names in /dev/shm ("hvd-<hex>"), not shared buffers'
// ("hvd-buf.<pid>.<id>", named for their lifetime): other tests of ctest -j
// may hold those meanwhile.
bool SegmentNames(std::set<std::string>* names) {
  DIR* d = opendir("/dev/shm");
  if (!d) return false;
  while (dirent* e = readdir(d)) {
    if (std::strncmp(e->d_name, "hvd-", 4) == 0 && std::strncmp(e->d_name, "hvd-buf.", 8) != 0) {
      names->insert(e->d_name);
    }
  }
  closedir(d);
  return true;
}

// The creator unlinks the name once everyone has mapped it: no segment name
// is left that was not there before. Another test of ctest -j may hold a
// name of its own for the moment its members take to map it, so a new name
// counts as left only if it is still there seconds later.
TEST(ShmComm, LeavesNothingInDevShm) {
  std::set<std::string> before;
  ASSERT_TRUE(SegmentNames(&before));
  MPI_Barrier(MPI_COMM_WORLD);
  std::unique_ptr<ShmComm> shm = MakeShm(kSlot);
  ASSERT_TRUE(shm);
  MPI_Barrier(MPI_COMM_WORLD);
  std::vector<std::string> left;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  do {
    std::set<std::string> after;
    ASSERT_TRUE(SegmentNames(&after));
    left.clear();
    for (const std::string& n : after) {
      if (!before.count(n)) left.push_back(n);
    }
    if (!left.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (!left.empty() && std::chrono::steady_clock::now() < until);
  EXPECT_TRUE(left.empty()) << left[0];
}

// Only rank 0 calls: it times out naming the member it waited for, and the
// Comm is unusable afterwards; Abort from another thread ends a wait.
TEST(ShmComm, MissingMemberTimesOutAndAbortEndsTheWait) {
  std::unique_ptr<ShmComm> quick = MakeShm(kSlot, /*timeout_s=*/0.5);
  std::unique_ptr<ShmComm> slow = MakeShm(kSlot, /*timeout_s=*/60);
  ASSERT_TRUE(quick && slow);
  if (Rank() == 0) {
    std::vector<float> v(100, 1.0f);
    auto t0 = std::chrono::steady_clock::now();
    Status s = quick->Allreduce({v.data(), 100, DataType::kFloat32, ReduceOp::kSum});
    EXPECT_EQ(s.code(), Code::kTimeout) << s.message();
    EXPECT_NE(s.message().find("member 1 of this host's group did not arrive"), std::string::npos)
        << s.message();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
    s = quick->Allgatherv(v.data(), v.data(), std::vector<int64_t>(Size(), 0));
    EXPECT_NE(s.message().find("unusable since an earlier call failed"), std::string::npos)
        << s.message();
    std::thread stop([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      slow->Abort();
    });
    t0 = std::chrono::steady_clock::now();
    s = slow->Allreduce({v.data(), 100, DataType::kFloat32, ReduceOp::kSum});
    stop.join();
    EXPECT_NE(s.message().find("aborted"), std::string::npos) << s.message();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace
}  // namespace hvd
