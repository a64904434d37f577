// Creating the MPI world: initialise MPI (thread-multiple when possible)
// unless the application already did, and duplicate the communicator so
// hvd's traffic never matches the application's own messages.
#include <cstdlib>

#include "core/backends/mpi/mpi_comm.h"
#include "core/backends/registry.h"
#include "core/common/logging.h"

namespace hvd {
namespace {

bool g_we_initialized = false;
int g_thread_level = MPI_THREAD_SINGLE;

void FinalizeAtExit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

bool LaunchedByMpi() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") ||
         std::getenv("PMIX_RANK") || std::getenv("MPI_LOCALNRANKS");
}

Status EnsureMpiInitialized(const Config& config) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) {
    MPI_Query_thread(&g_thread_level);
  } else {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return Status::Backend("MPI was already finalized in this process");
    const int wanted = config.mpi_threads_disable ? MPI_THREAD_SERIALIZED : MPI_THREAD_MULTIPLE;
    if (MPI_Init_thread(nullptr, nullptr, wanted, &g_thread_level) != MPI_SUCCESS) {
      return Status::Backend("MPI_Init_thread failed");
    }
    g_we_initialized = true;
    // MPI cannot be initialised twice, so hvd_shutdown keeps it alive and
    // it is finalised when the process exits.
    std::atexit(FinalizeAtExit);
  }
  if (g_thread_level < MPI_THREAD_SERIALIZED) {
    HVD_LOG(kWarning) << "MPI provides thread level " << g_thread_level
                      << " (< MPI_THREAD_SERIALIZED); hvd calls MPI from its background thread, "
                         "which such an MPI does not allow";
  }
  return Status::OK();
}

// Ranks that hvdrun started without --mpi each become an MPI singleton of
// one rank: every "job" of one would then silently reduce with itself.
Status CheckNotASingleton() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char* launched = std::getenv("HVD_SIZE");
  if (size != 1 || launched == nullptr || std::atoi(launched) <= 1) return Status::OK();
  return Status::Invalid(std::string("MPI: this process is an MPI job of 1 rank, but its launcher "
                                     "started HVD_SIZE=") +
                         launched +
                         " ranks; ranks started by hvdrun without --mpi cannot use the MPI "
                         "backend (use hvdrun --mpi or mpirun, or HVD_CONTROLLER=gloo)");
}

Status CreateMpiWorld(const CommInitArgs& args, std::unique_ptr<Comm>* out) {
  HVD_RETURN_IF_ERROR(EnsureMpiInitialized(*args.config));
  MPI_Comm base = MPI_COMM_WORLD;
  if (args.use_mpi_comm) {
    base = MPI_Comm_f2c(static_cast<MPI_Fint>(args.mpi_comm));
    if (base == MPI_COMM_NULL)
      return Status::Invalid("hvd_init_mpi_comm: the communicator is null");
  }
  if (!args.use_mpi_comm) HVD_RETURN_IF_ERROR(CheckNotASingleton());
  MPI_Comm dup = MPI_COMM_NULL;
  if (MPI_Comm_dup(base, &dup) != MPI_SUCCESS) {
    return Status::Invalid("hvd_init_mpi_comm: MPI_Comm_dup failed (is the handle valid?)");
  }
  *out = std::make_unique<MpiComm>(dup, args.config->allreduce_chunk_bytes);
  return Status::OK();
}

}  // namespace

bool MpiThreadsSupported() {
  return g_thread_level == MPI_THREAD_MULTIPLE;
}

BackendEntry MpiBackendEntry() {
  return BackendEntry{"mpi", BackendChoice::kMpi, LaunchedByMpi, CreateMpiWorld};
}

}  // namespace hvd
