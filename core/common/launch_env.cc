#include "core/common/launch_env.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "core/common/env.h"

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
  return env;
}

}  // namespace hvd
