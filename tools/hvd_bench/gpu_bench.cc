// hvd_gpu_bench: the workloads of shared/bench/WORKLOADS.md on CUDA tensors
// through hvd, next to the raw patterns a user could write by hand, in the
// same launch:
//   one rank (NCCL): ncclAllReduce per tensor (in one NCCL group) and one
//     ncclAllReduce over all the bytes, on a communicator of the bench's own;
//   several ranks (host staging, e.g. two ranks on one GPU under hvdrun):
//     copy all the bytes to pinned host memory, raw gloo/MPI allreduce,
//     copy back.
// The fastest raw pattern is "best raw". Every iteration starts from the
// same inputs (a device-to-device copy, not timed); the first is checked.
#include <cuda_runtime_api.h>
#include <hvd/hvd.h>
#ifdef HVD_GPU_BENCH_HAVE_NCCL
#include <nccl.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tools/hvd_bench/options.h"
#include "tools/hvd_bench/raw_baseline.h"
#include "tools/hvd_bench/timing.h"
#include "tools/hvd_bench/workloads.h"

namespace hvdbench {
namespace {

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "hvd_gpu_bench: %s\n", what.c_str());
  std::exit(1);
}

void Cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) Die(std::string(what) + ": " + cudaGetErrorString(e));
}

struct CudaFree {
  void operator()(void* p) const { cudaFree(p); }
};
struct CudaFreeHost {
  void operator()(void* p) const { cudaFreeHost(p); }
};

// A workload's tensors in one device allocation, each 256-byte aligned as
// framework allocators place them, with a pristine copy of the inputs.
class DeviceTensors {
 public:
  DeviceTensors(const Workload& wl, int rank) : counts_(wl.counts) {
    for (int64_t c : counts_) {
      offsets_.push_back(span_);
      span_ += (c + 63) / 64 * 64;
    }
    void* p = nullptr;
    Cuda(cudaMalloc(&p, static_cast<size_t>(span_) * 4 * 2), "cudaMalloc");
    data_.reset(p);
    std::vector<float> host(static_cast<size_t>(span_));
    for (int64_t i = 0; i < span_; ++i) host[i] = static_cast<float>((rank + 1) * (1 + i % 5));
    Cuda(cudaMemcpy(pristine(), host.data(), bytes(), cudaMemcpyHostToDevice), "cudaMemcpy");
    dl_.resize(counts_.size());
    for (size_t t = 0; t < counts_.size(); ++t) {
      dl_[t].data = base() + offsets_[t];
      dl_[t].device = {kDLCUDA, 0};
      cudaGetDevice(&dl_[t].device.device_id);
      dl_[t].ndim = 1;
      dl_[t].dtype = {kDLFloat, 32, 1};
      dl_[t].shape = &counts_[t];
    }
  }
  float* base() const { return static_cast<float*>(data_.get()); }
  float* pristine() const { return base() + span_; }
  float* tensor(size_t t) const { return base() + offsets_[t]; }
  size_t bytes() const { return static_cast<size_t>(span_) * 4; }
  int64_t span() const { return span_; }
  size_t count() const { return counts_.size(); }
  int64_t elems(size_t t) const { return counts_[t]; }
  DLTensor* dl(size_t t) { return &dl_[t]; }
  void Reset() { Cuda(cudaMemcpy(base(), pristine(), bytes(), cudaMemcpyDeviceToDevice), "reset"); }
  // Every element is the sum over `size` ranks of its input.
  bool Verify(int size) const {
    std::vector<float> host(static_cast<size_t>(span_));
    Cuda(cudaMemcpy(host.data(), base(), bytes(), cudaMemcpyDeviceToHost), "verify");
    const double ranks = size * (size + 1) / 2.0;
    for (size_t t = 0; t < counts_.size(); ++t) {
      for (int64_t i = offsets_[t]; i < offsets_[t] + counts_[t]; ++i) {
        if (host[i] != static_cast<float>(ranks * (1 + i % 5))) return false;
      }
    }
    return true;
  }

 private:
  std::vector<int64_t> counts_, offsets_;
  int64_t span_ = 0;
  std::unique_ptr<void, CudaFree> data_;
  std::vector<DLTensor> dl_;
};

// Per-round median of one implementation (ms); resets the inputs before
// each iteration and checks the first.
double TimeRound(const Workload& wl, DeviceTensors& d, int size, bool* ok,
                 const std::function<void()>& iteration, const std::function<void()>& barrier) {
  using Clock = std::chrono::steady_clock;
  std::vector<double> times;
  for (int it = 0; it < wl.warmup + wl.iters; ++it) {
    d.Reset();
    Cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    barrier();
    const auto t0 = Clock::now();
    iteration();
    const auto t1 = Clock::now();
    if (it == 0 && !d.Verify(size)) *ok = false;
    if (it >= wl.warmup)
      times.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return Median(times);
}

void HvdIteration(DeviceTensors& d, const std::vector<std::string>& names) {
  std::vector<hvd_handle> h(d.count());
  for (size_t t = 0; t < d.count(); ++t) {
    if (hvd_allreduce_async(names[t].c_str(), d.dl(t), d.dl(t), HVD_OP_SUM, nullptr, &h[t]) !=
        HVD_OK) {
      Die(std::string("hvd_allreduce_async: ") + hvd_last_error());
    }
  }
  for (hvd_handle x : h) {
    if (hvd_wait(x, -1) != HVD_OK) Die(std::string("hvd_wait: ") + hvd_last_error());
    hvd_release(x);
  }
}

void HvdBarrier() {
  if (hvd_barrier(0) != HVD_OK) Die(std::string("hvd_barrier: ") + hvd_last_error());
}

// A raw implementation: its name and one iteration.
struct RawImpl {
  std::string name;
  std::function<void(DeviceTensors&)> run;
};

#ifdef HVD_GPU_BENCH_HAVE_NCCL
void Nccl(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) Die(std::string(what) + ": " + ncclGetErrorString(r));
}

// One rank: NCCL on a communicator and stream of the bench's own.
std::vector<RawImpl> RawNccl(ncclComm_t comm, cudaStream_t s) {
  auto per_tensor = [comm, s](DeviceTensors& d) {
    Nccl(ncclGroupStart(), "ncclGroupStart");
    for (size_t t = 0; t < d.count(); ++t) {
      Nccl(ncclAllReduce(d.tensor(t), d.tensor(t), static_cast<size_t>(d.elems(t)), ncclFloat32,
                         ncclSum, comm, s),
           "ncclAllReduce");
    }
    Nccl(ncclGroupEnd(), "ncclGroupEnd");
    Cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  };
  auto one_call = [comm, s](DeviceTensors& d) {
    Nccl(ncclAllReduce(d.base(), d.base(), static_cast<size_t>(d.span()), ncclFloat32, ncclSum,
                       comm, s),
         "ncclAllReduce");
    Cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  };
  return {{"raw nccl per tensor", per_tensor}, {"raw nccl one call", one_call}};
}
#endif

// Several ranks: what a user staging by hand writes: all the bytes to pinned
// host memory, one raw CPU allreduce, back to the device.
RawImpl RawStaging(RawComm* raw, std::shared_ptr<float> pinned) {
  auto run = [raw, pinned](DeviceTensors& d) {
    Cuda(cudaMemcpy(pinned.get(), d.base(), d.bytes(), cudaMemcpyDeviceToHost), "D2H");
    raw->AllreduceSum(pinned.get(), pinned.get(), d.span());
    Cuda(cudaMemcpy(d.base(), pinned.get(), d.bytes(), cudaMemcpyHostToDevice), "H2D");
  };
  return {std::string("raw staging (") + BackendName(raw->backend()) + ")", run};
}

std::shared_ptr<float> PinnedFloats(int64_t n) {
  void* p = nullptr;
  Cuda(cudaMallocHost(&p, static_cast<size_t>(n) * 4), "cudaMallocHost");
  return std::shared_ptr<float>(static_cast<float*>(p), CudaFreeHost());
}

void Row(const std::string& wl, const std::string& impl, const Summary& s, double best) {
  std::printf("%-16s %-28s %10.3f %10.3f %10.3f %8.3fx\n", wl.c_str(), impl.c_str(), s.median,
              s.min, s.max, best > 0 ? s.median / best : 0.0);
}

// One workload: rounds alternate hvd and every raw implementation.
bool RunWorkload(const Workload& wl, const Args& args, std::vector<RawImpl>& raws, int rank,
                 int size) {
  DeviceTensors d(wl, rank);
  std::vector<std::string> names;
  for (size_t t = 0; t < d.count(); ++t) names.push_back(wl.name + "." + std::to_string(t));
  bool ok = true;
  std::vector<double> hvd_ms;
  std::vector<std::vector<double>> raw_ms(raws.size());
  for (int r = 0; r < args.rounds; ++r) {
    hvd_ms.push_back(TimeRound(
        wl, d, size, &ok, [&] { HvdIteration(d, names); }, HvdBarrier));
    for (size_t k = 0; k < raws.size(); ++k) {
      raw_ms[k].push_back(TimeRound(
          wl, d, size, &ok, [&] { raws[k].run(d); }, HvdBarrier));
    }
  }
  double best = 0;
  std::string best_name;
  for (size_t k = 0; k < raws.size(); ++k) {
    const double m = Summarize(raw_ms[k]).median;
    if (best == 0 || m < best) best = m, best_name = raws[k].name;
  }
  if (rank == 0) {
    Row(wl.name, "hvd", Summarize(hvd_ms), best);
    for (size_t k = 0; k < raws.size(); ++k) Row(wl.name, raws[k].name, Summarize(raw_ms[k]), best);
    if (!raws.empty()) std::printf("%-16s best raw: %s\n", wl.name.c_str(), best_name.c_str());
  }
  return ok;
}

void PrintHeader(const std::vector<Workload>& workloads, int size, int rounds) {
  cudaDeviceProp prop{};
  int dev = 0;
  Cuda(cudaGetDevice(&dev), "cudaGetDevice");
  Cuda(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
  std::printf("hvd_gpu_bench: %d rank(s), GPU %d: %s; GPU operations: %s\n", size, dev, prop.name,
              std::getenv("HVD_GPU_OPERATIONS") ? std::getenv("HVD_GPU_OPERATIONS") : "auto");
  for (const auto& wl : workloads) {
    std::printf("  %s: %zu tensors, %.1f MiB, %d rounds of %d iterations (+%d warm-up)\n",
                wl.name.c_str(), wl.counts.size(), wl.bytes() / 1048576.0, rounds, wl.iters,
                wl.warmup);
  }
  std::printf("%-16s %-28s %10s %10s %10s %9s\n", "workload", "implementation", "median ms",
              "min ms", "max ms", "÷ best");
}

// The launcher's value of VAR: hvdrun sets HVD_<VAR>, Open MPI's mpirun
// OMPI_COMM_WORLD_<VAR>; -1 when neither is set.
int LaunchEnv(const char* var) {
  for (const char* prefix : {"HVD_", "OMPI_COMM_WORLD_"}) {
    if (const char* v = std::getenv((std::string(prefix) + var).c_str())) return std::atoi(v);
  }
  return -1;
}

}  // namespace
}  // namespace hvdbench

int main(int argc, char** argv) {
  using namespace hvdbench;
  Args args = ParseArgs(argc, argv);
  if (args.help) {
    Usage(stdout);
    return 0;
  }
  RequestBackend(args.backend);
  const std::vector<Workload> workloads = BuildWorkloads(args);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) Die("no CUDA device");
  const int local = LaunchEnv("LOCAL_RANK");
  Cuda(cudaSetDevice(local > 0 ? local % devices : 0), "cudaSetDevice");
  // The raw context exists before hvd, as in hvd_bench.
  std::string why;
  std::unique_ptr<RawComm> raw_comm;
  if (args.raw && LaunchEnv("SIZE") > 1) {
    raw_comm = CreateRawComm(PlanBackend(), &why);
    if (!raw_comm) Die("raw baseline: " + why);
  }
  if (hvd_init() != HVD_OK) Die(std::string("hvd_init: ") + hvd_last_error());
  const int rank = hvd_rank(), size = hvd_size();
  std::vector<RawImpl> raws;
  int64_t max_span = 0;
  for (const auto& wl : workloads) {
    max_span = std::max(max_span, wl.total() + 64 * static_cast<int64_t>(wl.counts.size()));
  }
#ifdef HVD_GPU_BENCH_HAVE_NCCL
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  if (args.raw && size == 1) {
    int dev = 0;
    Cuda(cudaGetDevice(&dev), "cudaGetDevice");
    Nccl(ncclCommInitAll(&comm, 1, &dev), "ncclCommInitAll");
    Cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    raws = RawNccl(comm, stream);
  }
#endif
  if (raw_comm) raws.push_back(RawStaging(raw_comm.get(), PinnedFloats(max_span)));
  if (rank == 0) PrintHeader(workloads, size, args.rounds);
  bool ok = true;
  for (const auto& wl : workloads) ok = RunWorkload(wl, args, raws, rank, size) && ok;
  if (rank == 0) std::printf("correctness: %s\n", ok ? "all checks passed" : "FAILED");
  hvd_shutdown();
#ifdef HVD_GPU_BENCH_HAVE_NCCL
  if (comm) ncclCommDestroy(comm);
  if (stream) cudaStreamDestroy(stream);
#endif
  return ok ? 0 : 1;
}
