#include "tools/hvdrun/tuning_flags.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace hvd {
namespace run {

namespace {

enum class Kind {
  kSwitch,     // no value; sets the variable to `fixed`
  kMegabytes,  // integer MB >= 0, exported in bytes
  kCount,      // integer in [0, 1048576]
  kNumber,     // number >= min_value (seconds, or milliseconds)
  kPath,       // non-empty text
  kLogLevel,   // trace, debug, info, warning (warn), error, fatal; any case
  kIgnored,    // accepted for horovodrun compatibility, sets nothing
};

struct TuningFlag {
  const char* flag;
  const char* metavar;   // shown in --help ("" for switches)
  const char* variable;  // "" for kIgnored
  Kind kind;
  const char* fixed;  // kSwitch: the value set
  double min_value;   // kNumber
  const char* help;
};

// Order = --help order. The variables are those core/config.cc reads.
const TuningFlag kFlags[] = {
    {"--fusion-threshold-mb", "MB", "HVD_FUSION_THRESHOLD", Kind::kMegabytes, "", 0,
     "Fusion buffer size in MiB: HVD_FUSION_THRESHOLD = MB * 1048576 bytes; 0 disables fusion."},
    {"--cycle-time-ms", "MS", "HVD_CYCLE_TIME", Kind::kNumber, "", 0,
     "Longest a burst of submissions is gathered before it is negotiated, in ms "
     "(HVD_CYCLE_TIME)."},
    {"--cache-capacity", "N", "HVD_CACHE_CAPACITY", Kind::kCount, "", 0,
     "Response cache slots, fixed (HVD_CACHE_CAPACITY; unset, 1024 growing to 16384 as "
     "needed); 0 turns the cache off."},
    {"--disable-cache", "", "", Kind::kIgnored, "", 0,
     "Accepted, sets nothing: horovodrun's flag re-runs its cached pre-launch checks, and "
     "hvdrun caches none (the response cache: --cache-capacity 0)."},
    {"--hierarchical-allreduce", "", "HVD_HIERARCHICAL_ALLREDUCE", Kind::kSwitch, "1", 0,
     "HVD_HIERARCHICAL_ALLREDUCE=1: also where it is not automatic (it is across hosts "
     "on Gloo, and on MPI with MPI_THREAD_MULTIPLE; docs/scaling.md)."},
    {"--no-hierarchical-allreduce", "", "HVD_HIERARCHICAL_ALLREDUCE", Kind::kSwitch, "0", 0,
     "HVD_HIERARCHICAL_ALLREDUCE=0."},
    {"--hierarchical-allgather", "", "HVD_HIERARCHICAL_ALLGATHER", Kind::kSwitch, "1", 0,
     "HVD_HIERARCHICAL_ALLGATHER=1 (parsed; no effect yet)."},
    {"--no-hierarchical-allgather", "", "HVD_HIERARCHICAL_ALLGATHER", Kind::kSwitch, "0", 0,
     "HVD_HIERARCHICAL_ALLGATHER=0."},
    {"--autotune", "", "HVD_AUTOTUNE", Kind::kSwitch, "1", 0,
     "Tune fusion threshold and cycle time while the job runs (HVD_AUTOTUNE=1)."},
    {"--no-autotune", "", "HVD_AUTOTUNE", Kind::kSwitch, "0", 0, "HVD_AUTOTUNE=0."},
    {"--autotune-log-file", "FILE", "HVD_AUTOTUNE_LOG", Kind::kPath, "", 0,
     "CSV of autotune samples, written by rank 0 (HVD_AUTOTUNE_LOG)."},
    {"--timeline-filename", "FILE", "HVD_TIMELINE", Kind::kPath, "", 0,
     "Chrome-trace timeline written by rank 0 (HVD_TIMELINE)."},
    {"--timeline-mark-cycles", "", "HVD_TIMELINE_MARK_CYCLES", Kind::kSwitch, "1", 0,
     "Mark negotiation cycles in the timeline (HVD_TIMELINE_MARK_CYCLES=1)."},
    {"--no-timeline-mark-cycles", "", "HVD_TIMELINE_MARK_CYCLES", Kind::kSwitch, "0", 0,
     "HVD_TIMELINE_MARK_CYCLES=0."},
    {"--no-stall-check", "", "HVD_STALL_CHECK_DISABLE", Kind::kSwitch, "1", 0,
     "Turn the stall inspector off (HVD_STALL_CHECK_DISABLE=1)."},
    {"--stall-check", "", "HVD_STALL_CHECK_DISABLE", Kind::kSwitch, "0", 0,
     "HVD_STALL_CHECK_DISABLE=0."},
    {"--stall-check-warning-time-seconds", "S", "HVD_STALL_CHECK_TIME_SECONDS", Kind::kNumber, "",
     0,
     "Warn about a tensor some ranks have not submitted after S seconds "
     "(HVD_STALL_CHECK_TIME_SECONDS; default 60)."},
    {"--stall-check-shutdown-time-seconds", "S", "HVD_STALL_SHUTDOWN_TIME_SECONDS", Kind::kNumber,
     "", 0,
     "Fail such a tensor with a timeout after S seconds (HVD_STALL_SHUTDOWN_TIME_SECONDS; "
     "default 0: never)."},
    {"--mpi-threads-disable", "", "HVD_MPI_THREADS_DISABLE", Kind::kSwitch, "1", 0,
     "Ask MPI for MPI_THREAD_SERIALIZED (HVD_MPI_THREADS_DISABLE=1)."},
    {"--no-mpi-threads-disable", "", "HVD_MPI_THREADS_DISABLE", Kind::kSwitch, "0", 0,
     "HVD_MPI_THREADS_DISABLE=0."},
    {"--tcp", "", "NCCL_IB_DISABLE", Kind::kSwitch, "1", 0,
     "NCCL over TCP only, no InfiniBand (NCCL_IB_DISABLE=1)."},
    {"--gloo-timeout-seconds", "S", "HVD_GLOO_TIMEOUT_SECONDS", Kind::kNumber, "", 0.001,
     "Bound on every Gloo wait (HVD_GLOO_TIMEOUT_SECONDS; default 30)."},
    {"--log-level", "LEVEL", "HVD_LOG_LEVEL", Kind::kLogLevel, "", 0,
     "trace, debug, info, warning, error or fatal (HVD_LOG_LEVEL; default warning)."},
    {"--log-without-timestamp", "", "HVD_LOG_HIDE_TIME", Kind::kSwitch, "1", 0,
     "hvd's log lines without time stamps (HVD_LOG_HIDE_TIME=1); also --log-hide-timestamp."},
    {"--log-hide-timestamp", "", "HVD_LOG_HIDE_TIME", Kind::kSwitch, "1", 0, nullptr},
    {"--log-with-timestamp", "", "HVD_LOG_HIDE_TIME", Kind::kSwitch, "0", 0,
     "HVD_LOG_HIDE_TIME=0; also --no-log-hide-timestamp."},
    {"--no-log-hide-timestamp", "", "HVD_LOG_HIDE_TIME", Kind::kSwitch, "0", 0, nullptr},
};

Status Invalid(const std::string& flag, const std::string& expected, const std::string& got) {
  return Status::Invalid(flag + " expects " + expected + ", got '" + got + "'");
}

// The value to export for `text`, or an error naming the flag.
Status Convert(const TuningFlag& f, const std::string& text, std::string* out) {
  const std::string flag = f.flag;
  switch (f.kind) {
    case Kind::kMegabytes:
    case Kind::kCount: {
      const long long max = f.kind == Kind::kCount ? (1LL << 20) : (1LL << 30);
      char* end = nullptr;
      errno = 0;
      long long v = std::strtoll(text.c_str(), &end, 10);
      if (text.empty() || *end != '\0' || errno != 0 || v < 0 || v > max) {
        return Invalid(flag, "an integer in [0, " + std::to_string(max) + "]", text);
      }
      *out = std::to_string(f.kind == Kind::kMegabytes ? v * 1048576LL : v);
      return Status::OK();
    }
    case Kind::kNumber: {
      char* end = nullptr;
      double v = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0' || !std::isfinite(v) || v < f.min_value) {
        return Invalid(flag, f.min_value > 0 ? "a positive number" : "a number >= 0", text);
      }
      *out = text;
      return Status::OK();
    }
    case Kind::kPath:
      if (text.empty()) return Invalid(flag, "a file name", text);
      *out = text;
      return Status::OK();
    case Kind::kLogLevel: {
      std::string level;
      for (char c : text) level += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (level == "warn") level = "warning";
      for (const char* ok : {"trace", "debug", "info", "warning", "error", "fatal"}) {
        if (level == ok) {
          *out = level;
          return Status::OK();
        }
      }
      return Invalid(flag, "trace, debug, info, warning, error or fatal", text);
    }
    case Kind::kSwitch:
    case Kind::kIgnored:
      break;
  }
  *out = f.fixed;
  return Status::OK();
}

}  // namespace

Status ParseTuningFlag(const std::string& flag, const std::function<Status(std::string*)>& take,
                       bool* matched, EnvList* env) {
  *matched = false;
  for (const auto& f : kFlags) {
    if (flag != f.flag) continue;
    *matched = true;
    std::string text, value;
    const bool takes_value = f.kind != Kind::kSwitch && f.kind != Kind::kIgnored;
    if (takes_value) HVD_RETURN_IF_ERROR(take(&text));
    HVD_RETURN_IF_ERROR(Convert(f, text, &value));
    if (f.kind == Kind::kIgnored) return Status::OK();
    for (auto& kv : *env) {
      if (kv.first == f.variable) {  // a later flag for the same variable wins
        kv.second = value;
        return Status::OK();
      }
    }
    env->emplace_back(f.variable, value);
    return Status::OK();
  }
  return Status::OK();
}

std::string TuningFlagsHelp() {
  // The layout of the rest of --help: text from column 28, lines up to 80.
  constexpr size_t kColumn = 28, kWidth = 80;
  std::string out;
  for (const auto& f : kFlags) {
    if (f.help == nullptr) continue;
    std::string line = std::string("  ") + f.flag + (*f.metavar ? " " : "") + f.metavar;
    if (line.size() + 1 > kColumn) {
      out += line + "\n";
      line.clear();
    }
    line.resize(kColumn, ' ');
    size_t start = 0;
    const std::string help = f.help;
    while (start < help.size()) {
      size_t end = help.find(' ', start);
      if (end == std::string::npos) end = help.size();
      const std::string word = help.substr(start, end - start);
      if (line.size() > kColumn && line.size() + 1 + word.size() > kWidth) {
        out += line + "\n";
        line.assign(kColumn, ' ');
      }
      line += (line.size() > kColumn ? " " : "") + word;
      start = end + 1;
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace run
}  // namespace hvd
