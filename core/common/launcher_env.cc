#include "core/common/launcher_env.h"

#include <cstdlib>
#include <string>

namespace hvd {

namespace {

struct SizeVariable {
  const char* size;
  const char* rank;
  const char* set_by;
};

// In order of precedence: the most specific launcher first, so that
// `hvdrun -np 1` or `mpirun -np 1` inside a Slurm allocation is no error.
constexpr SizeVariable kSizeVariables[] = {
    {"HVD_SIZE", "HVD_RANK", "hvdrun"},
    {"HOROVOD_SIZE", "HOROVOD_RANK", "horovodrun"},
    {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "Open MPI's mpirun"},
    {"PMI_SIZE", "PMI_RANK", "a PMI launcher such as MPICH's mpiexec or srun --mpi=pmi2"},
    {"WORLD_SIZE", "RANK", "torchrun or a Kubernetes PyTorchJob, which hvd does not support"},
    {"SLURM_NTASKS", "SLURM_PROCID",
     "Slurm; a batch script that runs the program itself starts one process"},
};

}  // namespace

Status CheckNotAlone(int world_size) {
  if (world_size != 1) return Status::OK();
  for (const SizeVariable& v : kSizeVariables) {
    const char* size = std::getenv(v.size);
    if (size == nullptr) continue;
    char* end = nullptr;
    const long n = std::strtol(size, &end, 10);
    if (end == size || *end != '\0' || n <= 1) return Status::OK();
    const char* rank = std::getenv(v.rank);
    const std::string np = std::to_string(n);
#ifdef HVD_HAVE_MPI
    const std::string or_mpirun = " or mpirun -np " + np + " PROGRAM";
#else
    const std::string or_mpirun;  // without MPI only hvdrun's store can join the ranks
#endif
    // One line: what was seen, who sets it, and how to launch instead.
    return Status::Invalid(std::string(v.size) + "=" + size +
                           (rank ? std::string(" ") + v.rank + "=" + rank : std::string()) +
                           " (set by " + v.set_by + ") says this job has " + np +
                           " processes, but this process found no way to reach the others and "
                           "would run alone as rank 0 of 1; start the job with hvdrun -np " +
                           np + " PROGRAM" + or_mpirun);
  }
  return Status::OK();
}

}  // namespace hvd
