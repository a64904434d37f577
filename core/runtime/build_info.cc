#include "core/runtime/build_info.h"

#include "core/backends/registry.h"

#ifdef HVD_HAVE_NCCL
#include <nccl.h>
#endif

namespace hvd {

bool BackendBuilt(BackendChoice backend) {
  return FindBackend(backend) != nullptr;
}

bool CudaBuilt() {
#ifdef HVD_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

bool NcclBuilt() {
#ifdef HVD_HAVE_NCCL
  return true;
#else
  return false;
#endif
}

int NcclVersionCode() {
#ifdef HVD_HAVE_NCCL
  return NCCL_VERSION_CODE;
#else
  return 0;
#endif
}

bool MpiThreadMultiple() {
#ifdef HVD_HAVE_MPI
  return MpiThreadsSupported();
#else
  return false;
#endif
}

}  // namespace hvd
