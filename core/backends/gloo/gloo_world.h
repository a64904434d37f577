// Creation of the Gloo world communicator from the launcher's environment.
#pragma once

#include <memory>

#include "core/backends/comm.h"
#include "core/backends/registry.h"

namespace hvd {

// Rank and size come from HVD_RANK/HVD_SIZE (or OMPI_COMM_WORLD_*, PMI_*,
// SLURM_PROCID/SLURM_NTASKS); peers meet through hvdrun's rendezvous store
// (HVD_RENDEZVOUS_ADDR/PORT/SECRET), or under srun without PMI through the
// store task 0 hosts (core/rendezvous/slurm_store.h). Without a store only a
// single-rank job is possible, and every collective is a local copy.
Status CreateGlooWorld(const CommInitArgs& args, std::unique_ptr<Comm>* out);

}  // namespace hvd
