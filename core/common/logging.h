// Leveled logging to stderr with a rank (and optional time) prefix:
//   [2026-11-22 10:00:00.123 rank 1] WARNING: message
// Usage: HVD_LOG(kWarning) << "text";  Cheap when the level is filtered out.
#pragma once

#include <sstream>

#include "core/common/config.h"

namespace hvd {

void SetLogConfig(LogLevel level, bool hide_time);
void SetLogRank(int rank);
bool LogEnabled(LogLevel level);

class LogMessage {
 public:
  explicit LogMessage(LogLevel level) : level_(level) {}
  ~LogMessage();
  LogMessage(const LogMessage&) = delete;
  LogMessage& operator=(const LogMessage&) = delete;
  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};

}  // namespace hvd

#define HVD_LOG(level)                              \
  if (!::hvd::LogEnabled(::hvd::LogLevel::level)) { \
  } else                                            \
    ::hvd::LogMessage(::hvd::LogLevel::level).stream()
