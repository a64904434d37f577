// hvd_p2p_bench: point-to-point latency and bandwidth of hvd_send_async /
// hvd_recv_async against raw MPI_Send/MPI_Recv, in the same launch
// (mpirun -np 2; ranks above 1 idle). A ping-pong between ranks 0 and 1 per
// message size; raw and hvd rounds alternate so that both see the same
// machine. Prints the median one-way time (half a round trip) and the
// bandwidth it gives, per size, and checks the payload that came back.
//
//   mpirun -np 2 build/bin/hvd_p2p_bench [--iters N] [--rounds R]
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "hvd/hvd.h"

namespace {

using Clock = std::chrono::steady_clock;

void Check(hvd_status s, const char* what) {
  if (s == HVD_OK) return;
  std::fprintf(stderr, "hvd_p2p_bench: %s: %s\n", what, hvd_last_error());
  MPI_Abort(MPI_COMM_WORLD, 1);
}

DLTensor Bytes(std::vector<unsigned char>& v, int64_t* shape) {
  DLTensor t{};
  t.data = v.data();
  t.device = {kDLCPU, 0};
  t.ndim = 1;
  t.dtype = {kDLUInt, 8, 1};
  *shape = static_cast<int64_t>(v.size());
  t.shape = shape;
  return t;
}

// One round: `iters` round trips; seconds per one-way trip.
double RawRound(int rank, std::vector<unsigned char>& buf, int iters, MPI_Comm comm) {
  const int n = static_cast<int>(buf.size());
  MPI_Barrier(comm);
  const auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) {
    if (rank == 0) {
      MPI_Send(buf.data(), n, MPI_BYTE, 1, 7, comm);
      MPI_Recv(buf.data(), n, MPI_BYTE, 1, 7, comm, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(buf.data(), n, MPI_BYTE, 0, 7, comm, MPI_STATUS_IGNORE);
      MPI_Send(buf.data(), n, MPI_BYTE, 0, 7, comm);
    }
  }
  return std::chrono::duration<double>(Clock::now() - t0).count() / (2.0 * iters);
}

double HvdRound(int rank, std::vector<unsigned char>& buf, int iters, MPI_Comm comm) {
  int64_t shape = 0;
  DLTensor t = Bytes(buf, &shape);
  MPI_Barrier(comm);
  const auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) {
    hvd_handle h = 0;
    for (int step = 0; step < 2; ++step) {
      const bool send = (rank == 0) == (step == 0);
      Check(send ? hvd_send_async(&t, 1 - rank, 7, nullptr, &h)
                 : hvd_recv_async(&t, 1 - rank, 7, nullptr, &h),
            send ? "hvd_send_async" : "hvd_recv_async");
      Check(hvd_wait(h, -1), "hvd_wait");
      hvd_release(h);
    }
  }
  return std::chrono::duration<double>(Clock::now() - t0).count() / (2.0 * iters);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int iters = 0, rounds = 7;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--iters")) iters = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[i + 1]);
  }
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  Check(hvd_init(), "hvd_init");
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) {
    std::fprintf(stderr, "hvd_p2p_bench: needs 2 ranks (mpirun -np 2)\n");
    return 1;
  }
  MPI_Comm pair;  // ranks 0 and 1; the others only take part in init/shutdown
  MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair);
  if (rank == 0) {
    std::printf("%-9s %12s %12s %8s %14s %14s   (one-way, median of %d rounds)\n", "bytes",
                "raw MPI us", "hvd us", "hvd/raw", "raw MB/s", "hvd MB/s", rounds);
  }
  bool ok = true;
  if (rank < 2) {
    for (int64_t bytes :
         {int64_t{1} << 10, int64_t{64} << 10, int64_t{1} << 20, int64_t{16} << 20}) {
      const int n = iters > 0 ? iters
                              : (bytes <= (64 << 10)  ? 2000
                                 : bytes <= (1 << 20) ? 200
                                                      : 20);
      std::vector<unsigned char> buf(static_cast<size_t>(bytes));
      for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<unsigned char>(i * 31 + 7);
      RawRound(rank, buf, n / 10 + 1, pair);  // warm up both paths
      HvdRound(rank, buf, n / 10 + 1, pair);
      std::vector<double> raw, hvd;
      for (int r = 0; r < rounds; ++r) {
        raw.push_back(RawRound(rank, buf, n, pair));
        hvd.push_back(HvdRound(rank, buf, n, pair));
      }
      for (size_t i = 0; i < buf.size(); ++i) {
        ok = ok && buf[i] == static_cast<unsigned char>(i * 31 + 7);
      }
      const double a = Median(raw), b = Median(hvd);
      if (rank == 0) {
        std::printf("%-9lld %12.2f %12.2f %8.2f %14.1f %14.1f\n", static_cast<long long>(bytes),
                    a * 1e6, b * 1e6, b / a, bytes / a / 1e6, bytes / b / 1e6);
        std::fflush(stdout);
      }
    }
    MPI_Comm_free(&pair);
  }
  if (rank == 0) std::printf("payload check: %s\n", ok ? "passed" : "FAILED");
  Check(hvd_shutdown(), "hvd_shutdown");
  MPI_Finalize();
  return ok ? 0 : 1;
}
