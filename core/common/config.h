// Configuration read once at init from HVD_* variables (HOROVOD_* accepted
// as aliases, HVD_* wins). Values set in the environment are marked "fixed"
// so autotune leaves them alone.
#pragma once

#include <cstdint>
#include <string>

#include "core/common/status.h"

namespace hvd {

enum class LogLevel : int { kTrace = 0, kDebug, kInfo, kWarning, kError, kFatal };

enum class BackendChoice { kAuto, kMpi, kGloo };

struct Config {
  int64_t fusion_threshold_bytes = 128LL * 1024 * 1024;  // 0 disables fusion
  double cycle_time_ms = 1.0;
  // Allreduces are split into calls of at most this many bytes (0: never),
  // and tensors of a quarter of it or more run alone instead of being
  // copied into the fusion buffer. See docs/tuning.md.
  int64_t allreduce_chunk_bytes = 4LL * 1024 * 1024;
  int cache_capacity = 1024;  // 0 disables the response cache
  double stall_check_seconds = 60.0;
  double stall_shutdown_seconds = 0.0;  // 0 = never
  bool stall_check_disabled = false;
  double gloo_timeout_seconds = 30.0;
  LogLevel log_level = LogLevel::kWarning;
  bool log_hide_time = false;
  BackendChoice controller = BackendChoice::kAuto;
  BackendChoice cpu_operations = BackendChoice::kAuto;
  std::string timeline_path;  // empty = off
  bool timeline_mark_cycles = false;
  bool autotune = false;
  std::string autotune_log;
  bool hierarchical_allreduce = false;
  bool hierarchical_allgather = false;
  bool mpi_threads_disable = false;
  bool elastic = false;

  // Which fields came from the environment (autotune must not touch them).
  bool fusion_threshold_fixed = false;
  bool cycle_time_fixed = false;
  bool cache_capacity_fixed = false;
  bool hierarchical_allreduce_fixed = false;
  bool hierarchical_allgather_fixed = false;

  // Reads the process environment. Invalid values are an error naming the
  // variable and the value.
  static Status FromEnvironment(Config* out);
};

// Looks up HVD_<suffix>, then HOROVOD_<suffix>; nullptr if neither is set.
const char* GetEnv(const char* suffix);

}  // namespace hvd
