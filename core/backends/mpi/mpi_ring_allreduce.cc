#include "core/backends/mpi/mpi_ring_allreduce.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "core/backends/mpi/mpi_comm.h"
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

}  // namespace

Status MpiRingAllreduce::Run(MPI_Comm comm, const void* in, void* out, int64_t count, DataType dt,
                             ReduceOp op) {
  const int64_t esize = static_cast<int64_t>(DataTypeSize(dt));
  auto* buf = static_cast<uint8_t*>(out);
  if (in != out && count > 0) std::memcpy(buf, in, static_cast<size_t>(count * esize));
  int p = 1, r = 0;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &r);
  if (p == 1 || count <= 0) return Status::OK();

  // Block b = [start[b], start[b] + len[b]); the first count % p blocks are
  // one element longer. Piece j of a block: [j * pe, min(len, (j + 1) * pe)),
  // empty for a shorter block's last piece (skipped alike by both sides).
  std::vector<int64_t> start(static_cast<size_t>(p)), len(static_cast<size_t>(p));
  for (int b = 0; b < p; ++b) {
    len[b] = count / p + (b < count % p ? 1 : 0);
    start[b] = b == 0 ? 0 : start[b - 1] + len[b - 1];
  }
  const int64_t longest = len[0];
  const int steps = 2 * (p - 1);
  int64_t pe = std::max<int64_t>(1, piece_bytes_ / esize);
  // One tag per (step, piece).
  pe = std::max(pe, (longest + kMaxTags / steps - 1) / (kMaxTags / steps));
  const int pieces = static_cast<int>(std::max<int64_t>(1, (longest + pe - 1) / pe));
  // Steps 0..p-2 reduce-scatter, p-1.. allgather. Step t sends block
  // send_block(t) to the right and receives recv_block(t) from the left;
  // the block sent at step t is the one received at step t-1, so piece j of
  // step t can go as soon as piece j of step t-1 has arrived (and been
  // reduced). Rank r ends the reduce-scatter owning block r+1.
  auto send_block = [&](int t) { return t < p - 1 ? Mod(r - t, p) : Mod(r + 1 - (t - p + 1), p); };
  auto recv_block = [&](int t) { return t < p - 1 ? Mod(r - t - 1, p) : Mod(r - (t - p + 1), p); };
  auto piece_len = [&](int b, int j) {
    return std::max<int64_t>(0, std::min(pe, len[b] - int64_t{j} * pe));
  };
  const int right = Mod(r + 1, p), left = Mod(r - 1, p);
  const MPI_Datatype type = ToMpiType(dt);
  const size_t region = static_cast<size_t>(longest * esize);  // per reduce-scatter step
  if (scratch_.size() < region * static_cast<size_t>(p - 1)) {
    scratch_.resize(region * static_cast<size_t>(p - 1));
  }
  const int n = steps * pieces;  // requests [0, n): receives; [n, 2n): sends
  std::vector<MPI_Request> reqs(static_cast<size_t>(2 * n), MPI_REQUEST_NULL);
  std::vector<int> done(static_cast<size_t>(2 * n));
  std::vector<MPI_Status> statuses(static_cast<size_t>(2 * n));

  auto post_recv = [&](int t, int j) {
    const int b = recv_block(t);
    const int64_t m = piece_len(b, j);
    if (m == 0) return MPI_SUCCESS;
    uint8_t* dst = t < p - 1 ? scratch_.data() + region * t + j * pe * esize
                             : buf + (start[b] + j * pe) * esize;
    return MPI_Irecv(dst, static_cast<int>(m), type, left, t * pieces + j, comm,
                     &reqs[t * pieces + j]);
  };
  auto post_send = [&](int t, int j) {
    const int b = send_block(t);
    const int64_t m = piece_len(b, j);
    if (m == 0) return MPI_SUCCESS;
    return MPI_Isend(buf + (start[b] + j * pe) * esize, static_cast<int>(m), type, right,
                     t * pieces + j, comm, &reqs[n + t * pieces + j]);
  };
  // The allgather writes a block where an earlier reduce-scatter step sent
  // it from (block r-s: sent at step s, received at step p-1+s): that
  // receive is posted once that send has completed, as MPI requires. The
  // reduce-scatter's receives go to scratch and are all posted now.
  int rc = MPI_SUCCESS;
  for (int t = 0; t < p - 1 && rc == MPI_SUCCESS; ++t) {
    for (int j = 0; j < pieces && rc == MPI_SUCCESS; ++j) rc = post_recv(t, j);
  }
  for (int j = 0; j < pieces && rc == MPI_SUCCESS; ++j) rc = post_send(0, j);
  if (rc != MPI_SUCCESS) return Fail(rc, "Isend/Irecv");

  using Clock = std::chrono::steady_clock;
  auto sleep = kMinSleep;
  auto last = Clock::now();  // of the last completion (or the start)
  while (true) {
    int outcount = 0;
    rc = MPI_Testsome(2 * n, reqs.data(), &outcount, done.data(), statuses.data());
    if (rc != MPI_SUCCESS) return Fail(rc, "Testsome");
    if (outcount == MPI_UNDEFINED) break;  // nothing left
    if (outcount == 0) {
      if (Clock::now() - last < kSpin) continue;
      std::this_thread::sleep_for(sleep);
      sleep = std::min(sleep * 2, kMaxSleep);
      continue;
    }
    sleep = kMinSleep;
    last = Clock::now();
    for (int k = 0; k < outcount && rc == MPI_SUCCESS; ++k) {
      const int id = done[k];
      const bool is_send = id >= n;
      const int t = (is_send ? id - n : id) / pieces, j = (is_send ? id - n : id) % pieces;
      if (is_send) {
        if (t < p - 1) rc = post_recv(p - 1 + t, j);
        continue;
      }
      if (t < p - 1) {
        const int b = recv_block(t);
        ReduceInto(buf + (start[b] + j * pe) * esize, scratch_.data() + region * t + j * pe * esize,
                   piece_len(b, j), dt, op);
      }
      if (t + 1 < steps) rc = post_send(t + 1, j);
    }
    if (rc != MPI_SUCCESS) return Fail(rc, "Isend/Irecv");
  }
  return Status::OK();
}

}  // namespace hvd
