// Creating the MPI world: initialise MPI (thread-multiple when possible)
// unless the application already did, and duplicate the communicator so
// hvd's traffic never matches the application's own messages.
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/backends/mpi/mpi_comm.h"
#include "core/backends/mpi/mpi_tcp_defaults.h"
#include "core/backends/registry.h"
#include "core/common/logging.h"
#include "core/common/wait_notice.h"

namespace hvd {
namespace {

bool g_we_initialized = false;
int g_thread_level = MPI_THREAD_SINGLE;

void FinalizeAtExit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

bool LaunchedByMpi(const LaunchEnv& env) {
  return env.mpi_launched;
}

// srun without --mpi gives MPI no way to find its peers; Open MPI would
// fail inside MPI_Init_thread with a page about rebuilding it.
Status CheckPmi(const LaunchEnv& env) {
  if (!env.slurm.active) return Status::OK();
  return Status::Invalid(
      "MPI: srun started this task without PMI (SLURM_PROCID set; no PMIX_RANK or PMI_RANK), so "
      "MPI cannot start; run srun --mpi=pmix, or leave HVD_CONTROLLER unset (or =gloo) to use "
      "Gloo");
}

// Both MPI_Init_thread and the first MPI_Comm_dup return only once every
// rank of `ranks` has called them: a rank that never reaches hvd_init holds
// the others there, with no deadline MPI would honour. They say so every
// HVD_STALL_CHECK_TIME_SECONDS (rank unknown yet: the launcher's is named).
WaitNotice InitWaitNotice(const Config& config, const char* call, const char* ranks) {
  const double period_s = config.stall_check_disabled ? 0 : config.stall_check_seconds;
  std::string who;
  if (config.launch.has_rank) {
    who = " (this is rank " + std::to_string(config.launch.rank) + " of the launcher's " +
          std::to_string(config.launch.size) + ")";
  }
  return WaitNotice(std::chrono::milliseconds(static_cast<int64_t>(period_s * 1000)),
                    [call = std::string(call), ranks = std::string(ranks), who](double waited) {
                      HVD_LOG(kWarning)
                          << "hvd_init: " << call << " has waited " << static_cast<int>(waited)
                          << " s for every rank of " << ranks << " to call it" << who
                          << "; a rank that has not reached hvd_init (still starting or "
                             "loading, or stuck before it) holds up the others "
                             "(HVD_STALL_CHECK_TIME_SECONDS)";
                    });
}

Status EnsureMpiInitialized(const Config& config) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) HVD_RETURN_IF_ERROR(CheckPmi(config.launch));
  if (initialized) {
    MPI_Query_thread(&g_thread_level);
  } else {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return Status::Backend("MPI was already finalized in this process");
    const int wanted = config.mpi_threads_disable ? MPI_THREAD_SERIALIZED : MPI_THREAD_MULTIPLE;
    if (PreferDuplexTcp()) {
      HVD_LOG(kDebug) << "MPI: btl_tcp_flags=send (full-duplex TCP across hosts)";
    }
    int rc = MPI_SUCCESS;
    {
      const WaitNotice notice = InitWaitNotice(config, "MPI_Init_thread", "the job");
      rc = MPI_Init_thread(nullptr, nullptr, wanted, &g_thread_level);
    }
    if (rc != MPI_SUCCESS) return Status::Backend("MPI_Init_thread failed");
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
Status CheckNotASingleton(const LaunchEnv& env) {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 1 || env.hvdrun_size <= 1) return Status::OK();
  return Status::Invalid(
      "MPI: this process is an MPI job of 1 rank, but its launcher "
      "started HVD_SIZE=" +
      std::to_string(env.hvdrun_size) +
      " ranks; ranks started by hvdrun without --mpi cannot use the MPI "
      "backend (use hvdrun --mpi or mpirun, or HVD_CONTROLLER=gloo)");
}

Status CreateMpiWorld(const CommInitArgs& args, std::unique_ptr<Comm>* out) {
  const Config& config = *args.config;
  HVD_RETURN_IF_ERROR(EnsureMpiInitialized(config));
  MPI_Comm base = MPI_COMM_WORLD;
  if (args.use_mpi_comm) {
    base = MPI_Comm_f2c(static_cast<MPI_Fint>(args.mpi_comm));
    if (base == MPI_COMM_NULL) return Status::Invalid("MPI: the given communicator is null");
  }
  if (!args.use_mpi_comm) HVD_RETURN_IF_ERROR(CheckNotASingleton(config.launch));
  MPI_Comm dup = MPI_COMM_NULL;
  int rc = MPI_SUCCESS;
  {
    const WaitNotice notice = InitWaitNotice(
        config, "MPI_Comm_dup", args.use_mpi_comm ? "the communicator given" : "MPI_COMM_WORLD");
    rc = MPI_Comm_dup(base, &dup);
  }
  if (rc != MPI_SUCCESS) {
    return Status::Invalid("MPI: MPI_Comm_dup failed (is the communicator handle valid?)");
  }
  *out = std::make_unique<MpiComm>(dup, config.allreduce_chunk_bytes);
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
