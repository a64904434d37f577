// What the launcher's environment says about the size of the job. hvd takes
// rank and size from its backends; this only refuses the silent failure
// where a launcher hvd cannot join (torchrun, a batch script without srun,
// an MPI other than the one hvd was built with) starts N processes that
// each become a job of one and "reduce" with themselves.
#pragma once

#include "core/common/status.h"

namespace hvd {

// OK unless the first launcher variable that is set (HVD_SIZE, HOROVOD_SIZE,
// OMPI_COMM_WORLD_SIZE, PMI_SIZE, WORLD_SIZE, SLURM_NTASKS) says the job has
// more than one process while this process found a world of one. The
// message names the variable, the launcher that sets it, and how to launch.
Status CheckNotAlone(int world_size);

}  // namespace hvd
