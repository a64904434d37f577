#include "core/common/launch_env.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/common/env.h"
#include "core/common/slurm_hostlist.h"

namespace hvd {
namespace {

bool ParseCount(const char* s, int* out) {
  if (s == nullptr || *s == '\0') return false;
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < 0 || v > 1000000000L) return false;
  *out = static_cast<int>(v);
  return true;
}

// First launcher whose pair of variables is set wins.
void ReadRankAndSize(LaunchEnv* env) {
  static const char* const kPairs[][2] = {{"HVD_RANK", "HVD_SIZE"},
                                          {"HOROVOD_RANK", "HOROVOD_SIZE"},
                                          {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                          {"PMI_RANK", "PMI_SIZE"},
                                          {"SLURM_PROCID", "SLURM_NTASKS"}};
  for (const auto& p : kPairs) {
    const char* r = GetRawEnv(p[0]);
    const char* s = GetRawEnv(p[1]);
    if (r == nullptr && s == nullptr) continue;
    int rank = 0, size = 0;
    if (!ParseCount(r, &rank) || !ParseCount(s, &size) || size < 1 || rank >= size) {
      env->rank_error = Status::Invalid(std::string("invalid ") + p[0] + "=" + (r ? r : "(unset)") +
                                        " / " + p[1] + "=" + (s ? s : "(unset)"));
      return;
    }
    env->has_rank = true;
    env->rank = rank;
    env->size = size;
    return;
  }
}

std::string Value(const char* v) {
  return v ? v : "";
}

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

void ReadSizeClaim(LaunchEnv* env) {
  for (const SizeVariable& v : kSizeVariables) {
    const char* size = GetRawEnv(v.size);
    if (size == nullptr) continue;
    const char* rank = GetRawEnv(v.rank);
    env->size_variable = v.size;
    env->size_value = size;
    env->rank_variable = v.rank;
    env->rank_value = Value(rank);
    env->rank_value_set = rank != nullptr;
    env->size_set_by = v.set_by;
    return;
  }
}

// srun without --mpi: Slurm's variables are the only launcher's. Any other
// launcher (hvdrun, mpirun inside an allocation, srun --mpi=pmix/pmi2) has
// set its own rank variables, which win.
SlurmStep ReadSlurmStep(const LaunchEnv& env) {
  SlurmStep step;
  for (const char* other :
       {"HVD_RANK", "HOROVOD_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "PMI_FD"}) {
    if (GetRawEnv(other) != nullptr) return step;
  }
  const char* job = GetRawEnv("SLURM_JOB_ID");
  const char* stepid = GetRawEnv("SLURM_STEP_ID");
  if (env.rendezvous.set || job == nullptr || stepid == nullptr ||
      GetRawEnv("SLURM_PROCID") == nullptr || GetRawEnv("SLURM_NTASKS") == nullptr) {
    return step;
  }
  step.active = true;
  step.job_id = job;
  step.step_id = stepid;
  const char* list = GetRawEnv("SLURM_STEP_NODELIST");
  if (list == nullptr) list = GetRawEnv("SLURM_NODELIST");
  step.nodelist = Value(list);
  std::vector<std::string> nodes;
  step.nodelist_error = ExpandSlurmHostlist(step.nodelist, &nodes);
  if (step.nodelist_error.ok()) step.first_node = nodes.front();
  if (const char* dir = GetEnv("SLURM_RENDEZVOUS_DIR")) {
    step.rendezvous_dir = dir;
  } else if (const char* home = GetRawEnv("HOME")) {
    step.rendezvous_dir = std::string(home) + "/.hvd/slurm";
  }
  return step;
}

}  // namespace

std::string HostKey() {
  for (const char* var : {"HVD_HOSTNAME", "PMIX_HOSTNAME", "SLURMD_NODENAME"}) {
    if (const char* h = GetRawEnv(var)) return h;
  }
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  return buf;
}

RendezvousEndpoint RendezvousFromEnvironment() {
  RendezvousEndpoint e;
  const char* addr = GetRawEnv("HVD_RENDEZVOUS_ADDR");
  e.set = addr != nullptr;
  e.addr = Value(addr);
  e.port = Value(GetRawEnv("HVD_RENDEZVOUS_PORT"));
  e.secret_hex = Value(GetRawEnv("HVD_RENDEZVOUS_SECRET"));
  return e;
}

LaunchEnv LaunchEnv::FromEnvironment() {
  LaunchEnv env;
  ReadRankAndSize(&env);
  if (!ParseCount(GetRawEnv("HVD_SIZE"), &env.hvdrun_size)) env.hvdrun_size = 0;
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"}) {
    env.mpi_launched = env.mpi_launched || GetRawEnv(var) != nullptr;
  }
  env.host = HostKey();
  env.rendezvous = RendezvousFromEnvironment();
  env.rendezvous_prefix = Value(GetEnv("RENDEZVOUS_PREFIX"));
  env.worker_id = Value(GetEnv("WORKER_ID"));
  env.slurm = ReadSlurmStep(env);
  ReadSizeClaim(&env);
  return env;
}

Status CheckNotAlone(const LaunchEnv& env, int world_size, bool with_mpi) {
  if (world_size != 1 || env.size_variable.empty()) return Status::OK();
  const char* size = env.size_value.c_str();
  char* end = nullptr;
  const long n = std::strtol(size, &end, 10);
  if (end == size || *end != '\0' || n <= 1) return Status::OK();
  const std::string np = std::to_string(n);
  // Without MPI only hvdrun's store can join the ranks.
  const std::string or_mpirun = with_mpi ? " or mpirun -np " + np + " PROGRAM" : "";
  // One line: what was seen, who sets it, and how to launch instead.
  return Status::Invalid(
      env.size_variable + "=" + env.size_value +
      (env.rank_value_set ? " " + env.rank_variable + "=" + env.rank_value : std::string()) +
      " (set by " + env.size_set_by + ") says this job has " + np +
      " processes, but this process found no way to reach the others and "
      "would run alone as rank 0 of 1; start the job with hvdrun -np " +
      np + " PROGRAM" + or_mpirun);
}

}  // namespace hvd
