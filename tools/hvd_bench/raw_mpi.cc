#include "tools/hvd_bench/raw_mpi.h"

#include <mpi.h>
#include <strings.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "tools/hvd_bench/fail.h"

namespace hvdbench {
namespace {

void FinalizeAtExit() {  // after main's hvd_shutdown
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

bool ThreadsDisabled() {  // HVD_MPI_THREADS_DISABLE, as hvd reads it
  const char* v = std::getenv("HVD_MPI_THREADS_DISABLE");
  if (v == nullptr) v = std::getenv("HOROVOD_MPI_THREADS_DISABLE");
  if (v == nullptr) return false;
  for (const char* yes : {"1", "true", "yes", "on"}) {
    if (!strcasecmp(v, yes)) return true;
  }
  return false;
}

class RawMpi : public RawComm {
 public:
  explicit RawMpi(int provided) : provided_(provided) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  Backend backend() const override { return Backend::kMpi; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void AllreduceSum(const float* in, float* out, int64_t count) override {
    // MPI counts are ints: larger buffers go in INT_MAX pieces.
    for (int64_t off = 0; off < count; off += INT_MAX) {
      const int n = static_cast<int>(std::min<int64_t>(INT_MAX, count - off));
      // MPI refuses the same buffer as input and output: that is MPI_IN_PLACE.
      const void* send = in == out ? MPI_IN_PLACE : static_cast<const void*>(in + off);
      if (MPI_Allreduce(send, out + off, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS) {
        Die("raw MPI_Allreduce failed");
      }
    }
  }
  void Barrier() override { MPI_Barrier(MPI_COMM_WORLD); }
  bool UsableBesideHvd(std::string* why) const override {
    if (provided_ == MPI_THREAD_MULTIPLE) return true;
    *why = "MPI is not MPI_THREAD_MULTIPLE (provided level " + std::to_string(provided_) +
           "), and hvd's background thread calls MPI too";
    return false;
  }

 private:
  int provided_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace

std::unique_ptr<RawComm> CreateRawMpi(std::string* why) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  int provided = MPI_THREAD_SINGLE;
  if (initialized) {
    MPI_Query_thread(&provided);
  } else {
    const int wanted = ThreadsDisabled() ? MPI_THREAD_SERIALIZED : MPI_THREAD_MULTIPLE;
    if (MPI_Init_thread(nullptr, nullptr, wanted, &provided) != MPI_SUCCESS) {
      *why = "MPI_Init_thread failed";
      return nullptr;
    }
    std::atexit(FinalizeAtExit);
  }
  auto comm = std::make_unique<RawMpi>(provided);
  const char* launched = std::getenv("HVD_SIZE");
  if (comm->size() == 1 && launched != nullptr && std::atoi(launched) > 1) {
    *why = std::string("this process is an MPI job of 1 rank, but its launcher started ") +
           launched + " ranks";
    return nullptr;
  }
  return comm;
}

}  // namespace hvdbench
