// What this libhvd was built with and runs on, for hvd_*_built and
// hvd_mpi_threads_supported: the C layer asks here instead of reaching into
// the backends.
#pragma once

#include "core/common/config.h"

namespace hvd {

// Whether the backend is compiled into this build.
bool BackendBuilt(BackendChoice backend);
bool CudaBuilt();
bool NcclBuilt();
// NCCL_VERSION_CODE of the nccl.h this build compiled against (e.g. 22809
// for 2.28.9, 2708 for 2.7.8), 0 without NCCL: what Horovod's nccl_built()
// returns and its programs compare against.
int NcclVersionCode();
// MPI was initialised with MPI_THREAD_MULTIPLE (meaningful once the MPI
// backend has been created).
bool MpiThreadMultiple();

}  // namespace hvd
