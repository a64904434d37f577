#include "core/runtime/process_set.h"

#ifdef HVD_HAVE_CUDA
#include "core/gpu/gpu_exec.h"

namespace hvd {

GpuSet& ProcessSet::Gpu(const Config& config) {
  if (!gpu) gpu = MakeGpuSet(id, controller_comm.get(), data_comm.get(), config);
  return *gpu;
}

}  // namespace hvd
#endif
