#include "core/common/config.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "core/common/env.h"

namespace hvd {
namespace {

std::string Describe(const char* suffix, const char* value) {
  return std::string("HVD_") + suffix + "='" + value + "'";
}

std::string Lower(const char* v) {
  std::string s(v);
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

Status ParseDouble(const char* suffix, double min, double* out, bool* fixed = nullptr) {
  const char* v = GetEnv(suffix);
  if (!v) return Status::OK();
  char* end = nullptr;
  errno = 0;
  double d = std::strtod(v, &end);
  if (errno != 0 || end == v || *end != '\0' || !(d >= min)) {
    return Status::Invalid("invalid " + Describe(suffix, v) +
                           ": expected a number >= " + std::to_string(min));
  }
  *out = d;
  if (fixed) *fixed = true;
  return Status::OK();
}

Status ParseInt(const char* suffix, int64_t min, int64_t* out, bool* fixed = nullptr) {
  const char* v = GetEnv(suffix);
  if (!v) return Status::OK();
  char* end = nullptr;
  errno = 0;
  long long x = std::strtoll(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || x < min) {
    return Status::Invalid("invalid " + Describe(suffix, v) +
                           ": expected an integer >= " + std::to_string(min));
  }
  *out = x;
  if (fixed) *fixed = true;
  return Status::OK();
}

template <typename T>
struct Choice {
  const char* name;  // lower case
  T value;
};

constexpr Choice<bool> kBools[] = {{"1", true},   {"true", true}, {"yes", true},
                                   {"on", true},  {"0", false},   {"false", false},
                                   {"no", false}, {"off", false}, {"", false}};
constexpr Choice<BackendChoice> kBackends[] = {{"mpi", BackendChoice::kMpi},
                                               {"gloo", BackendChoice::kGloo},
                                               {"auto", BackendChoice::kAuto},
                                               {"", BackendChoice::kAuto}};
constexpr Choice<LogLevel> kLogLevels[] = {
    {"trace", LogLevel::kTrace},     {"debug", LogLevel::kDebug},  {"info", LogLevel::kInfo},
    {"warning", LogLevel::kWarning}, {"warn", LogLevel::kWarning}, {"error", LogLevel::kError},
    {"fatal", LogLevel::kFatal}};
constexpr Choice<GpuOperations> kGpuOperations[] = {{"nccl", GpuOperations::kNccl},
                                                    {"mpi", GpuOperations::kStaging},
                                                    {"gloo", GpuOperations::kStaging},
                                                    {"auto", GpuOperations::kAuto},
                                                    {"", GpuOperations::kAuto}};
constexpr Choice<ControlChannelChoice> kControlChannels[] = {
    {"tcp", ControlChannelChoice::kTcp},
    {"mpi", ControlChannelChoice::kBackend},
    {"auto", ControlChannelChoice::kAuto},
    {"", ControlChannelChoice::kAuto}};

constexpr Choice<CrossTransport> kCrossTransports[] = {{"tcp", CrossTransport::kTcp},
                                                       {"backend", CrossTransport::kBackend},
                                                       {"auto", CrossTransport::kAuto},
                                                       {"", CrossTransport::kAuto}};

// One of a few names (any case) -> its value; `expected` lists them for the error.
template <typename T, size_t N>
Status ParseChoice(const char* suffix, const Choice<T> (&choices)[N], const char* expected, T* out,
                   bool* fixed = nullptr) {
  const char* v = GetEnv(suffix);
  if (!v) return Status::OK();
  const std::string s = Lower(v);
  for (const auto& c : choices) {
    if (s == c.name) {
      *out = c.value;
      if (fixed) *fixed = true;
      return Status::OK();
    }
  }
  return Status::Invalid("invalid " + Describe(suffix, v) + ": expected " + expected);
}

Status ParseBool(const char* suffix, bool* out, bool* fixed = nullptr) {
  return ParseChoice(suffix, kBools, "0/1/true/false", out, fixed);
}

Status ParseBackend(const char* suffix, BackendChoice* out) {
  return ParseChoice(suffix, kBackends, "mpi, gloo or auto", out);
}

void ParseString(const char* suffix, std::string* out) {
  if (const char* v = GetEnv(suffix)) *out = v;
}

// Tuning of the background loop, negotiation, stall checks, deadlines and autotune.
Status ParseLoop(Config* c) {
  int64_t cache = c->cache_capacity;
  HVD_RETURN_IF_ERROR(
      ParseInt("FUSION_THRESHOLD", 0, &c->fusion_threshold_bytes, &c->fusion_threshold_fixed));
  HVD_RETURN_IF_ERROR(ParseDouble("CYCLE_TIME", 0.0, &c->cycle_time_ms, &c->cycle_time_fixed));
  HVD_RETURN_IF_ERROR(ParseInt("ALLREDUCE_CHUNK_BYTES", 0, &c->allreduce_chunk_bytes,
                               &c->allreduce_chunk_bytes_fixed));
  HVD_RETURN_IF_ERROR(ParseInt("CACHE_CAPACITY", 0, &cache, &c->cache_capacity_fixed));
  HVD_RETURN_IF_ERROR(ParseInt("WAIT_SPIN_US", 0, &c->wait_spin_us));
  if (c->wait_spin_us > 1000000) return Status::Invalid("HVD_WAIT_SPIN_US is larger than 1000000");
  HVD_RETURN_IF_ERROR(ParseBool("WAIT_PROGRESS", &c->wait_progress));
  if (cache > (1 << 20)) return Status::Invalid("HVD_CACHE_CAPACITY is larger than 1048576");
  c->cache_capacity = static_cast<int>(cache);
  HVD_RETURN_IF_ERROR(ParseDouble("STALL_CHECK_TIME_SECONDS", 0.0, &c->stall_check_seconds));
  HVD_RETURN_IF_ERROR(ParseDouble("STALL_SHUTDOWN_TIME_SECONDS", 0.0, &c->stall_shutdown_seconds));
  HVD_RETURN_IF_ERROR(ParseBool("STALL_CHECK_DISABLE", &c->stall_check_disabled));
  HVD_RETURN_IF_ERROR(ParseDouble("OP_TIMEOUT_SECONDS", 0.0, &c->op_timeout_seconds));
  HVD_RETURN_IF_ERROR(ParseBool("MPI_ABORT_ON_TIMEOUT", &c->mpi_abort_on_timeout));
  HVD_RETURN_IF_ERROR(ParseBool("P2P", &c->p2p));
  HVD_RETURN_IF_ERROR(ParseBool("AUTOTUNE", &c->autotune));
  ParseString("AUTOTUNE_LOG", &c->autotune_log);
  return Status::OK();
}

// Backends (CPU and GPU), logging, timeline and elastic mode.
Status ParseBackends(Config* c) {
  HVD_RETURN_IF_ERROR(ParseBackend("CONTROLLER", &c->controller));
  HVD_RETURN_IF_ERROR(ParseBackend("CPU_OPERATIONS", &c->cpu_operations));
  HVD_RETURN_IF_ERROR(ParseDouble("GLOO_TIMEOUT_SECONDS", 0.001, &c->peer_timeout_seconds));
  ParseString("GLOO_IFACE", &c->listen_iface);
  ParseString("GLOO_HOSTNAME", &c->listen_hostname);
  HVD_RETURN_IF_ERROR(ParseBool("MPI_THREADS_DISABLE", &c->mpi_threads_disable));
  HVD_RETURN_IF_ERROR(
      ParseChoice("CONTROL_CHANNEL", kControlChannels, "auto, tcp or mpi", &c->control_channel));
  HVD_RETURN_IF_ERROR(ParseBool("HIERARCHICAL_ALLREDUCE", &c->hierarchical_allreduce,
                                &c->hierarchical_allreduce_fixed));
  HVD_RETURN_IF_ERROR(
      ParseInt("HIERARCHICAL_ALLREDUCE_MIN_BYTES", 0, &c->hierarchical_allreduce_min_bytes));
  HVD_RETURN_IF_ERROR(ParseChoice("HIERARCHICAL_CROSS", kCrossTransports, "auto, tcp or backend",
                                  &c->hierarchical_cross));
  HVD_RETURN_IF_ERROR(ParseBool("SHARED_MEMORY", &c->shared_memory));
  HVD_RETURN_IF_ERROR(ParseBool("SHARED_MEMORY_PEER_READS", &c->shared_memory_peer_reads));
  HVD_RETURN_IF_ERROR(ParseBool("SHARED_MEMORY_MPI_ALLREDUCE", &c->shared_memory_mpi_allreduce));
  HVD_RETURN_IF_ERROR(ParseBool("HIERARCHICAL_ALLGATHER", &c->hierarchical_allgather,
                                &c->hierarchical_allgather_fixed));
  HVD_RETURN_IF_ERROR(
      ParseChoice("GPU_OPERATIONS", kGpuOperations, "nccl, mpi, gloo or auto", &c->gpu_operations));
  HVD_RETURN_IF_ERROR(ParseDouble("GPU_TIMEOUT_SECONDS", 0.0, &c->gpu_timeout_seconds));
  HVD_RETURN_IF_ERROR(ParseChoice("LOG_LEVEL", kLogLevels,
                                  "trace, debug, info, warning, error or fatal", &c->log_level));
  HVD_RETURN_IF_ERROR(ParseBool("LOG_HIDE_TIME", &c->log_hide_time));
  ParseString("TIMELINE", &c->timeline_path);
  HVD_RETURN_IF_ERROR(ParseInt("FLIGHT_RECORDER_SIZE", 0, &c->flight_recorder_size));
  if (c->flight_recorder_size > (1 << 24)) {
    return Status::Invalid("HVD_FLIGHT_RECORDER_SIZE is larger than 16777216");
  }
  ParseString("FLIGHT_RECORDER_DIR", &c->flight_recorder_dir);
  HVD_RETURN_IF_ERROR(ParseBool("TIMELINE_MARK_CYCLES", &c->timeline_mark_cycles));
  HVD_RETURN_IF_ERROR(ParseBool("ELASTIC", &c->elastic));
  HVD_RETURN_IF_ERROR(ParseDouble("ELASTIC_LIVENESS_SECONDS", 0.0, &c->elastic_liveness_seconds));
  return ParseDouble("ELASTIC_TIMEOUT", 0.001, &c->elastic_timeout_seconds);
}

}  // namespace

Status Config::FromEnvironment(Config* out) {
  Config c;
  HVD_RETURN_IF_ERROR(ParseLoop(&c));
  HVD_RETURN_IF_ERROR(ParseBackends(&c));
  c.launch = LaunchEnv::FromEnvironment();
  *out = std::move(c);
  return Status::OK();
}

namespace {

int64_t L2CacheBytes() {
  int64_t l2 = 0;
#ifdef _SC_LEVEL2_CACHE_SIZE
  l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
  return l2 > 0 ? l2 : int64_t{1} << 20;  // unknown: a common 1 MiB
}

}  // namespace

int64_t HostLocalChunkBytes() {
  return std::clamp<int64_t>(L2CacheBytes() / 2, int64_t{256} << 10, int64_t{4} << 20);
}

int64_t SharedRoundBytes() {
  return std::clamp<int64_t>(L2CacheBytes() / 8, int64_t{64} << 10, int64_t{1} << 20);
}

int64_t StreamingStoreBytes() {
  return std::clamp<int64_t>(L2CacheBytes() * 16, int64_t{8} << 20, int64_t{64} << 20);
}

}  // namespace hvd
