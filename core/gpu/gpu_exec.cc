#include "core/gpu/gpu_exec.h"

#include <map>
#include <string>
#include <utility>

#include "core/common/logging.h"
#include "core/cuda/cuda_kernels.h"
#include "core/cuda/cuda_util.h"
#include "core/dataplane/decorators/cuda/gpu_staging_comm.h"
#ifdef HVD_HAVE_NCCL
#include "core/backends/nccl/nccl_comm.h"
#include "core/dataplane/decorators/nccl/hierarchical_gpu_comm.h"
#include "core/dataplane/gpu_hierarchy_plan.h"
#endif

namespace hvd {
namespace {

// MemOps on one device, queued on hvd's stream.
class CudaMemOps : public MemOps {
 public:
  explicit CudaMemOps(const CudaStream* stream) : stream_(stream) {}
  Status ScaleCopy(void* dst, const void* src, int64_t n, DataType dt, double f) override {
    return ScaleCopyAsync(dst, src, n, dt, f, stream_->get());
  }
  Status Zero(void* buf, int64_t n, DataType dt) override {
    if (n <= 0) return Status::OK();
    HVD_CUDA_CHECK(
        cudaMemsetAsync(buf, 0, static_cast<size_t>(n) * DataTypeSize(dt), stream_->get()));
    return Status::OK();
  }
  Status CopyRegions(const std::vector<Region>& regions) override {
    std::vector<CopyRegion> v;
    v.reserve(regions.size());
    for (const auto& r : regions) v.push_back({r.dst, r.src, r.bytes});
    return BatchedCopyAsync(v.data(), v.size(), stream_->get());
  }
  Status Fusion(int64_t bytes, void** out) override {
    // Growing frees the old buffer, which queued kernels may still use.
    if (bytes > fusion_.capacity()) HVD_RETURN_IF_ERROR(stream_->Wait(0));
    HVD_RETURN_IF_ERROR(fusion_.Reserve(bytes));
    *out = fusion_.data();
    return Status::OK();
  }

 private:
  const CudaStream* stream_;
  DeviceBuffer fusion_;
};

}  // namespace

// hvd's GPU state for one process set on one device. Members are declared
// in dependency order: destruction runs bottom-up, so communicators go
// before the stream they queue on.
struct GpuDevice {
  int device = 0;
  CudaStream stream;
  CudaEvent ready;  // recorded on the caller's stream, waited on by ours
  std::unique_ptr<CudaMemOps> mem;
  std::unique_ptr<Comm> comm;
};

// What a GpuSet needs of the set and of the configuration.
struct GpuSetParams {
  int32_t set_id = 0;
  Comm* controller = nullptr;
  Comm* data = nullptr;
  GpuOperations operations = GpuOperations::kAuto;
  double timeout_seconds = 600.0;
  bool hierarchical_allreduce = false;
  std::string host;
};

class GpuSet {
 public:
  explicit GpuSet(GpuSetParams p) : p_(std::move(p)) {}
  const GpuSetParams& params() const { return p_; }

  Status Get(int device, GpuDevice** out) {
    auto it = devices_.find(device);
    if (it != devices_.end()) {
      *out = it->second.get();
      return Status::OK();
    }
    auto d = std::make_unique<GpuDevice>();
    d->device = device;
    HVD_RETURN_IF_ERROR(d->stream.Create());
    HVD_RETURN_IF_ERROR(d->ready.Create());
    d->mem = std::make_unique<CudaMemOps>(&d->stream);
    HVD_RETURN_IF_ERROR(MakeComm(d.get()));
    *out = d.get();
    devices_[device] = std::move(d);
    return Status::OK();
  }
  int last_device = -1;

 private:
  Status MakeComm(GpuDevice* d) {
#ifdef HVD_HAVE_NCCL
    bool stage = p_.operations == GpuOperations::kStaging;
    if (!stage) HVD_RETURN_IF_ERROR(NcclOrStaging(d->device, &stage));
    if (stage) {
      d->comm = std::make_unique<GpuStagingComm>(p_.data, &d->stream);
      return Status::OK();
    }
    std::unique_ptr<NcclComm> flat;
    HVD_RETURN_IF_ERROR(NcclComm::Create(p_.controller, &d->stream, p_.timeout_seconds, &flat));
    if (!p_.hierarchical_allreduce) {
      d->comm = std::move(flat);
      return Status::OK();
    }
    return MakeHierarchicalComm(d, std::move(flat));
#else
    if (p_.operations == GpuOperations::kNccl) {
      return Status::Unsupported("HVD_GPU_OPERATIONS=nccl, but this libhvd was built without NCCL");
    }
    d->comm = std::make_unique<GpuStagingComm>(p_.data, &d->stream);
    return Status::OK();
#endif
  }

#ifdef HVD_HAVE_NCCL
  // NCCL refuses two ranks of one communicator on the same GPU (it fails
  // with "invalid usage"). Every member sees the same list, so all choose
  // together: staging under auto, a clear error under HVD_GPU_OPERATIONS=nccl.
  Status NcclOrStaging(int device, bool* stage) {
    char bus[32] = {0};
    HVD_CUDA_CHECK(cudaDeviceGetPCIBusId(bus, sizeof(bus), device));
    std::vector<std::string> gpus;
    HVD_RETURN_IF_ERROR(AllgatherBytes(*p_.controller, p_.host + " PCI " + bus, &gpus));
    for (size_t a = 0; a < gpus.size(); ++a) {
      for (size_t b = a + 1; b < gpus.size(); ++b) {
        if (gpus[a] != gpus[b]) continue;
        const std::string what = "ranks " + std::to_string(a) + " and " + std::to_string(b) +
                                 " of process set " + std::to_string(p_.set_id) +
                                 " are on the same GPU (host " + gpus[a] + ")";
        if (p_.operations == GpuOperations::kNccl) {
          return Status::Unsupported(
              "NCCL cannot run two ranks on the same GPU: " + what +
              "; give each rank its own GPU (cudaSetDevice(local_rank)) or set "
              "HVD_GPU_OPERATIONS=mpi or gloo to stage through host memory");
        }
        if (p_.controller->rank() == 0) {
          HVD_LOG(kWarning) << what << ", which NCCL cannot run; GPU collectives stage "
                            << "through host memory instead (HVD_GPU_OPERATIONS=mpi|gloo)";
        }
        *stage = true;
        return Status::OK();
      }
    }
    *stage = false;
    return Status::OK();
  }

  Status MakeHierarchicalComm(GpuDevice* d, std::unique_ptr<NcclComm> flat) {
    std::vector<std::string> hosts;
    HVD_RETURN_IF_ERROR(AllgatherBytes(*p_.controller, p_.host, &hosts));
    HierarchyPlan plan = PlanHierarchy(hosts, p_.controller->rank());
    if (!plan.usable) {
      // Every rank sees the same hosts, so all take this branch together.
      HVD_LOG(kInfo) << "hierarchical allreduce off for process set " << p_.set_id << ": "
                     << plan.reason;
      d->comm = std::move(flat);
      return Status::OK();
    }
    const std::string tag =
        "gpu.set" + std::to_string(p_.set_id) + ".dev" + std::to_string(d->device);
    std::unique_ptr<Comm> local_ctrl, cross;
    HVD_RETURN_IF_ERROR(p_.controller->Split(
        plan.local_ranks, tag + ".local" + std::to_string(plan.host_index), &local_ctrl));
    std::unique_ptr<NcclComm> local;
    HVD_RETURN_IF_ERROR(NcclComm::Create(local_ctrl.get(), &d->stream, p_.timeout_seconds, &local));
    HVD_RETURN_IF_ERROR(
        p_.data->Split(plan.cross_ranks, tag + ".cross" + std::to_string(plan.local_rank), &cross));
    d->comm = std::make_unique<HierarchicalGpuComm>(
        std::move(flat), std::move(local), std::move(local_ctrl), std::move(cross), &d->stream);
    return Status::OK();
  }
#endif

  GpuSetParams p_;
  std::map<int, std::unique_ptr<GpuDevice>> devices_;
};

std::shared_ptr<GpuSet> MakeGpuSet(int32_t set_id, Comm* controller, Comm* data,
                                   const Config& config) {
  GpuSetParams p;
  p.set_id = set_id;
  p.controller = controller;
  p.data = data;
  p.operations = config.gpu_operations;
  p.timeout_seconds = config.gpu_timeout_seconds;
  p.hierarchical_allreduce = config.hierarchical_allreduce;
  p.host = config.launch.host;
  return std::make_shared<GpuSet>(std::move(p));
}

namespace {

// The device of this rank's tensors (responses carry the coordinator's).
Status LocalDevice(const GpuSet& g, const std::vector<TensorEntry*>& entries, int* device) {
  int dev = -1;
  for (const auto* e : entries) {
    if (!e) continue;
    if (dev >= 0 && e->request.device.id != dev) {
      return Status::Invalid("tensors fused into one GPU collective are on different devices (" +
                             std::to_string(dev) + " and " + std::to_string(e->request.device.id) +
                             ")");
    }
    dev = e->request.device.id;
  }
  if (dev < 0) dev = g.last_device;  // joined rank: no tensors of its own
  if (dev < 0) HVD_CUDA_CHECK(cudaGetDevice(&dev));
  *device = dev;
  return Status::OK();
}

// Results hvd allocates for GPU tensors live on the device and belong to
// the handle, like host results do.
ResultAllocator DeviceResultAllocator(HandleState* handle, int index) {
  return
      [handle, index](size_t bytes, const std::vector<int64_t>&, DataType, const Device&) -> void* {
        auto buf = std::make_shared<DeviceBuffer>();
        Status s = buf->Reserve(static_cast<int64_t>(bytes));
        if (!s.ok()) {
          handle->result(index).alloc_failure = s.message();
          return nullptr;
        }
        void* p = buf->data();
        handle->result(index).device_owned = std::move(buf);
        return p;
      };
}

}  // namespace

Status ExecuteOnGpu(GpuSet& gpu, const Response& r, std::vector<TensorEntry*>& entries,
                    ExecContext& ctx, Executor exec) {
  if (CudaDeviceCount() == 0) {
    return Status::Unsupported("a CUDA tensor was submitted but no CUDA device is usable here");
  }
  int device = 0;
  HVD_RETURN_IF_ERROR(LocalDevice(gpu, entries, &device));
  CudaDeviceGuard guard(device);
  HVD_RETURN_IF_ERROR(guard.status());
  GpuDevice* d = nullptr;
  HVD_RETURN_IF_ERROR(gpu.Get(device, &d));
  gpu.last_device = device;

  // Order hvd's stream after the producers of the inputs. Without an
  // explicit stream, the legacy default stream is the best guess (it is
  // what unstreamed CUDA code and cudaMemcpy use).
  std::vector<void*> waited;
  for (auto* e : entries) {
    if (!e) continue;
    void* s = e->cuda_stream ? e->cuda_stream : static_cast<void*>(cudaStreamLegacy);
    bool seen = false;
    for (void* w : waited) seen = seen || w == s;
    if (seen) continue;
    waited.push_back(s);
    HVD_CUDA_CHECK(cudaEventRecord(d->ready.get(), static_cast<cudaStream_t>(s)));
    HVD_CUDA_CHECK(cudaStreamWaitEvent(d->stream.get(), d->ready.get(), 0));
  }
  for (auto* e : entries) {
    if (e && !e->allocator) e->allocator = DeviceResultAllocator(e->handle.get(), e->result_index);
  }

  ctx.comm = d->comm.get();
  ctx.mem = d->mem.get();
  Status s = exec(ctx, r, entries);
  // The handle completes only when the results are in memory: callers may
  // read them from any stream (or the host) after hvd_wait.
  Status w = d->stream.Wait(gpu.params().timeout_seconds);
  return s.ok() ? w : s;
}

}  // namespace hvd
