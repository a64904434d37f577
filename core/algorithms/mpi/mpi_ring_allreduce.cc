#include "core/algorithms/mpi/mpi_ring_allreduce.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "core/backends/mpi/mpi_comm.h"
#include "core/backends/mpi/mpi_tcp_defaults.h"
#include "core/common/logging.h"
#include "core/common/reduce.h"

namespace hvd {
namespace {

// After a completion the thread polls without sleeping for kSpin: on a fast
// link the next piece completes within it (256 KiB take 21 us at 100
// Gbit/s), so sleeping would only throttle it. Then it sleeps between polls:
// from kMinSleep, doubling while nothing completes, up to kMaxSleep. At a
// 1 Gbit/s link shared by two streams, 500 us is ~30 KB per stream, far
// less than what the kernel's socket buffers hold, so the link does not run
// dry while the thread sleeps.
constexpr std::chrono::microseconds kSpin{50};
constexpr std::chrono::microseconds kMinSleep{20};
constexpr std::chrono::microseconds kMaxSleep{500};

// MPI guarantees tags up to 32767 (MPI_TAG_UB may be larger).
constexpr int64_t kMaxTags = 32767;

Status Fail(int rc, const char* what) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  return Status::Backend(std::string("MPI ") + what +
                         " (ring allreduce) failed: " + std::string(msg, len));
}

int Mod(int a, int p) {
  return ((a % p) + p) % p;
}

// One run: the blocks' layout, the pieces they are cut into, and the
// requests in flight. Block b = [start[b], start[b] + len[b]); the first
// count % p blocks are one element longer. Piece j of a block: [j * pe,
// min(len, (j + 1) * pe)), empty for a shorter block's last piece (skipped
// alike by both sides). Steps 0..p-2 reduce-scatter, p-1.. allgather. Step
// t sends block SendBlock(t) to the right and receives RecvBlock(t) from
// the left; the block sent at step t is the one received at step t-1, so
// piece j of step t can go as soon as piece j of step t-1 has arrived (and
// been reduced). Rank r ends the reduce-scatter owning block r+1.
struct RingRun {
  MPI_Comm comm;
  uint8_t* buf;
  DataType dt;
  ReduceOp op;
  MPI_Datatype type;
  int p, r, right, left, steps, pieces, n;
  int64_t esize, pe;
  size_t region;  // scratch bytes per reduce-scatter step
  uint8_t* scratch = nullptr;
  std::vector<int64_t> start, len;
  std::vector<MPI_Request> reqs;  // [0, n): receives; [n, 2n): sends

  RingRun(MPI_Comm c, void* out, int64_t count, DataType d, ReduceOp o, int size, int rank,
          int64_t piece_bytes)
      : comm(c),
        buf(static_cast<uint8_t*>(out)),
        dt(d),
        op(o),
        type(ToMpiType(d)),
        p(size),
        r(rank),
        right(Mod(rank + 1, size)),
        left(Mod(rank - 1, size)),
        steps(2 * (size - 1)),
        esize(static_cast<int64_t>(DataTypeSize(d))),
        start(static_cast<size_t>(size)),
        len(static_cast<size_t>(size)) {
    for (int b = 0; b < p; ++b) {
      len[b] = count / p + (b < count % p ? 1 : 0);
      start[b] = b == 0 ? 0 : start[b - 1] + len[b - 1];
    }
    const int64_t longest = len[0];
    pe = std::max<int64_t>(1, piece_bytes / esize);
    // One tag per (step, piece).
    pe = std::max(pe, (longest + kMaxTags / steps - 1) / (kMaxTags / steps));
    pieces = static_cast<int>(std::max<int64_t>(1, (longest + pe - 1) / pe));
    region = static_cast<size_t>(longest * esize);
    n = steps * pieces;
    reqs.assign(static_cast<size_t>(2 * n), MPI_REQUEST_NULL);
  }

  int SendBlock(int t) const { return t < p - 1 ? Mod(r - t, p) : Mod(r + 1 - (t - p + 1), p); }
  int RecvBlock(int t) const { return t < p - 1 ? Mod(r - t - 1, p) : Mod(r - (t - p + 1), p); }
  int64_t PieceLen(int b, int j) const {
    return std::max<int64_t>(0, std::min(pe, len[b] - int64_t{j} * pe));
  }
  uint8_t* Scratch(int t, int j) const { return scratch + region * t + j * pe * esize; }
  uint8_t* Block(int b, int j) const { return buf + (start[b] + j * pe) * esize; }

  int PostRecv(int t, int j) {
    const int b = RecvBlock(t);
    const int64_t m = PieceLen(b, j);
    if (m == 0) return MPI_SUCCESS;
    uint8_t* dst = t < p - 1 ? Scratch(t, j) : Block(b, j);
    return MPI_Irecv(dst, static_cast<int>(m), type, left, t * pieces + j, comm,
                     &reqs[t * pieces + j]);
  }
  int PostSend(int t, int j) {
    const int b = SendBlock(t);
    const int64_t m = PieceLen(b, j);
    if (m == 0) return MPI_SUCCESS;
    return MPI_Isend(Block(b, j), static_cast<int>(m), type, right, t * pieces + j, comm,
                     &reqs[n + t * pieces + j]);
  }
  // The allgather writes a block where an earlier reduce-scatter step sent
  // it from (block r-s: sent at step s, received at step p-1+s): that
  // receive is posted once that send has completed, as MPI requires. The
  // reduce-scatter's receives go to scratch and are all posted at once.
  int Start() {
    int rc = MPI_SUCCESS;
    for (int t = 0; t < p - 1 && rc == MPI_SUCCESS; ++t) {
      for (int j = 0; j < pieces && rc == MPI_SUCCESS; ++j) rc = PostRecv(t, j);
    }
    for (int j = 0; j < pieces && rc == MPI_SUCCESS; ++j) rc = PostSend(0, j);
    return rc;
  }
  // Request `id` completed: post what it unblocks (reducing a received
  // reduce-scatter piece first).
  int OnDone(int id) {
    const bool is_send = id >= n;
    const int t = (is_send ? id - n : id) / pieces, j = (is_send ? id - n : id) % pieces;
    if (is_send) return t < p - 1 ? PostRecv(p - 1 + t, j) : MPI_SUCCESS;
    if (t < p - 1) {
      const int b = RecvBlock(t);
      ReduceInto(Block(b, j), Scratch(t, j), PieceLen(b, j), dt, op);
    }
    return t + 1 < steps ? PostSend(t + 1, j) : MPI_SUCCESS;
  }
};

// Waits for every request of `run`, handling each completion as it comes.
Status Drive(RingRun& run) {
  using Clock = std::chrono::steady_clock;
  const int total = 2 * run.n;
  std::vector<int> done(static_cast<size_t>(total));
  std::vector<MPI_Status> statuses(static_cast<size_t>(total));
  auto sleep = kMinSleep;
  auto last = Clock::now();  // of the last completion (or the start)
  while (true) {
    int outcount = 0;
    int rc = MPI_Testsome(total, run.reqs.data(), &outcount, done.data(), statuses.data());
    if (rc != MPI_SUCCESS) return Fail(rc, "Testsome");
    if (outcount == MPI_UNDEFINED) return Status::OK();  // nothing left
    if (outcount == 0) {
      if (Clock::now() - last < kSpin) continue;
      std::this_thread::sleep_for(sleep);
      sleep = std::min(sleep * 2, kMaxSleep);
      continue;
    }
    sleep = kMinSleep;
    last = Clock::now();
    for (int k = 0; k < outcount && rc == MPI_SUCCESS; ++k) rc = run.OnDone(done[k]);
    if (rc != MPI_SUCCESS) return Fail(rc, "Isend/Irecv");
  }
}

}  // namespace

Status MpiRingAllreduce::Run(MPI_Comm comm, const void* in, void* out, int64_t count, DataType dt,
                             ReduceOp op) {
  const int64_t esize = static_cast<int64_t>(DataTypeSize(dt));
  if (in != out && count > 0) std::memcpy(out, in, static_cast<size_t>(count * esize));
  int p = 1, r = 0;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &r);
  if (p == 1 || count <= 0) return Status::OK();
  RingRun run(comm, out, count, dt, op, p, r, piece_bytes_);
  if (scratch_.size() < run.region * static_cast<size_t>(p - 1)) {
    scratch_.resize(run.region * static_cast<size_t>(p - 1));
  }
  run.scratch = scratch_.data();
  const int rc = run.Start();
  if (rc != MPI_SUCCESS) return Fail(rc, "Isend/Irecv");
  return Drive(run);
}

namespace {

// MpiComm's quiet allreduce: this ring, in pieces Open MPI's TCP transport
// sends eagerly where it runs with its emulated RDMA put.
std::unique_ptr<MpiAllreduceAlgorithm> MakeQuietRing(int rank) {
  const int64_t piece = RingPieceBytes(MpiRingAllreduce::kDefaultPieceBytes);
  if (piece != MpiRingAllreduce::kDefaultPieceBytes && rank == 0) {
    HVD_LOG(kInfo) << "MPI: Open MPI's TCP transport runs with its emulated RDMA put "
                      "(btl_tcp_flags): the cross-host ring sends pieces of "
                   << piece << " bytes, within its eager limit";
  }
  return std::make_unique<MpiRingAllreduce>(piece);
}

[[maybe_unused]] const bool kRegistered = RegisterMpiQuietAllreduce(&MakeQuietRing);

}  // namespace
}  // namespace hvd
