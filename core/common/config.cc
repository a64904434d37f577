#include "core/common/config.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace hvd {

const char* GetEnv(const char* suffix) {
  std::string hvd_name = std::string("HVD_") + suffix;
  if (const char* v = std::getenv(hvd_name.c_str())) return v;
  std::string horovod_name = std::string("HOROVOD_") + suffix;
  return std::getenv(horovod_name.c_str());
}

namespace {

std::string Describe(const char* suffix, const char* value) {
  return std::string("HVD_") + suffix + "='" + value + "'";
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

Status ParseBool(const char* suffix, bool* out, bool* fixed = nullptr) {
  const char* v = GetEnv(suffix);
  if (!v) return Status::OK();
  std::string s(v);
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s == "1" || s == "true" || s == "yes" || s == "on") {
    *out = true;
  } else if (s == "0" || s == "false" || s == "no" || s == "off" || s.empty()) {
    *out = false;
  } else {
    return Status::Invalid("invalid " + Describe(suffix, v) + ": expected 0/1/true/false");
  }
  if (fixed) *fixed = true;
  return Status::OK();
}

Status ParseBackend(const char* suffix, BackendChoice* out) {
  const char* v = GetEnv(suffix);
  if (!v) return Status::OK();
  std::string s(v);
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s == "mpi") {
    *out = BackendChoice::kMpi;
  } else if (s == "gloo") {
    *out = BackendChoice::kGloo;
  } else if (s == "auto" || s.empty()) {
    *out = BackendChoice::kAuto;
  } else {
    return Status::Invalid("invalid " + Describe(suffix, v) + ": expected mpi, gloo or auto");
  }
  return Status::OK();
}

Status ParseLogLevel(LogLevel* out) {
  const char* v = GetEnv("LOG_LEVEL");
  if (!v) return Status::OK();
  static const char* const kNames[] = {"trace", "debug", "info", "warning", "error", "fatal"};
  std::string s(v);
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s == "warn") s = "warning";
  for (int i = 0; i < 6; ++i) {
    if (s == kNames[i]) {
      *out = static_cast<LogLevel>(i);
      return Status::OK();
    }
  }
  return Status::Invalid("invalid " + Describe("LOG_LEVEL", v) +
                         ": expected trace, debug, info, warning, error or fatal");
}

}  // namespace

Status Config::FromEnvironment(Config* out) {
  Config c;
  int64_t cache = c.cache_capacity;
  HVD_RETURN_IF_ERROR(
      ParseInt("FUSION_THRESHOLD", 0, &c.fusion_threshold_bytes, &c.fusion_threshold_fixed));
  HVD_RETURN_IF_ERROR(ParseDouble("CYCLE_TIME", 0.0, &c.cycle_time_ms, &c.cycle_time_fixed));
  HVD_RETURN_IF_ERROR(ParseInt("ALLREDUCE_CHUNK_BYTES", 0, &c.allreduce_chunk_bytes));
  HVD_RETURN_IF_ERROR(ParseInt("CACHE_CAPACITY", 0, &cache, &c.cache_capacity_fixed));
  if (cache > (1 << 20)) return Status::Invalid("HVD_CACHE_CAPACITY is larger than 1048576");
  c.cache_capacity = static_cast<int>(cache);
  HVD_RETURN_IF_ERROR(ParseDouble("STALL_CHECK_TIME_SECONDS", 0.0, &c.stall_check_seconds));
  HVD_RETURN_IF_ERROR(ParseDouble("STALL_SHUTDOWN_TIME_SECONDS", 0.0, &c.stall_shutdown_seconds));
  HVD_RETURN_IF_ERROR(ParseBool("STALL_CHECK_DISABLE", &c.stall_check_disabled));
  HVD_RETURN_IF_ERROR(ParseDouble("GLOO_TIMEOUT_SECONDS", 0.001, &c.gloo_timeout_seconds));
  HVD_RETURN_IF_ERROR(ParseLogLevel(&c.log_level));
  HVD_RETURN_IF_ERROR(ParseBool("LOG_HIDE_TIME", &c.log_hide_time));
  HVD_RETURN_IF_ERROR(ParseBackend("CONTROLLER", &c.controller));
  HVD_RETURN_IF_ERROR(ParseBackend("CPU_OPERATIONS", &c.cpu_operations));
  if (const char* t = GetEnv("TIMELINE")) c.timeline_path = t;
  HVD_RETURN_IF_ERROR(ParseBool("TIMELINE_MARK_CYCLES", &c.timeline_mark_cycles));
  HVD_RETURN_IF_ERROR(ParseBool("AUTOTUNE", &c.autotune));
  if (const char* t = GetEnv("AUTOTUNE_LOG")) c.autotune_log = t;
  HVD_RETURN_IF_ERROR(ParseBool("HIERARCHICAL_ALLREDUCE", &c.hierarchical_allreduce,
                                &c.hierarchical_allreduce_fixed));
  HVD_RETURN_IF_ERROR(ParseBool("HIERARCHICAL_ALLGATHER", &c.hierarchical_allgather,
                                &c.hierarchical_allgather_fixed));
  HVD_RETURN_IF_ERROR(ParseBool("MPI_THREADS_DISABLE", &c.mpi_threads_disable));
  HVD_RETURN_IF_ERROR(ParseBool("ELASTIC", &c.elastic));
  *out = c;
  return Status::OK();
}

}  // namespace hvd
